#!/usr/bin/env python3
"""--trace FILE on run, bench and shell: the Chrome/Perfetto trace.

A ring all_reduce at np=4 gives every rank a track with one all_reduce
slice holding its 6 step slices in order (3 reduce-scatter, 3 all-gather),
and 24 arrows, one per message, each from rank r's step to rank r+1's same
step. A benchmark has a slice per call of every size. A path that cannot be
written is refused before any rank starts; the shell writes its trace when
it quits (or at `trace off`); a rank killed mid-run takes its records with
it while the others' are written.

usage: test_trace.py DISTLAB
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures  # noqa: E402

EXE = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="distlab-trace-")


def run(args, env=None, stdin=None, timeout=120):
    e = dict(os.environ)
    e.update(env or {})
    t0 = time.monotonic()
    p = subprocess.run([EXE] + args, capture_output=True, text=True, env=e, input=stdin,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def load(path):
    """The trace's events, or None when the file is missing or not JSON."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print("      cannot load %s: %s" % (path, e))
        return None
    return doc


class Trace:
    """A trace split by rank: its tracks (thread_name "rank N"), slices
    ("X") and arrow ends ("s", "f") per rank, in file order."""

    def __init__(self, doc):
        self.doc = doc
        ev = doc["traceEvents"]
        self.rank_of = {}
        for e in ev:
            if e["ph"] == "M" and e["name"] == "thread_name":
                m = re.match(r"^rank (\d+)$", e["args"]["name"])
                if m:
                    self.rank_of[e["tid"]] = int(m.group(1))
        self.slices, self.starts, self.ends = {}, [], []
        for e in ev:
            if e["ph"] == "X":
                self.slices.setdefault(self.rank_of.get(e["tid"]), []).append(e)
            elif e["ph"] == "s":
                self.starts.append(e)
            elif e["ph"] == "f":
                self.ends.append(e)

    def ranks(self):
        return sorted(self.rank_of.values())

    def of(self, rank, cat):
        return sorted((e for e in self.slices.get(rank, []) if e["cat"] == cat),
                      key=lambda e: e["ts"])

    def step_at(self, rank, ts):
        """The step slice of rank that encloses ts."""
        for e in self.of(rank, "step"):
            if e["ts"] < ts < e["ts"] + e["dur"]:
                return e
        return None


def inside(inner, outer):
    return outer["ts"] < inner["ts"] and inner["ts"] + inner["dur"] < outer["ts"] + outer["dur"]


# ---- a ring all_reduce ----
# --count 4: a chunk per rank, one element each (with the default count of
# 2, two of the four chunks are empty and the ring sends no message for
# them).

path = os.path.join(TMP, "ring.json")
rc, out, err, _ = run(["run", "all_reduce", "--np", "4", "--algo", "ring", "--count", "4",
                       "--trace", path])
check("run with --trace succeeds and prints what it prints without it",
      rc == 0 and "rank 3: tensor = tensor([28, 32, 36, 40])" in out and err == "", out + err)
check("only the trace is left in its directory (no temporary file)",
      os.listdir(TMP) == ["ring.json"], os.listdir(TMP))
doc = load(path)
check("the trace is JSON in the trace-event format",
      doc is not None and isinstance(doc.get("traceEvents"), list)
      and doc.get("displayTimeUnit") == "ns", doc)
t = Trace(doc or {"traceEvents": []})
check("4 rank tracks, named rank 0 to rank 3", t.ranks() == [0, 1, 2, 3], t.rank_of)
check("every event is on a rank's track of one process",
      all(e["pid"] == 1 for e in t.doc["traceEvents"])
      and all(e["tid"] in t.rank_of for e in t.doc["traceEvents"] if e["ph"] != "M"))
