#!/usr/bin/env python3
"""The mpi backend end to end: distlab starting its ranks under mpirun (run,
bench, shell), a rank killed under mpirun, step mode at whole-collective
granularity, and a user's own `mpirun -np N distlab rank PRIMITIVE`.

usage: test_mpi.py DISTLAB_EXE

Exits 77 (skipped) when mpirun is missing or the binary has no mpi backend.
"""

import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlcheck as dc  # noqa: E402
from dlcheck import check, failures  # noqa: E402

EXE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/cli/distlab"


# Every process this test starts carries this mark in its environment, so
# that leftovers are told apart from other tests' processes running beside.
MARK = "DISTLAB_TEST_MPI_MARK=%d-%d" % (os.getpid(), time.time_ns())


def run(argv, timeout=120, env=None, stdin=None):
    e = dict(os.environ)
    e.update(env or {})
    name, _, value = MARK.partition("=")
    e[name] = value
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=e,
                       input=stdin)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def body(out):
    """The printed tensors, without the header line (which names the backend)."""
    return out.split("\n", 1)[1] if "\n" in out else ""


def rank_processes():
    """Processes this test started (ranks, mpirun, controllers) still alive."""
    return dc.marked_processes(MARK)


if shutil.which("mpirun") is None:
    print("skipped: mpirun (openmpi-bin) is not installed")
    sys.exit(77)
rc, out, _, _ = run([EXE, "backends", "--json"])
if rc != 0 or '"mpi"' not in out or re.search(r'"mpi":\s*\{\s*"built":\s*false', out):
    print("skipped: this distlab has no mpi backend")
    sys.exit(77)

before = set(rank_processes())

# ---- distlab run --backend mpi: the ranks start under mpirun ----
rc, out, err, secs = run([EXE, "run", "all_reduce", "--np", "4", "--backend", "mpi"])
lines = out.splitlines()
check("run all_reduce --np 4 --backend mpi succeeds", rc == 0, out + err)
check("the header names the backend and MPI's call",
      bool(lines) and lines[0] == "all_reduce  np=4  backend=mpi  call=MPI_Allreduce  "
      "dtype=int64  count=2  op=sum", lines[:1])
check("every rank ends with tensor([16, 20]), as in torch's example",
      sum(1 for l in lines if l.endswith("tensor([16, 20])")) == 4, out)
check("nothing on stderr", err.strip() == "", err)

for prim, extra in [("broadcast", ["--root", "2"]), ("all_to_all", ["--count", "3"]),
                    ("reduce_scatter", ["--op", "max", "--dtype", "float32"]),
                    ("gather", ["--root", "1", "--dtype", "bfloat16"]),
                    ("send", ["--root", "1"])]:
    argv = [EXE, "run", prim, "--np", "3"] + extra
    rc1, o1, e1, _ = run(argv + ["--backend", "mpi"])
    rc2, o2, e2, _ = run(argv)
    check("%s %s: mpi prints what builtin prints" % (prim, " ".join(extra)),
          rc1 == 0 and rc2 == 0 and body(o1) == body(o2), "mpi:\n%s%s\nbuiltin:\n%s%s"
          % (o1, e1, o2, e2))

# ---- refusals, one line each ----
for argv, word in [
        ([EXE, "run", "all_reduce", "--backend", "mpi", "--device", "cuda"], "does not support"),
        ([EXE, "run", "all_reduce", "--hostfile", "/etc/hostname"], "--backend mpi"),
        ([EXE, "run", "all_reduce", "--backend", "mpi", "--hostfile", "/nonexistent/hosts"],
         "/nonexistent/hosts"),
        ([EXE, "run", "all_reduce", "--backend", "mpi", "--algo", "ring"], "--algo"),
        ([EXE, "run", "all_reduce", "--backend", "mpi", "--transport", "tcp"], "--transport"),
        ([EXE, "shell", "--backend", "mpi", "--listen", "0"], "--listen"),
        ([EXE, "rank", "all_reduce"], "mpirun")]:
    rc, out, err, _ = run(argv)
    check("refused: %s" % " ".join(argv[1:]),
          rc == 2 and len(err.strip().splitlines()) == 1 and word in err and out == "",
          "rc %s\n%s%s" % (rc, out, err))

# ---- --host passes through to mpirun (this host, by name) ----
host = os.uname().nodename
rc, out, err, _ = run([EXE, "run", "all_gather", "--np", "2", "--backend", "mpi",
                       "--host", "%s:2" % host])
check("--host %s:2 runs all_gather" % host,
      rc == 0 and out.count("= [tensor([1, 2]), tensor([3, 4])]") == 2, out + err)

# ---- bench through the same harness ----
rc, out, err, _ = run([EXE, "bench", "all_reduce", "--np", "2", "--backend", "mpi", "-b", "8",
                       "-e", "64K", "-f", "4", "-n", "5", "-w", "1"])
