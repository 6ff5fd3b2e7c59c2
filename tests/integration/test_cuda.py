#!/usr/bin/env python3
"""CUDA tensors and the nccl backend through the real binary.

usage: test_cuda.py DISTLAB_EXE

Without a GPU it checks the failures: every rank says in one line that
there is no CUDA device, and nothing hangs. With a GPU it runs np=1 on
NCCL and np=4 on the builtin backend with CUDA tensors (ranks sharing one
GPU, staged through host memory) and checks the tensors, printed as torch
prints GPU tensors. Exits 77 (skipped) when the binary has no CUDA.
"""

import os
import re
import subprocess
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures, lines_of  # noqa: E402

EXE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/cli/distlab"


def run(argv, timeout=120, stdin=None):
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=stdin)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


rc, out, _, _ = run([EXE, "backends", "--json"])
if rc != 0 or re.search(r'"nccl":\s*\{\s*"built":\s*false', out):
    print("skipped: this distlab was built without CUDA and NCCL")
    sys.exit(77)


def gpu_count():
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for l in p.stdout.splitlines() if l.startswith("GPU "))


gpus = gpu_count()
if gpus == 0:
    print("no GPU here: checking the failures only")
    for argv in [[EXE, "run", "all_reduce", "--np", "2", "--backend", "nccl", "--device", "cuda",
                  "--timeout", "10"],
                 [EXE, "run", "all_reduce", "--np", "4", "--backend", "nccl"],
                 [EXE, "run", "all_reduce", "--np", "2", "--device", "cuda", "--timeout", "10"]]:
        rc, out, err, secs = run(argv)
        lines = err.strip().splitlines()
        check("%s: exit 1" % " ".join(argv[1:]), rc == 1, out + err)
        check("... one line, before any rank starts, naming the problem",
              len(lines) == 1 and "all_reduce on cuda tensors needs a CUDA GPU, and this "
              "machine has none" in lines[0], err)
        check("... within 10 s (%.1f s)" % secs, secs < 10)
    # Every spelling, a literal tensor's too (tensor([...]) once skipped the
    # move to the GPU and gave a host tensor).
    for line in ["t = ones(2, device=cuda)", "t = torch.tensor([1., 2.], device='cuda')",
                 "t = tensor(2, device=cuda)", "t = zeros(2, device=f'cuda:{rank}')",
                 "t = ones(2).cuda()", "t = ones(2).to('cuda')", "t = ones(2).to(rank)",
                 "torch.cuda.set_device(rank)"]:
        rc, out, err, _ = run([EXE, "shell", "--np", "2", "-c", line])
        check("shell: %s without a GPU fails the line, naming it" % line,
              rc == 1 and "device=cuda: no CUDA device" in err and "line 1 failed" in err, err)
    rc, out, err, _ = run([EXE, "shell", "--np", "1", "--backend", "nccl", "-c", "print(1)"])
    check("shell on nccl without a GPU: one line saying why the rank could not start, the "
          "script not blamed", rc == 1 and err.count("\n") == 1 and "no CUDA device" in err
          and "line 1 failed" not in err, err)
    rc, out, err, _ = run([EXE, "run", "all_reduce", "--backend", "nccl", "--device", "cpu"])
    check("nccl on cpu tensors, asked for, is refused by the capability check",
          rc == 2 and "does not support all_reduce on cpu tensors" in err, err)