steps_by_rank = {}
for r in range(4):
    colls, steps = t.of(r, "collective"), t.of(r, "step")
    steps_by_rank[r] = steps
    check("rank %d: one all_reduce slice" % r,
          len(colls) == 1 and colls[0]["name"] == "all_reduce ring"
          and colls[0]["args"]["collective"] == "all_reduce"
          and colls[0]["args"]["algorithm"] == "ring" and colls[0]["args"]["steps"] == 6,
          colls)
    want = ["all_reduce ring step %d/6 %s" % (k, "reduce-scatter" if k <= 3 else "all-gather")
            for k in range(1, 7)]
    check("rank %d: exactly 6 step slices, in order" % r,
          [e["name"] for e in steps] == want, [e["name"] for e in steps])
    check("rank %d: steps nested in the all_reduce slice" % r,
          len(colls) == 1 and all(inside(e, colls[0]) for e in steps))
    check("rank %d: steps do not overlap" % r,
          all(a["ts"] + a["dur"] < b["ts"] for a, b in zip(steps, steps[1:])),
          [(e["ts"], e["dur"]) for e in steps])
    check("rank %d: step args (collective, algorithm, step, phase, bytes sent)" % r,
          all(e["args"]["collective"] == "all_reduce" and e["args"]["algorithm"] == "ring"
              and e["args"]["step"] == k + 1 and e["args"]["steps"] == 6
              and e["args"]["phase"] == ("reduce-scatter" if k < 3 else "all-gather")
              and e["args"]["bytes_sent"] == 8
              for k, e in enumerate(steps)), [e["args"] for e in steps])
    check("rank %d: the collective's bytes are its steps'" % r,
          len(colls) == 1 and colls[0]["args"]["bytes_sent"] == 48, colls)
check("times are rebased to the earliest event, in microseconds",
      min(e["ts"] for e in t.doc["traceEvents"] if e["ph"] == "X") == 0
      and all(0 <= e["ts"] < 60e6 for e in t.doc["traceEvents"] if e["ph"] != "M"))

ends = {}
for e in t.ends:
    ends.setdefault(e["id"], []).append(e)
starts = {}
for e in t.starts:
    starts.setdefault(e["id"], []).append(e)
check("24 arrows: 24 starts and 24 ends, each id once on each side",
      len(t.starts) == 24 and len(t.ends) == 24 and len(starts) == 24
      and sorted(starts) == sorted(ends)
      and all(len(v) == 1 for v in list(starts.values()) + list(ends.values())),
      (len(t.starts), len(t.ends), len(starts), len(ends)))
ring_ok, step_ok, args_ok = True, True, True
pairs = set()
for i, ss in starts.items():
    s, f = ss[0], ends.get(i, [None])[0]
    if f is None:
        ring_ok = False
        continue
    src, dst = t.rank_of.get(s["tid"]), t.rank_of.get(f["tid"])
    ring_ok &= src is not None and dst == (src + 1) % 4 and f.get("bp") == "e"
    ring_ok &= s["name"] == f["name"] and s["cat"] == f["cat"]
    a, b = t.step_at(src, s["ts"]), t.step_at(dst, f["ts"])
    step_ok &= a is not None and b is not None and a["args"]["step"] == b["args"]["step"]
    if a is not None:
        pairs.add((src, a["args"]["step"]))
    args_ok &= (s["args"]["from"] == src and s["args"]["to"] == dst and s["args"]["bytes"] == 8
                and f["args"] == s["args"] and 0 <= s["args"]["chunk"] < 4)
check("every arrow goes from rank r to rank r+1 mod 4, ending on the enclosing slice", ring_ok)
check("every arrow starts in a step of its sender and ends in the same step of its receiver",
      step_ok)
check("every arrow's start comes before its end",
      all(ss[0]["ts"] < ends[i][0]["ts"] for i, ss in starts.items() if i in ends))
check("one arrow per rank and step", len(pairs) == 24, sorted(pairs))
check("arrows carry bytes and chunk", args_ok, list(starts.values())[:2])

# ---- bench ----

path = os.path.join(TMP, "bench.json")
rc, out, err, _ = run(["bench", "all_reduce", "--np", "2", "-b", "8", "-e", "64", "-n", "3",
                       "-w", "1", "--trace", path])
