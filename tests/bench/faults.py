#!/usr/bin/env python3
"""Fault campaign: how fast and how well distlab reports faults.

For each kind of fault it runs the real binary --runs times and prints
figures (it asserts nothing about timings):

  kill-run      kill -9 a random rank at a random moment of `distlab run`
  kill-bench    the same during `distlab bench`
  stop-bench    SIGSTOP a random rank during `distlab bench` (--timeout 3)
  controller    kill -9 the controller during `distlab bench`

each on the transport given (--transport shm|tcp). For every kind: the cases
(faults that landed while the job ran), the median and maximum time from
the fault to the report (the controller's exit; for `controller`, to the
last rank gone), the cases whose report names the wrong rank (or none), the cases whose
report names no step although a survivor aborted mid-collective (in `run`
this can be true: a rank killed while filling its tensors had not begun
step 1),
and the leftovers: processes of the run still alive 3 s later, new
/dev/shm entries, new token files under /tmp.

usage: faults.py DISTLAB_EXE [--runs N] [--transport shm|tcp] [--kinds a,b]
"""

import argparse
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time
import uuid

KINDS = ["kill-run", "kill-bench", "stop-bench", "controller"]


def tagged(tag):
    """{pid: (rank, state)} of live processes whose environment holds tag."""
    needle = ("DLFAULT_TAG=" + tag).encode()
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
            if needle not in env:
                continue
            with open("/proc/%s/stat" % d) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state in ("Z", "X"):
            continue
        rank = None
        for e in env:
            if e.startswith(b"RANK="):
                rank = int(e[5:])
        out[int(d)] = (rank, state)
    return out


def ranks_of(tag):
    return {r: pid for pid, (r, _) in tagged(tag).items() if r is not None}


def shm_names():
    try:
        return {e for e in os.listdir("/dev/shm") if "distlab" in e.lower()}
    except OSError:
        return set()


def token_files():
    try:
        return {e for e in os.listdir("/tmp") if "distlab" in e.lower() and "token" in e.lower()}
    except OSError:
        return set()


class Case:
    def __init__(self, kind):
        self.kind = kind
        self.landed = False
        self.secs = None
        self.wrong_rank = False
        self.wrong_step = False
        self.left = []
        self.note = ""