else:
    print("%d GPU(s): running on them" % gpus)
    rc, out, err, _ = run([EXE, "run", "all_reduce", "--np", "1", "--backend", "nccl",
                           "--device", "cuda", "--dtype", "float32"])
    check("nccl np=1 all_reduce", rc == 0 and out.startswith(
        "all_reduce  np=1  backend=nccl  call=ncclAllReduce"), out + err)
    check("... prints device='cuda:0' as torch does",
          "tensor([1., 2.], device='cuda:0')" in out, out)
    for prim in ["broadcast", "all_gather", "reduce_scatter", "all_to_all", "barrier"]:
        rc, out, err, _ = run([EXE, "run", prim, "--np", "1", "--backend", "nccl",
                               "--device", "cuda"])
        check("nccl np=1 %s" % prim, rc == 0, out + err)
    rc, out, err, _ = run([EXE, "run", "all_reduce", "--np", "4", "--device", "cuda"])
    check("builtin np=4 on CUDA tensors (sharing the GPUs)", rc == 0 and out.count(
        "tensor([16, 20], device='cuda:") == 4, out + err)
    if gpus >= 2:
        rc, out, err, _ = run([EXE, "run", "all_reduce", "--np", str(gpus), "--backend", "nccl",
                               "--device", "cuda"])
        check("nccl np=%d all_reduce" % gpus, rc == 0, out + err)
    rc, out, err, _ = run([EXE, "run", "all_reduce", "--np", "1", "--backend", "nccl"])
    check("--backend nccl puts the tensors on the GPU by default, as torch's examples",
          rc == 0 and "tensor([1, 2], device='cuda:0')" in out, out + err)
    rc, out, err, _ = run([EXE, "run", "all_reduce", "--np", str(gpus + 1), "--backend", "nccl",
                           "--timeout", "20"])
    check("more ranks than GPUs: one line with the count, before any rank starts",
          rc == 1 and err.strip().count("\n") == 0 and
          "--np %d needs %d GPUs, and this machine has %d" % (gpus + 1, gpus + 1, gpus) in err,
          err)
    rc, out, err, _ = run([EXE, "run", "all_reduce", "--np", "1", "--backend", "nccl",
                           "--device", "cuda", "--op", "band"])
    check("bitwise ops are refused on nccl", rc != 0 and "band" in err, err)

    # The shell's tensors on the GPU: every spelling is moved there (a
    # literal tensor once stayed on the host), a collective runs on them,
    # and arithmetic, indexing and reductions of them stay on their GPU.
    for line in ["t = ones(2, device=cuda)", "t = torch.tensor([1., 1.], device='cuda')",
                 "t = tensor([1, 1.], device=cuda)", "t = zeros(2, device='cuda:0') + 1"]:
        rc, out, err, _ = run([EXE, "shell", "--np", "2", "--timeout", "20", "-c",
                               line + "; dist.all_reduce(t); print(t * 2)"])
        last = lines_of(out)[-2:]
        check("shell on the builtin backend: %s, all_reduce, t * 2" % line,
              rc == 0 and len(last) == 2 and all(
                  l.startswith("rank %d: " % r) and l.endswith("tensor([4., 4.], device='cuda:0')")
                  for r, l in enumerate(last)), out + err)
    rc, out, err, _ = run([EXE, "shell", "--np", "1", "--backend", "nccl", "--timeout", "20",
                           "-c", "t = torch.arange(4., device='cuda') + rank; "
                           "dist.all_reduce(t, op=dist.ReduceOp.MAX); "
                           "print(t[1:], t.sum())"])
    check("shell on nccl: a cuda tensor reduced, sliced and summed, printed as torch",
          rc == 0 and lines_of(out)[-1:] == [
              "rank 0: tensor([1., 2., 3.], device='cuda:0') tensor(6., device='cuda:0')"],
          out + err)
    rc, out, err, _ = run([EXE, "shell", "--np", "1", "--backend", "nccl", "--timeout", "20",
                           "-c", "t = ones(2); dist.all_reduce(t)"])
    check("shell on nccl: a cpu tensor is refused in one line, as torch refuses it",
          rc == 1 and "cpu" in err and "line 1 failed" in err, out + err)
    # A tensor's device and its copies: .cuda(), .to(dtype) on the GPU,
    # .cpu(), .tolist() and .item() read back from it.
    rc, out, err, _ = run([EXE, "shell", "--np", "1", "--timeout", "20", "-c",
                           "t = arange(3.).cuda(); u = t.to(torch.int32); "
                           "print(t, t.device, t.is_cuda, u, t.cpu(), t.tolist(), t.sum().item())"])
    check("shell: t.cuda(), t.device, t.to(dtype) on the GPU, t.cpu(), t.tolist()",
          rc == 0 and lines_of(out)[-1:] == [
              "rank 0: tensor([0., 1., 2.], device='cuda:0') cuda:0 True "
              "tensor([0, 1, 2], device='cuda:0', dtype=torch.int32) tensor([0., 1., 2.]) "
              "[0.0, 1.0, 2.0] 3.0"], out + err)
    # torch.distributed's own example for NCCL, as written.
    rc, out, err, _ = run([EXE, "shell", "--np", "1", "--backend", "nccl", "--timeout", "20",
                           "-c", "torch.cuda.set_device(rank)\n"
                           "device = torch.device(f'cuda:{rank}')\n"
                           "tensor = torch.arange(2, dtype=torch.int64, device=device) + 1 + 2 * rank\n"
                           "dist.all_reduce(tensor, op=dist.ReduceOp.SUM)\n"
                           "print(tensor, torch.cuda.current_device(), torch.cuda.device_count(), "
                           "torch.cuda.is_available())"])
    check("shell on nccl: torch.device, torch.cuda.set_device and the others",
          rc == 0 and lines_of(out)[-1:] == [
              "rank 0: tensor([1, 2], device='cuda:0') 0 %d True" % gpus], out + err)
    rc, out, err, _ = run([EXE, "shell", "--np", "1", "--timeout", "20", "-c",
                           "t = ones(2, device=cuda) + zeros(2)"])
    check("shell: a cuda tensor and a cpu one do not mix, as in torch",
          rc == 1 and "expected all tensors on the same device, but found cuda:0 and cpu" in err,
          out + err)

    # Writing into tensors on the GPU (done on a host copy whose bytes go
    # back into the tensor's own memory), mixed devices as torch mixes
    # them, and torch.distributed's one-tensor collectives on cuda tensors.
    script = "\n".join([
        "set echo off",
        "t = torch.zeros(4, device='cuda'); t += 1; t[0] = 5; t[1:3] *= 2; t.add_(rank)",
        "print(t)",
        "t = torch.arange(2, device='cuda') + 2 * rank",
        "out = torch.empty(4, dtype=torch.int64, device='cuda')",
        "dist.all_gather_into_tensor(out, t); print(1, out)",
        "t *= 2; w = dist.all_gather_into_tensor(out, t, async_op=True); w.wait(); print(2, out)",
        "t = torch.ones(4, device='cuda') * (rank + 1); out = torch.empty(2, device='cuda')",
        "dist.reduce_scatter_tensor(out, t); print(3, out)",
        "inp = torch.arange(3, device='cuda') + 10 * rank; ins = [1, 2] if rank == 0 else [2, 1]",
        "out = torch.empty(3, dtype=torch.int64, device='cuda')",
        "dist.all_to_all_single(out, inp, ins, ins); print(4, out)",
        "u = torch.ones(4, device='cuda'); t = torch.zeros(4, device='cuda'); t += u",
        "t.copy_(torch.arange(4.)); t[0:2] = u[0:2] * 7; print(5, t)",
        "l = [torch.ones(2, device='cuda') for _ in range(2)]; l[0] += 1; l[1].mul_(3)",
        "print(6, l)",
        "t.zero_(); t[1:].fill_(3); print(7, t, t.sum())",
        "c = torch.zeros(2); c[0:2] = torch.ones(2, device='cuda') * 4; print(8, c)",
    ])
    rc, out, err, _ = run([EXE, "shell", "--np", "2", "--timeout", "30", "-c", script])
    want = {
        0: ["tensor([5., 2., 2., 1.], device='cuda:0')", "1 tensor([0, 1, 2, 3], device='cuda:0')",
            "2 tensor([0, 2, 4, 6], device='cuda:0')", "3 tensor([3., 3.], device='cuda:0')",
            "4 tensor([ 0, 10, 11], device='cuda:0')",
            "5 tensor([7., 7., 2., 3.], device='cuda:0')",
            "6 [tensor([2., 2.], device='cuda:0'), tensor([3., 3.], device='cuda:0')]",
            "7 tensor([0., 3., 3., 3.], device='cuda:0') tensor(9., device='cuda:0')",
            "8 tensor([4., 4.])"],
    }
    want[1] = list(want[0])
    want[1][0] = "tensor([6., 3., 3., 2.], device='cuda:0')"
    want[1][4] = "4 tensor([ 1,  2, 12], device='cuda:0')"
    for r in (0, 1):
        # what the prints printed (a collective's own report and the
        # handle's "w: done" left out)
        got = [l.split(": ", 1)[1] for l in lines_of(out) if l.startswith("rank %d: " % r)
               and l.split(": ", 1)[1][:4] not in ("out ", "w: d")]
        got = [g.split(" = ", 1)[1] if g.startswith("t = ") else g for g in got]
        for i, w in enumerate(want[r]):
            check("shell, cuda tensors, rank %d: %s" % (r, w), i < len(got) and got[i] == w,
                  "\n".join(got) + err)
    check("... the script ran to its end", rc == 0, out + err)
    rc, out, err, _ = run([EXE, "shell", "--np", "1", "--timeout", "20", "-c",
                           "t = torch.zeros(2, device='cuda'); t += torch.ones(2)"])
    check("shell: cuda += a cpu tensor is refused, as in torch",
          rc == 1 and "expected all tensors on the same device, but found cuda:0 and cpu" in err,
          out + err)
    rc, out, err, _ = run([EXE, "shell", "--np", "1", "--backend", "nccl", "--timeout", "20",
                           "-c", "dist.init_process_group('nccl')\n"
                           "t = torch.arange(2, device='cuda'); t += 1\n"
                           "out = torch.empty(2, dtype=torch.int64, device='cuda')\n"
                           "w = dist.all_gather_into_tensor(out, t, async_op=True); w.wait()\n"
                           "print(dist.get_backend(), dist.is_initialized(), out)"])
    check("shell on nccl: init_process_group('nccl'), t += 1, all_gather_into_tensor async",
          rc == 0 and lines_of(out)[-1:] == [
              "rank 0: nccl True tensor([1, 2], device='cuda:0')"], out + err)

    # The shell's later language on cuda tensors: a Python float cast to
    # the tensor's dtype first, a format spec on a 0-dim cuda tensor, and
    # for i, x in enumerate over cuda tensors.
    rc, out, err, _ = run([EXE, "shell", "--np", "1", "--timeout", "20", "-c",
                           "set echo off\nt = torch.tensor([0.1, 0.2], device='cuda')\n"
                           "l = [t * k for k in range(2)]\nfor i, x in enumerate(l):\n"
                           "    print(i, x == 0.1, f'{x.sum():.2f}')"])
    check("shell: t == 0.1, f'{x.sum():.2f}' and enumerate on cuda tensors",
          rc == 0 and lines_of(out) == [
              "rank 0: 0 tensor([False, False], device='cuda:0') 0.00",
              "rank 0: 1 tensor([ True, False], device='cuda:0') 0.30"], out + err)

print("%d checks failed" % len(failures) if failures else "all checks passed")
sys.exit(1 if failures else 0)