rows = [l.split() for l in out.splitlines() if l.strip() and not l.startswith("#")]
check("bench --backend mpi: the header names the backend",
      rc == 0 and "backend mpi" in out.splitlines()[0], out + err)
check("bench --backend mpi: 7 rows, no wrong values, MPI's call in the algo column",
      len(rows) == 7 and all(r[8] == "0" and r[9] == "MPI_Allreduce" for r in rows), out)
check("bench --backend mpi: Out of bounds values : 0 OK",
      "# Out of bounds values : 0 OK" in out, out)

# ---- a rank killed under mpirun is reported, and everything is cleaned up ----
rc, out, err, secs = run([EXE, "run", "all_reduce", "--np", "4", "--backend", "mpi",
                          "--timeout", "20"], env={"DISTLAB_FAULT": "1:1"})
check("a rank killed under mpirun fails the run", rc != 0, out + err)
check("the death names rank 1, its signal and the collective",
      re.search(r"rank 1 \(pid \d+\) was killed by signal 9 \(SIGKILL\) during all_reduce",
                err) is not None, err)
check("the report comes within 15 s (%.1f s)" % secs, secs < 15, err)
time.sleep(0.5)
left = set(rank_processes()) - before
check("no rank and no mpirun is left behind", not left, left)

# ---- the shell on the mpi backend ----
script = "\n".join([
    "t = arange(2) + 1 + 2*rank",
    "all_reduce t",
    "print t",
    "step on",
    "u = ones(3) * (rank + 1)",
    "all_reduce u",
    "next",
    "print u",
    "step off",
    "g = new_group([0, 2])",
    "all_reduce t group=g",
    "print t",
]) + "\n"
rc, out, err, _ = run([EXE, "shell", "--np", "3", "--backend", "mpi", "--timeout", "20"],
                      stdin=script)
check("shell --backend mpi runs the script", rc == 0, out + err)
check("all_reduce in the shell: every rank has tensor([ 9, 12])",
      out.count("tensor([ 9, 12])") >= 3, out)
check("step on says that mpi steps whole collectives",
      "steps whole collectives" in out, out)
check("a stepped collective is one step: MPI_Allreduce",
      re.search(r"step 1/1 .*whole collective", out) is not None, out)
check("after the step every rank has tensor([6., 6., 6.])",
      out.count("tensor([6., 6., 6.])") >= 3, out)
check("a subgroup (MPI_Comm_create_group) reduces on ranks 0 and 2 only",
      [l.strip() for l in out.splitlines() if ": t = " in l][-3:] ==
      ["rank 0: t = tensor([18, 24])", "rank 1: t = tensor([ 9, 12])",
       "rank 2: t = tensor([18, 24])"], out)

script = "t = ones(2) * rank\nkill 1\nrespawn\nt = ones(2) * rank\nall_reduce t\nprint t\n"
rc, out, err, _ = run([EXE, "shell", "--np", "3", "--backend", "mpi", "--timeout", "20",
                       "--keep-going"], stdin=script)
check("shell: kill 1 under mpirun is reported", re.search(r"rank 1 \(pid \d+\)", err) is not None,
      out + err)
check("shell: respawn brings a new mpi world that works",
      out.count("tensor([3., 3.])") >= 3, out + err)
time.sleep(0.5)
left = set(rank_processes()) - before
check("no rank and no mpirun is left behind after the shell", not left, left)

# ---- a user's own mpirun ----
mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "3"]
if os.geteuid() == 0:
    mpirun.insert(1, "--allow-run-as-root")
rc, out, err, _ = run(mpirun + [EXE, "rank", "all_reduce", "--count", "3"], timeout=120)
rc2, out2, _, _ = run([EXE, "run", "all_reduce", "--np", "3", "--count", "3"])
check("mpirun -np 3 distlab rank all_reduce: rank 0 prints the report", rc == 0, out + err)
check("... on the mpi backend", out.startswith("all_reduce  np=3  backend=mpi"), out)
check("... with the tensors `distlab run` prints", body(out) == body(out2), out + "\n" + out2)
rc, out, err, _ = run(mpirun + [EXE, "rank", "bench", "broadcast", "-b", "8", "-e", "1K",
                                "-n", "3", "-w", "1"], timeout=120)
check("mpirun -np 3 distlab rank bench broadcast", rc == 0 and "MPI_Bcast" in out, out + err)
# One process: when several fail at once, mpirun may abort the job before
# it has passed on what they wrote.
mpirun1 = mpirun[:-1] + ["1"]
rc, out, err, _ = run(mpirun1 + [EXE, "rank", "all_reduce", "--np", "5"], timeout=60)
check("mpirun ... distlab rank --np 5 is refused (mpirun decides)",
      rc != 0 and "--np comes from mpirun" in err, out + err)

time.sleep(0.5)
left = set(rank_processes()) - before
check("nothing is left behind at the end", not left, left)
print("%d checks failed" % len(failures) if failures else "all checks passed")
sys.exit(1 if failures else 0)