doc = load(path)
t = Trace(doc or {"traceEvents": []})
rows = [l for l in out.splitlines() if re.match(r"^\s+\d+\s", l)]
check("bench with --trace", rc == 0 and len(rows) == 4 and doc is not None, out + err)
for r in range(2):
    colls = t.of(r, "collective")
    ar = [e for e in colls if e["args"]["collective"] == "all_reduce"]
    bar = [e for e in colls if e["args"]["collective"] == "barrier"]
    # Per size: the checked call, 1 warm-up, 3 timed; and the barriers
    # before the warm-up and before the timed calls.
    check("rank %d: an all_reduce slice per call of every size (4 x 5)" % r,
          len(ar) == 20 and len(bar) == 8, (len(ar), len(bar)))
    steps = t.of(r, "step")
    check("rank %d: each call holds its steps" % r,
          all(sum(1 for s in steps if inside(s, c)) == c["args"]["steps"] for c in colls)
          and len(steps) == sum(c["args"]["steps"] for c in colls),
          (len(steps), [c["args"]["steps"] for c in colls][:3]))
    counts = sorted({c["args"]["count"] for c in ar})
    check("rank %d: the calls' counts are the sizes'" % r, counts == [2, 4, 8, 16], counts)
rc, out, err, _ = run(["bench", "all_reduce", "--np", "2", "-b", "8", "-e", "64", "-n", "3",
                       "-w", "1", "-c", "0", "--trace", path])
t = Trace(load(path) or {"traceEvents": []})
check("bench -c 0: no checked call",
      rc == 0 and len([e for e in t.of(0, "collective")
                       if e["args"]["collective"] == "all_reduce"]) == 16)

# ---- a path that cannot be written ----

for bad, why in [(os.path.join(TMP, "no", "such", "t.json"), "No such file or directory"),
                 (TMP, "Is a directory")]:
    for cmd in (["run", "all_reduce"], ["bench", "all_reduce"], ["shell", "-c", "ranks"]):
        rc, out, err, dt = run(cmd + ["--np", "2", "--trace", bad])
        check("%s --trace %s is refused before any rank starts" % (cmd[0], why),
              rc == 2 and out == "" and err.count("\n") == 1
              and err.startswith("distlab: --trace %s: " % bad) and why in err, (rc, out, err))

# ---- the shell ----

path = os.path.join(TMP, "shell.json")
rc, out, err, _ = run(["shell", "--np", "2", "--trace", path],
                      stdin="t = ones(4)\nall_reduce t\nbarrier\nquit\n")
doc = load(path)
t = Trace(doc or {"traceEvents": []})
check("shell --trace writes the trace after quit", rc == 0 and doc is not None, out + err)
check("the shell's trace has both ranks' collectives",
      t.ranks() == [0, 1]
      and all([e["args"]["collective"] for e in t.of(r, "collective")] == ["all_reduce", "barrier"]
              for r in range(2))
      and len(t.starts) == len(t.ends) > 0, [t.of(r, "collective") for r in range(2)])
rc, out, err, _ = run(["shell", "--np", "2", "--trace", path], stdin="t = ones(4)\nall_reduce t\n")
check("... and at the end of its input", rc == 0 and load(path) is not None, err)

path2 = os.path.join(TMP, "on_off.json")
rc, out, err, _ = run(["shell", "--np", "2"],
                      stdin="t = ones(4)\nall_reduce t\ntrace\ntrace on %s\nall_reduce t\n"
                            "trace\ntrace off\nall_reduce t\ntrace\n" % path2)
t = Trace(load(path2) or {"traceEvents": []})
check("trace on FILE / trace off: only what ran in between",
      rc == 0 and [len(t.of(r, "collective")) for r in range(2)] == [1, 1], out + err)
check("trace alone says whether it is on, trace off where it went",
      "tracing is off\n" in out and re.search(r"tracing to \S+on_off.json: \d+ events so far", out)
      and re.search(r"trace: \d+ events written to \S+on_off.json", out), out)
rc, out, err, _ = run(["shell", "--np", "2", "-k"],
                      stdin="trace off\ntrace on %s\ntrace on %s\ntrace on\n" % (path2, path2))
check("trace's errors", rc == 1 and "tracing is off already" in err
      and "already tracing to" in err and "usage: trace [on FILE | off]" in err, err)

