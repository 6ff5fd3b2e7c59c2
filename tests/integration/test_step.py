#!/usr/bin/env python3
"""Step mode and collective matching in the shell, driven through scripts.

Step mode: ring all_reduce at np=4 is stepped with `next`, and every step's
phase, messages and every rank's tensor (with the changed elements marked by
carets) are checked against an independent simulation of the ring
algorithm; `back`/`forward` replay recorded steps; `continue` runs the rest.
Matching: mismatched collectives (different collectives, counts, dtypes, a
rank that never calls it) are reported rank by rank before data moves, fast,
and the world stays usable.

usage: test_step.py DISTLAB
"""
import re
import os
import subprocess
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures  # noqa: E402

EXE = sys.argv[1]


def shell(script, np=4, timeout_s=20, keep_going=False):
    t0 = time.monotonic()
    p = subprocess.run([EXE, "shell", "--np", str(np), "--timeout", str(timeout_s)] +
                       (["--keep-going"] if keep_going else []),
                       input=script, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


# ---- an independent model of the ring all_reduce ----

def ring_allreduce_steps(values):
    """values[r] = list of n numbers (one chunk per rank). Yields (phase,
    messages, states) per step, messages as (src, dst, chunk, combine)."""
    n = len(values)
    state = [list(v) for v in values]
    for s in range(n - 1):
        msgs = [(r, (r + 1) % n, (r - s) % n, "reduce") for r in range(n)]
        new = [list(v) for v in state]
        for src, dst, c, _ in msgs:
            new[dst][c] = state[dst][c] + state[src][c]
        state = new
        yield "reduce-scatter", msgs, [list(v) for v in state]
    for s in range(n - 1):
        msgs = [(r, (r + 1) % n, (r + 1 - s) % n, "copy") for r in range(n)]
        new = [list(v) for v in state]
        for src, dst, c, _ in msgs:
            new[dst][c] = state[src][c]
        state = new
        yield "all-gather", msgs, [list(v) for v in state]


def msg_line(msg):
    """The line step mode prints for a message of the model: one int64
    element (8 bytes) per chunk, at the chunk's index, in place."""
    src, dst, c, combine = msg
    return "  r%d -> r%d  chunk %d  %s  8 B  in[%d:%d] -> in[%d:%d]" % (
        src, dst, c, combine, c, c + 1, c, c + 1)


def parse_step_block(lines, i):
    """From lines[i] = 'step k/n  phase', returns (k, phase, msgs, tensors,
    marks, next_i); msgs = the message lines as printed, tensors[rank] = list
    of ints, marks[rank] = set of element indices with carets under them."""
    m = re.match(r"^step (\d+)/(\d+)  (\S+)$", lines[i])
    k, phase = int(m.group(1)), m.group(3)
    i += 1
    msgs, tensors, marks = [], {}, {}
    while i < len(lines):
        mm = re.match(r"^  r\d+ (->|local) ", lines[i])
        mt = re.match(r"^(  rank (\d+)\s+tensor\(\[)(.*)\]\)$", lines[i])
        if mm:
            msgs.append(lines[i])
            i += 1
        elif mt:
            r = int(mt.group(2))
            body_start = len(mt.group(1))
            spans, vals = [], []
            for e in re.finditer(r"[^, ]+", mt.group(3)):
                spans.append((body_start + e.start(), body_start + e.end()))
                vals.append(int(float(e.group(0).rstrip("."))))
            tensors[r] = vals
            marks[r] = set()
            i += 1
            if i < len(lines) and set(lines[i].strip()) == {"^"}:
                for j, (a, b) in enumerate(spans):
                    if lines[i][a:b] == "^" * (b - a):
                        marks[r].add(j)
                i += 1
        else:
            break
    return k, phase, msgs, tensors, marks, i


np_ = 4
init = [[1 + 4 * r + j for j in range(4)] for r in range(np_)]
script = ("set algo all_reduce ring\nstep on\nt = arange(4) + 1 + 4*rank\nall_reduce t\n" +
          "next\n" * 6 + "back\nback\nforward\nforward\nforward\nprint t\n")
rc, out, err, _ = shell(script, keep_going=True)
lines = out.splitlines()
check("step mode script runs; only the last `forward` fails",
      rc == 1 and "line 15 failed: forward" in err and err.count("failed") == 1, out + err)
starts = [i for i, l in enumerate(lines) if re.match(r"^step \d+/6  ", l)]
replays = [l for l in lines if l.startswith("(recorded) step ")]
check("six steps shown", len(starts) == 6, out)
check("the state before step 1 is shown",
      any(l.startswith("all_reduce with ring: 6 steps; before step 1") for l in lines), out)
expected = list(ring_allreduce_steps(init))
prev = [list(v) for v in init]
for k in range(min(6, len(starts))):
    got_k, phase, msgs, tensors, marks, _ = parse_step_block(lines, starts[k])
    want_phase, want_msgs, want_states = expected[k]
    check("step %d: number and phase" % (k + 1), got_k == k + 1 and phase == want_phase,
          lines[starts[k]])
    want_lines = [msg_line(m) for m in want_msgs]
    check("step %d: messages" % (k + 1), msgs == want_lines,
          "got\n%s\nwant\n%s" % ("\n".join(msgs), "\n".join(want_lines)))
    for r in range(np_):
        changed = {j for j in range(4) if want_states[r][j] != prev[r][j]}
        check("step %d: rank %d tensor" % (k + 1, r), tensors.get(r) == want_states[r],
              "got %s want %s" % (tensors.get(r), want_states[r]))
        check("step %d: rank %d changed elements marked" % (k + 1, r), marks.get(r) == changed,
              "got %s want %s" % (marks.get(r), changed))
    prev = want_states
# back, back -> steps 5 and 4 (recorded); forward, forward -> 5, 6; forward -> error.
check("back/forward replay recorded steps",
      [l.split()[2] for l in replays] == ["5/6", "4/6", "5/6", "6/6"], out)


def block(i):
    """The lines under a step's header line lines[i]."""
    j = i + 1
    while j < len(lines) and lines[j].startswith("  "):
        j += 1
    return lines[i + 1:j]


replayed = [i for i, l in enumerate(lines) if l == "(recorded) step 5/6  all-gather"]
check("a recorded step shows again as it was shown",
      len(starts) == 6 and len(replayed) == 2
      and block(replayed[0]) == block(starts[4]) == block(replayed[1]), out)
check("forward past the last step is an error",
      "at the last recorded step" in err, err)
total = [sum(init[r][j] for r in range(np_)) for j in range(4)]
check("the collective's result",
      ["rank %d: t = tensor([%s])" % (r, ", ".join(str(v) for v in total)) for r in range(np_)]
      == [l.strip() for l in lines if l.startswith("  rank ") and ": t = " in l][-4:], out)

# continue runs the rest; `next` with nothing paused is an error.
rc, out, err, _ = shell("set algo all_reduce ring\nstep on\nt = ones(8) * (rank + 1)\n"
                        "all_reduce t\nnext\ncontinue\n"
                        "print t\nstep off\nall_reduce t\nprint t\n")
check("continue runs to the end", rc == 0 and "steps 2-6 ran" in out
      and "rank 3: t = tensor([10., 10., 10., 10., 10., 10., 10., 10.])" in out
      and "rank 0: t = tensor([40., 40., 40., 40., 40., 40., 40., 40.])" in out, out + err)
rc, out, err, _ = shell("next\n")
check("next with nothing paused", rc == 1 and "nothing is paused" in err, err)

# A paused collective accepts only step commands, then goes on.
rc, out, err, _ = shell("step on\nt = ones(2)\nall_reduce t\nt = zeros(2)\n")
check("other commands are refused while paused",
      rc == 1 and "is paused before step 1/" in err, err)

# The statements of one line run together: a big send and its recv.
rc, out, err, _ = shell("t = zeros(100000) + rank; on 0: send t dst=1; on 1: recv t src=0; "
                        "on 1: print t[99999]\n", np=2)
check("send and recv on one line (no deadlock)",
      rc == 0 and "rank 1: value = tensor(0.)" in out, out + err)

# ---- matching ----

rc, out, err, dt = shell("t = ones(4)\non 0: all_reduce t; on 1: broadcast t src=1\n"
                         "all_reduce t\nprint t\n", np=2, keep_going=True)
check("mismatched collectives reported rank by rank",
      "collective #1 on the world group does not match across ranks; nothing was sent:" in err
      and re.search(r"rank 0\s+all_reduce float32\[4\] op=sum", err)
      and re.search(r"rank 1\s+broadcast float32\[4\] src=1\s+<- differs", err), err)
check("mismatch reported fast, not at the timeout", dt < 10, "%.1f s" % dt)
check("nothing moved, and the world goes on (same sequence numbers)",
      rc == 1 and "rank 0: t = tensor([2., 2., 2., 2.])" in out
      and "rank 1: t = tensor([2., 2., 2., 2.])" in out, out + err)

rc, out, err, dt = shell("on 0: t = ones(4); on 1: t = ones(5); on 2: t = ones(4, dtype=int32)\n"
                         "all_reduce t\n", np=3)
check("different counts and dtypes named",
      re.search(r"rank 1\s+all_reduce float32\[5\] op=sum\s+<- differs", err)
      and re.search(r"rank 2\s+all_reduce int32\[4\] op=sum\s+<- differs", err)
      and rc == 1 and dt < 10, err)

rc, out, err, dt = shell("t = ones(4)\non 0: all_reduce t\nbarrier\nall_reduce t\nprint t\n",
                         np=3, keep_going=True)
check("a collective on some ranks only is refused",
      "all_reduce #1 on the world group can never complete" in err
      and re.search(r"rank 1\s+not calling it", err) and dt < 10, err)
check("after a refused collective the ranks still agree",
      rc == 1 and "rank 2: t = tensor([3., 3., 3., 3.])" in out, out + err)

rc, out, err, dt = shell("g = new_group([0, 1]); t = ones(2)\n"
                         "on 0,1: all_reduce t group=g; on 2: all_reduce t\n", np=3)
check("a group collective against the world's",
      rc == 1 and "can never complete" in err and dt < 10, err)

rc, out, err, dt = shell("g = new_group([1, 2]); t = ones(2)\n"
                         "on 1,2: all_reduce t group=g; on 0-2: all_reduce t; print t\n", np=3)
check("a subgroup's collective, then the world's, on one line",
      rc == 0 and out.count("t = tensor([5., 5.])") == 6,
      out + err)

# A rank killed while a collective is paused is reported; the rest give up.
rc, out, err, dt = shell("step on\nt = ones(4)\nall_reduce t\nkill 2\nrespawn\nt = ones(2)\n"
                         "all_reduce t\nprint t\n")
check("kill while paused, then respawn",
      "rank 2 (pid" in err and "killed by signal 9" in err and dt < 20, out + err)
# The paused survivors name the dead rank as the cause, each alike.
check("the survivors of a kill while paused name the dead rank",
      re.search(r"ranks 0, 1, 3: all_reduce \(linear\) failed at step 1/1 \(exchange\): gave up "
                r"before step 1: rank 2 \(pid \d+\) was killed by signal 9 \(SIGKILL\); "
                r"`respawn` restarts the ranks", err) is not None, err)

# A buffer larger than a control frame (256 MiB) steps too: only the elements
# its print shows travel, and the changed ones among them are marked.
rc, out, err, dt = shell("set algo all_reduce ring\nstep on\n"
                         "t = arange(70000000, dtype=float32) + rank\nall_reduce t\n"
                         "next\ncontinue\n", np=2, timeout_s=60)
check("step mode on a 280 MB buffer",
      rc == 0 and "step 1/" in out and "..." in out and "^" in out
      and "rank 1: t = tensor([1.0000e+00, 3.0000e+00, 5.0000e+00,  ..., 1.4000e+08, 1.4000e+08,"
      in out, out[-2000:] + err)

# `ranks` while paused says so, with the step each rank waits before.
rc, out, err, dt = shell("set algo all_reduce ring\nstep on\nt = ones(4)\nall_reduce t\nnext\n"
                         "ranks\ncontinue\n", np=3)
check("ranks while paused",
      rc == 0 and out.count("paused before step 2/4 of all_reduce") == 3, out + err)

# Two ranks call a collective the third never will: one report, naming both.
rc, out, err, dt = shell("t = ones(2); on 0,1: all_reduce t\n", np=3)
check("'can never complete' is reported once, naming every caller",
      rc == 1 and err.count("can never complete") == 1
      and re.search(r"rank 0\s+all_reduce float32\[2\]", err)
      and re.search(r"rank 1\s+all_reduce float32\[2\]", err)
      and "still running" not in err, err)

# Step mode without fingerprint checks still shows every rank's buffer.
rc, out, err, dt = shell("set check off\nstep on\nt = arange(4)\nall_reduce t\ncontinue\n", np=2)
check("step mode with `set check off`",
      rc == 0 and "(no state)" not in out and "rank 0   tensor([0, 1, 2, 3])" in out, out + err)

# rd's scratch buffer: a `tmp` line under each rank's buffer once a step
# has written it (step 1 sums the pair's buffers into it), not before.
rc, out, err, dt = shell("set algo all_reduce rd\nstep on\nt = arange(4) + 1 + 4*rank\n"
                         "all_reduce t\nnext\nnext\n", np=4)
before, _, after = out.partition("step 1/2")
step1, _, step2 = after.partition("step 2/2")
check("rd: no tmp line before step 1", rc == 0 and "tmp" not in before.split("all_reduce with")[-1],
      out + err)
check("rd step 1: each rank's tmp holds its pair's sum, every element marked",
      "  rank 0   tensor([1, 2, 3, 4])\n    tmp    tensor([ 6,  8, 10, 12])\n"
      "                    ^   ^  ^^  ^^\n" in step1
      and "  rank 3   tensor([13, 14, 15, 16])\n    tmp    tensor([22, 24, 26, 28])\n" in step1,
      step1)
check("rd step 2: tmp still shown, unchanged, under the reduced buffer",
      "  rank 2   tensor([28, 32, 36, 40])\n                   ^^  ^^  ^^  ^^\n"
      "    tmp    tensor([22, 24, 26, 28])\n" in step2, step2)

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