def start(exe, argv, tag):
    env = dict(os.environ, DLFAULT_TAG=tag)
    return subprocess.Popen([exe] + argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_ranks(tag, np_, p, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end and p.poll() is None:
        r = ranks_of(tag)
        if len(r) == np_:
            return r
        time.sleep(0.02)
    return None


def finish(p, timeout):
    try:
        _, err = p.communicate(timeout=timeout)
        return err
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        return p.communicate()[1] + "\n(killed by faults.py after %g s)" % timeout


def leftovers(tag, shm0, tok0, case):
    end = time.monotonic() + 3
    while tagged(tag) and time.monotonic() < end:
        time.sleep(0.05)
    left = tagged(tag)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    case.left = ["pid %d (rank %s, %s)" % (p, r, s) for p, (r, s) in left.items()]
    case.left += ["/dev/shm/" + e for e in shm_names() - shm0]
    case.left += ["/tmp/" + e for e in token_files() - tok0]


def one(exe, kind, transport, rng):
    case = Case(kind)
    tag = uuid.uuid4().hex
    shm0, tok0 = shm_names(), token_files()
    np_ = 4
    common = ["--np", str(np_), "--transport", transport]
    if kind == "kill-run":
        # Long enough (about 2 s on 2 cores) for a kill to land inside it.
        argv = ["run", "all_reduce", "--count", "60000000", "--dtype", "float32",
                "--timeout", "10"] + common
    elif kind == "stop-bench":
        argv = ["bench", "all_reduce", "-b", "1K", "-e", "32M", "-n", "20",
                "--timeout", "3"] + common
    else:
        argv = ["bench", "all_reduce", "-b", "1K", "-e", "128M", "-n", "20",
                "--timeout", "10"] + common
    p = start(exe, argv, tag)
    ranks = wait_ranks(tag, np_, p)
    victim = rng.randrange(np_)
    if ranks is None:
        case.note = "ranks never all started"
        finish(p, 30)
        leftovers(tag, shm0, tok0, case)
        return case
    time.sleep(rng.uniform(0.2, 2.5) if kind != "kill-run" else rng.uniform(0.05, 1.5))
    if p.poll() is not None:
        finish(p, 5)
        leftovers(tag, shm0, tok0, case)
        return case  # the job ended before the fault: not a case
    t0 = time.monotonic()
    pid = ranks[victim]
    try:
        if kind == "controller":
            os.kill(p.pid, signal.SIGKILL)
        elif kind == "stop-bench":
            os.kill(pid, signal.SIGSTOP)
        else:
            os.kill(pid, signal.SIGKILL)
    except OSError:
        finish(p, 5)
        leftovers(tag, shm0, tok0, case)
        return case
    case.landed = True
    if kind == "controller":
        p.wait()
        end = t0 + 10
        while ranks_of(tag) and time.monotonic() < end:
            time.sleep(0.01)
        case.secs = time.monotonic() - t0
        finish(p, 5)
        leftovers(tag, shm0, tok0, case)
        return case
    err = finish(p, 60)
    case.secs = time.monotonic() - t0
    if p.returncode == 0:
        # It finished in spite of the fault: the fault came after the last
        # collective (a kill while the ranks were exiting).
        case.landed = False
        leftovers(tag, shm0, tok0, case)
        return case
    if kind == "stop-bench":
        m = re.search(r"rank (\d+) \(pid (\d+)\) not responding (.*)", err)
    else:
        m = re.search(r"rank (\d+) \(pid (\d+)\) was killed by signal 9 \(SIGKILL\)(.*)", err)
    if m is None or int(m.group(1)) != victim or int(m.group(2)) != pid:
        case.wrong_rank = True
        case.note = err.strip().split("\n")[0] if err.strip() else "(no report)"
    elif not re.search(r"step \d+/\d+", m.group(3)) and "joining" not in m.group(3):
        # A step must be named once the job runs: peers that aborted
        # mid-collective prove it was running.
        if re.search(r"aborted at step", err):
            case.wrong_step = True
            case.note = m.group(0)
    leftovers(tag, shm0, tok0, case)
    return case


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("exe")
    ap.add_argument("--runs", type=int, default=100, help="runs per kind (default 100)")
    ap.add_argument("--transport", choices=["shm", "tcp"], default="shm")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    kinds = [k for k in a.kinds.split(",") if k]
    for k in kinds:
        if k not in KINDS:
            print("unknown kind %r; kinds: %s" % (k, ", ".join(KINDS)), file=sys.stderr)
            return 2
    print("# distlab fault campaign: %d runs per kind, transport %s, %d cores, load %.1f"
          % (a.runs, a.transport, os.cpu_count(), os.getloadavg()[0]))
    print("# %-11s %6s %6s %8s %8s %10s %10s %9s" % ("kind", "runs", "cases", "median_s",
                                                     "max_s", "wrong_rank", "no_step",
                                                     "leftovers"))
    t_all = time.monotonic()
    for kind in kinds:
        cases = [one(a.exe, kind, a.transport, rng) for _ in range(a.runs)]
        landed = [c for c in cases if c.landed]
        secs = [c.secs for c in landed if c.secs is not None]
        print("  %-11s %6d %6d %8.2f %8.2f %10d %10d %9d" % (
            kind, len(cases), len(landed), statistics.median(secs) if secs else 0,
            max(secs) if secs else 0, sum(c.wrong_rank for c in landed),
            sum(c.wrong_step for c in landed), sum(len(c.left) for c in cases)))
        for c in cases:
            if c.wrong_rank or c.wrong_step or c.left:
                print("    %s: %s%s" % (c.kind, c.note, ("; left: " + ", ".join(c.left))
                                        if c.left else ""))
        sys.stdout.flush()
    print("# %.0f s in all" % (time.monotonic() - t_all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