# ---- a path that is not a regular file: written through, never replaced ----

target = os.path.join(TMP, "target.json")
with open(target, "w") as f:
    f.write("old")
link = os.path.join(TMP, "link.json")
os.symlink(target, link)
rc, out, err, _ = run(["run", "all_reduce", "--np", "2", "--trace", link])
check("a symbolic link stays a link, its target gets the trace",
      rc == 0 and os.path.islink(link) and load(target) is not None, err)

dangling = os.path.join(TMP, "dangling.json")
os.symlink(os.path.join(TMP, "made.json"), dangling)
rc, out, err, _ = run(["run", "all_reduce", "--np", "2", "--trace", dangling])
check("a link to nothing yet: the trace makes its target, the link stays",
      rc == 0 and os.path.islink(dangling) and load(os.path.join(TMP, "made.json")) is not None,
      err)

appended = os.path.join(TMP, "appended.txt")
with open(appended, "w") as f:
    f.write("EARLIER\n")
p = subprocess.run("'%s' run all_reduce --np 2 --trace /dev/stdout >> '%s'" % (EXE, appended),
                   shell=True, capture_output=True, text=True, timeout=120)
with open(appended) as f:
    text = f.read()
check("--trace /dev/stdout into a file opened to append: what was there and the run's output "
      "stay, the trace follows them", p.returncode == 0 and text.startswith("EARLIER\nall_reduce")
      and "after:" in text and text.rstrip().endswith("]}"), p.stderr + text[:300])

fifo = os.path.join(TMP, "fifo")
os.mkfifo(fifo)
reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE, text=True)
rc, out, err, _ = run(["run", "all_reduce", "--np", "2", "--trace", fifo])
got = reader.communicate(timeout=60)[0]
check("a FIFO stays a FIFO and its reader gets the whole trace",
      rc == 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode) and json.loads(got)["traceEvents"], err)

if os.geteuid() == 0:
    full = os.path.join(TMP, "full")
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # /dev/full's device
    rc, out, err, _ = run(["run", "all_reduce", "--np", "2", "--trace", full])
    check("a device that refuses the write: still the device, and a failed run saying why",
          rc == 1 and stat.S_ISCHR(os.lstat(full).st_mode)
          and err == "distlab: --trace: cannot write %s: No space left on device\n" % full,
          (rc, err))
else:
    print("skip: a device node needs root")

# ---- a rank killed mid-run ----

path = os.path.join(TMP, "killed.json")
rc, out, err, _ = run(["run", "all_reduce", "--np", "4", "--algo", "ring", "--count", "4",
                       "--trace", path], env={"DISTLAB_FAULT": "2:3"})
t = Trace(load(path) or {"traceEvents": []})
check("a rank killed mid-run: the run fails, the others' records are written",
      rc == 1 and "rank 2" in err and t.ranks() == [0, 1, 3]
      and all(len(t.of(r, "step")) >= 1 for r in (0, 1, 3)), (rc, err, t.rank_of))

# ---- a backend without schedules ----

rc, out, err, _ = run(["backends", "--json"])
try:
    mpi = json.loads(out)["mpi"]["built"] is True
except (ValueError, KeyError, TypeError, AttributeError):
    mpi = False
if mpi and shutil.which("mpirun"):
    path = os.path.join(TMP, "mpi.json")
    rc, out, err, _ = run(["run", "all_reduce", "--np", "2", "--backend", "mpi", "--trace", path])
    t = Trace(load(path) or {"traceEvents": []})
    check("mpi: one slice per call, no steps and no arrows",
          rc == 0 and all(len(t.of(r, "collective")) == 1 and not t.of(r, "step")
                          for r in range(2))
          and t.of(0, "collective")[0]["name"].startswith("all_reduce MPI_")
          and not t.starts and not t.ends, (out + err, t.slices))
else:
    print("skip  mpi: this distlab has no mpi backend, or there is no mpirun")

shutil.rmtree(TMP, ignore_errors=True)
if failures:
    print("%d failed: %s" % (len(failures), ", ".join(failures)))
    sys.exit(1)
print("all passed")
