#!/usr/bin/env python3
"""The scenario library through the real binary: every scenario in
scenarios/ runs non-interactively on live ranks and its `expect` lines pass;
a failing `expect` exits 1 naming the file and line; a malformed file is
refused with its file and line before any rank starts; `list` and `show`;
`--step` shows a collective step by step. Exercises: each is taken with a
right and a wrong answers file and scored; --report json; a class graded
from a folder of answer files, with its CSV. The exercise in which the
learner writes the ring all-reduce (a `write` question): right code scores
and is counted (2(n-1) messages and bytes per rank), wrong code (a wrong
sum, the built-in all_reduce, too many bytes, code that does not parse, a
recv nothing will match) scores nothing with a one-line reason and never
hangs; at --np 2, 3 and 8; typed on a terminal (a pty) with :load; graded
from a folder; malformed `write` directives refused with their file:line.

usage: test_scenario.py DISTLAB SCENARIO_DIR
"""
import itertools
import json
import os
import re
import pty
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures  # noqa: E402

EXE, LIBRARY = sys.argv[1], sys.argv[2]


def distlab(*args, cwd=None):
    env = dict(os.environ, DISTLAB_SCENARIOS=LIBRARY)
    p = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=120, env=env,
                       stdin=subprocess.DEVNULL, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


names = sorted(f[:-9] for f in os.listdir(LIBRARY) if f.endswith(".scenario"))
check("the library has a scenario per collective, ping-pong, and the classic lessons",
      {"ping-pong", "broadcast", "scatter", "gather", "reduce", "all_gather", "all_reduce",
       "reduce_scatter", "all_to_all", "barrier", "ring-allreduce", "parameter-server",
       "data-parallel-sgd", "sync-batchnorm", "reduce-ops", "subgroups", "moe-dispatch"} <=
      set(names), str(names))

def runs_whole(name):
    rc, out, err = distlab("scenario", "run", name)
    expects = out.count("\nok   expect ") + out.count("\nok   check ")
    check("%s runs and its %d expectations hold" % (name, expects),
          rc == 0 and expects > 0 and "FAIL" not in err, out[-1500:] + err)


# The elastic demo (its scenario too) and code that never ends mostly wait,
# for sleeping workers and a timeout: each runs on a thread of its own,
# beside the rest (defined below, started here, joined at the end).
def in_background(fn):
    def run():
        try:
            fn()
        except Exception as e:  # a check that raised is a failed check
            check("%s ran to its end" % fn.__name__, False, repr(e))
    t = threading.Thread(target=run)
    t.start()
    return t


for name in names:
    if name != "elastic-restart":
        runs_whole(name)

# A scenario runs at every world size its `sizes:` names (the smallest and
# the largest are run here), and --np outside them is refused in one line.
def sizes_of(name):
    with open(os.path.join(LIBRARY, name + ".scenario")) as f:
        line = next((l for l in f if l.startswith("sizes:")), None)
    if line is None:
        return None
    sizes = []
    for item in line[len("sizes:"):].split(","):
        lo, _, hi = item.strip().partition("-")
        sizes += range(int(lo), int(hi or lo) + 1)
    return sizes


for name in names:
    sizes = sizes_of(name)
    if sizes is None:
        continue
    for n in sorted({sizes[0], sizes[-1]}):
        rc, out, err = distlab("scenario", "run", name, "--np", str(n))
        check("%s runs at --np %d, a size it is written for" % (name, n),
              rc == 0 and "FAIL" not in err, out[-800:] + err)
        # The narration holds at this size too: no "ranks 2 and 3 keep ..." at 8.
        wrong = re.search(r"ranks 2 and 3 keep|\b4 shards|each of the 4 ranks", out)
        check("%s at --np %d: no narration that counts 4 ranks" % (name, n),
              n == 4 or wrong is None, wrong.group(0) if wrong else "")
    outside = next(n for n in range(1, 10) if n not in sizes)
    rc, out, err = distlab("scenario", "run", name, "--np", str(outside))
    check("%s refuses --np %d, a size it is not written for" % (name, outside),
          rc == 2 and err.count("\n") == 1 and "is written for" in err and out == "", out + err)
rc, out, err = distlab("exercise", "start", "reduce", "--np", "2", "--answers", "/dev/null")
check("exercise start refuses a size the exercise is not written for",
      rc == 2 and err == "distlab: reduce is written for 4 ranks (its `sizes:`), not 2: its "
      "checks and answers hold at those sizes only\n" and out == "", out + err)
rc, out, err = distlab("scenario", "run", "elastic-restart", "--np", "2")
check("a demo scenario refuses the flags its demo does not take",
      rc == 2 and "distlab demo elastic --help" in err and out == "", out + err)

# A scenario does what its summary says: reduce-ops runs every op it names.
with open(os.path.join(LIBRARY, "reduce-ops.scenario")) as f:
    _text = f.read()
_ops = re.search(r"^summary: ([a-z, ]+) and (\w+);", _text, re.M)
_ops = _ops.group(1).split(", ") + [_ops.group(2)] if _ops else []
check("reduce-ops runs and checks every op its summary names (%s)" % ", ".join(_ops),
      len(_ops) == 5 and all(re.search(r"^all_reduce \w+ op=%s\nexpect " % op, _text, re.M)
                             for op in _ops), _ops)

rc, out, err = distlab("scenario", "list")
rows = out.splitlines()
check("list: a header, then one row per scenario with its ranks and summary",
      rc == 0 and rows[0].split()[:2] == ["scenario", "ranks"] and len(rows) == len(names) + 1
      and any(r.split()[:2] == ["ping-pong", "2"] for r in rows), out + err)

rc, out, err = distlab("scenario", "show", "reduce")
check("show prints the scenario file", rc == 0 and out.startswith("title: Reduce"), out + err)

rc, out, err = distlab("scenario", "run", "all_reduce", "--step")
check("--step shows every step of the collective and still checks",
      rc == 0 and "step 1/" in out and "ok   expect" in out, out[-2000:] + err)

rc, out, err = distlab("scenario", "run", "no-such-lesson")
check("an unknown scenario is one line naming it",
      rc == 2 and "no scenario named 'no-such-lesson'" in err and err.count("\n") == 1, err)
rc, out, err = distlab("scenario", "run", "all-reduce")
check("a near-miss name suggests the scenario",
      rc == 2 and err == "distlab: no scenario named 'all-reduce'; did you mean 'all_reduce'?\n",
      err)
rc, out, err = distlab("exercise", "start", "nosuch")
check("an unknown exercise points to exercise list",
      rc == 2 and err == "distlab: no exercise named 'nosuch' (distlab exercise list shows them; "
      "a path to a file works too)\n", err)

# A flag given to a command that does not use it is refused, naming the
# flag (not its value); mpirun's -np is named whole.
EMPTY = tempfile.mkdtemp()
for args, said in [
        (["scenario", "run", "broadcast", "--answers", "x"],
         "--answers is for `distlab exercise start`"),
        (["scenario", "run", "broadcast", "--report=json"],
         "--report is for `distlab exercise start`"),
        (["exercise", "grade", "all_reduce", EMPTY, "--report", "json"],
         "--report is for `distlab exercise start`"),
        (["exercise", "grade", "all_reduce", EMPTY, "--answers", "/dev/null"],
         "--answers is for `distlab exercise start`"),
        (["exercise", "grade", "all_reduce", EMPTY, "--step"],
         "--step is for `distlab scenario run` and `distlab exercise start`"),
        (["exercise", "start", "all_reduce", "--csv", "x.csv", "--answers", "/dev/null"],
         "--csv is for `distlab exercise grade`"),
        (["scenario", "run", "all_reduce", "-np", "4"], "unknown flag '-np' (did you mean --np?)"),
        (["exercise", "start", "all_reduce", "--answers", EMPTY],
         "cannot read %s: Is a directory" % EMPTY),
        (["exercise", "start", "all_reduce", "--report", "json"],
         "--report json needs --answers FILE: the report takes the questions' place on standard "
         "output"),
        (["exercise", "grade", "elastic-restart", EMPTY, "--csv", "/dev/null"],
         "elastic-restart asks no questions: `distlab scenario run elastic-restart` runs it")]:
    rc, out, err = distlab(*args)
    check("%s: refused in one line (%s)" % (" ".join(args), said),
          rc == 2 and err == "distlab: %s\n" % said and out == "", out + err)
os.rmdir(EMPTY)

# A bare name is the library's even where the current folder holds a file
# of that name; a path (a '/', or .scenario at the end) is the file.
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "reduce"), "w") as f:
        f.write("hi\n")
    with open(os.path.join(tmp, "mine.scenario"), "w") as f:
        f.write("title: Mine\nsay hi\n")
    with open(os.path.join(tmp, "mine"), "w") as f:
        f.write("title: Mine\nsay hi\n")
    rc, out, err = distlab("scenario", "show", "reduce", cwd=tmp)
    check("a file ./reduce does not shadow the library's reduce",
          rc == 0 and out.startswith("title: Reduce"), out[:200] + err)
    rc, out, err = distlab("scenario", "show", "./reduce", cwd=tmp)
    check("./reduce is the file", rc == 1 and "./reduce:1: no `title:` line" in err, out + err)
    rc, out, err = distlab("scenario", "show", "mine.scenario", cwd=tmp)
    check("a name ending in .scenario is a file", rc == 0 and out.startswith("title: Mine"),
          out + err)
    # A path is a file: one that is not there, or is a folder, is said so
    # (it was "no scenario named '...'", a name the library never has).
    os.mkdir(os.path.join(tmp, "dir.scenario"))
    for path, said in [("./nosuch.scenario", "cannot read ./nosuch.scenario: No such file or "
                        "directory"),
                       ("dir.scenario", "dir.scenario is a folder, not a scenario file"),
                       ("./", "./ is a folder, not a scenario file")]:
        for cmd in (["scenario", "run"], ["scenario", "show"], ["exercise", "start"]):
            rc, out, err = distlab(*cmd, path, cwd=tmp)
            check("%s %s: one line saying what is wrong with the path" % (" ".join(cmd), path),
                  rc == 2 and err == "distlab: %s\n" % said, out + err)
    rc, out, err = distlab("scenario", "show", "mine", cwd=tmp)
    check("a bare name that is no scenario but a file here: one line naming its path",
          rc == 2 and err == "distlab: no scenario named 'mine' in the library; for the file "
          "here, give its path: ./mine\n", out + err)

with tempfile.TemporaryDirectory() as tmp:
    def write(name, text):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    wrong = write("wrong.scenario", "title: Wrong\nranks: 2\n\nt = arange(2) + rank\n"
                  "expect 1 t == [1, 2]\nexpect 0 t == [9, 9]\n")
    rc, out, err = distlab("scenario", "run", wrong)
    check("a failing expect exits 1, naming the file, the line and what the rank has",
          rc == 1 and "ok   expect 1 t == [1, 2]" in out
          and "FAIL %s:6: expect 0 t == [9, 9], but rank 0 has t = tensor([0, 1])" % wrong in err,
          out + err)

    failing = write("failing.scenario", "title: F\nranks: 2\nt = nosuchfn(2)\nsay never\n")
    rc, out, err = distlab("scenario", "run", failing)
    check("a line that fails stops the scenario, naming its line",
          rc == 1 and "%s:3: `t = nosuchfn(2)` failed" % failing in err and "never" not in out,
          out + err)

    check("the summary of a scenario stopped by a line says so, not that a check failed",
          err.endswith("failing: stopped at line 3\n") and "check failed" not in err, err)
    # Ranks that could not start (nccl without a GPU): the line is not to
    # blame, and the FAIL says so rather than name it as failed.
    rc, out, err = distlab("scenario", "run", failing, "--backend", "nccl")
    if "could not start" in err:
        check("ranks that could not start: the FAIL says so, not that the line failed",
              rc == 1 and "FAIL %s:3: the ranks could not start (said above)" % failing in err
              and "`t = nosuchfn(2)` failed" not in err
              and err.endswith("failing: stopped at line 3\n"), err)
    both = write("both.scenario", "title: F\nranks: 1\nt = zeros(1)\nexpect 0 t == [1]\n"
                 "t = nosuchfn(2)\n")
    rc, out, err = distlab("scenario", "run", both)
    check("a check failed, then a line: the summary counts the check only",
          rc == 1 and err.endswith("both: stopped at line 5; 1 check failed before it\n"), err)

    # A name rebound to a number or None: a check of it used to pass on the
    # last tensor it held.
    for value in ["5", "None"]:
        stale = write("stale.scenario", "title: S\nranks: 1\nt = arange(2)\nt = %s\n"
                      "expect 0 t == [0, 1]\n" % value)
        rc, out, err = distlab("scenario", "run", stale)
        check("expect on a name rebound to %s fails, not on its last tensor" % value,
              rc == 1 and "ok   expect" not in out
              and "FAIL %s:5: expect 0 t == [0, 1]: rank 0 has shown no tensor named t\n" % stale
              in err, out + err)

    block = write("block.scenario", "title: B\nranks: 1\nfor i in range(2):\n"
                  "    t = nosuchfn(2)\nsay never\n")
    rc, out, err = distlab("scenario", "run", block)
    check("a block that fails: one FAIL line, naming the block by its first line",
          rc == 1 and "FAIL %s:3: `for i in range(2): ...` failed; the scenario stops here\n"
          % block in err and "\n    t = nosuchfn(2)`" not in err, out + err)

    # 1001 values: every one compared (the print shows only six), and the
    # FAIL line, the value written cut short, ends with what the rank has.
    zeros, ones = ", ".join(["0"] * 1001), ", ".join(["1"] * 1001)
    long_expect = write("long.scenario", "title: L\nranks: 1\nt = zeros(1001)\n"
                        "expect 0 t == [%s]\nexpect 0 t == [%s]\n" % (zeros, ones))
    rc, out, err = distlab("scenario", "run", long_expect)
    check("expect on 1001 elements: the right value holds, the wrong one says what rank 0 has",
          rc == 1 and "ok   expect 0 t == [0, 0, 0, " in out and "(1001 values)" in out
          and err.count("FAIL") == 1 and "FAIL %s:5: " % long_expect in err
          and "(1001 values), but rank 0 has t = tensor([0., 0., 0.,  ..., 0., 0., 0.])\n" in err,
          out[-600:] + err[-600:])
    # A tensor torch prints over several lines is one line in the FAIL.
    wrapped = write("wrapped.scenario", "title: W\nranks: 1\nt = ones(2, 3)\n"
                    "expect 0 t == [1, 1, 1, 1, 1, 2]\n")
    rc, out, err = distlab("scenario", "run", wrapped)
    check("a FAIL of a 2-D tensor is one line",
          rc == 1 and "but rank 0 has t = tensor([[1., 1., 1.], [1., 1., 1.]])\n" in err,
          out[-600:] + err[-600:])

    for text, line, what in [
            ("title: M\nbackend: gloo\nsay hi\n", 2, "backend: 'gloo' is not a backend"),
            ("title: M\nexpect one t == [1]\n", 2, "'one' is not a rank"),
            ("title: M\nexpect 0 t [1]\n", 2, "expect needs RANK NAME == VALUE"),
            ("title: M\nexpect 0 t == [1, \n", 2, "cannot read the value"),
            ("title: M\nsay hi\nranks: 2\n", 3, "must come before the first step"),
            ("title: M\nranks: lots\n", 2, "'lots' is not a number of ranks"),
            ("say no title\n", 1, "no `title:` line"),
            ("title: M\ndemo: juggling\n", 2, "'juggling' is not a demo"),
            ("title: M\ndemo: elastic\nt = zeros(2)\n", 3, "holds `say` lines only"),
            # Metadata mistyped or given twice: refused before any rank
            # starts (`foo: bar` ran as a shell line, a parse error that
            # did not say why; a second title replaced the first).
            ("title: M\ntitle: N\nsay hi\n", 2, "a second `title:` line"),
            ("title: M\nRanks: 2\nsay hi\n", 2,
             "'Ranks:' is not a directive (title:, summary:, ranks:, sizes:, backend:, demo:)"),
            ("title: M\nfoo: bar\n", 2, "'foo:' is not a directive")]:
        bad = write("bad.scenario", text)
        rc, out, err = distlab("scenario", "run", bad)
        check("malformed (%s): refused with file:line" % what,
              rc == 1 and err.startswith("distlab: %s:%d: " % (bad, line)) and what in err
              and out == "", out + err)
    # A file saved with a UTF-8 byte order mark: the mark is no part of
    # its `title:` line (it read as a step, then `ranks:` as misplaced).
    bom = write("bom.scenario", "\ufefftitle: Marked\nranks: 1\n\nt = arange(2)\n"
                "expect 0 t == [0, 1]\n")
    rc, out, err = distlab("scenario", "run", bom)
    check("a scenario file with a UTF-8 byte order mark runs",
          rc == 0 and out.startswith("Marked (1 rank") and "ok   expect 0 t == [0, 1]" in out,
          out + err)
    bad = write("bad.scenario", "title: M\nbackend: gloo\nsay hi\n")
    rc, out, err = distlab("scenario", "show", bad)
    check("show refuses an unknown backend too, with file:line",
          rc == 1 and err.startswith("distlab: %s:2: backend: 'gloo'" % bad), out + err)

# ---- the elastic-restart demo ----

def demo_processes():
    """The processes the demo started that are still there."""
    left = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "elastic-demo" in cmd or "distlab-elastic-" in cmd:
            left.append(pid + ": " + cmd)
    return left


def elastic_demo():
    """The elastic-restart scenario, then the demo itself: every check of
    them looks at the processes and checkpoints of elastic runs, so they run
    one after the other, and nothing else starts any. On a thread beside the
    rest of the test, the demo's workers sleep 0.2 s an epoch (0.1 s is the
    least it takes), for a node to join in time on a loaded machine."""
    runs_whole("elastic-restart")
    rc, out, err = distlab("demo", "elastic", "--epochs", "8", "--sleep", "0.2", "--join-at", "2",
                           "--kill-at", "4")
    times = [l for l in out.splitlines() if "->" in l and l.rstrip().endswith(" s")]
    check("demo elastic: a node joins, a worker dies, every check holds, the two times printed",
          rc == 0 and out.count("ok   expect") == 7 and "FAIL" not in err and len(times) == 2
          and "resuming from checkpoint" in out and "world_size = 4" in out, out[-2500:] + err)
    check("... and no process of it is left", demo_processes() == [], "\n".join(demo_processes()))
    env = dict(os.environ, DISTLAB_SCENARIOS=LIBRARY)
    def start_demo():
        """The demo, once its workers train."""
        demo = subprocess.Popen([EXE, "demo", "elastic", "--sleep", "0.2"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL)
        end = time.monotonic() + 30
        while time.monotonic() < end and not any("train" in l for l in demo_processes()):
            time.sleep(0.1)
        time.sleep(1)
        return demo
    def finish(demo):
        try:
            return demo.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            demo.kill()
            return demo.communicate()


    def stopped_by(sig, rc, said):
        """sig to the demo stops it with rc and one line that says so; its
        processes and checkpoint folder are gone."""
        before = set(d for d in os.listdir("/tmp") if d.startswith("distlab-elastic-"))
        demo = start_demo()
        demo.send_signal(sig)
        out, err = finish(demo)
        left = set(d for d in os.listdir("/tmp") if d.startswith("distlab-elastic-")) - before
        check("demo elastic: %s stops it, in one line, with %d, nothing left behind" % (said, rc),
              demo.returncode == rc and "interrupted (%s)" % said in err and err.count("\n") == 1
              and demo_processes() == [] and not left,
              "rc %s, left %s %s\n%s" % (demo.returncode, demo_processes(), left, err))

    # Ctrl-C (SIGINT to the demo alone: its agents run in process groups of
    # their own) stops the agents and their workers and removes the checkpoint.
    stopped_by(signal.SIGINT, 130, "Ctrl-C")
    # SIGHUP (the terminal closed) stops it as SIGTERM does.
    stopped_by(signal.SIGHUP, 129, "SIGHUP")
    # Its agents gone early (killed): the checks say no failed round was seen,
    # not a round's unset numbers.
    demo = start_demo()
    for line in demo_processes():
        if " launch " in line:
            try:
                os.killpg(int(line.split(":")[0]), signal.SIGKILL)
            except OSError:
                pass
    out, err = finish(demo)
    check("demo elastic ended early: no failed round was seen, no unset numbers",
          demo.returncode == 1 and "the failover counted one restart (no failed round was seen)" in err
          and "restarts -1" not in err and demo_processes() == [],
          "rc %s\n%s" % (demo.returncode, err))
    rc, out, err = distlab("demo", "elastic", "--sleep", "0")
    check("demo elastic: a --sleep too short for node 1 to join is refused",
          rc == 2 and "too short" in err and err.count("\n") == 1, err)
    rc, out, err = distlab("demo", "elastic", "--sleep", "1e9")
    check("demo elastic: a --sleep longer than the workers take is refused",
          rc == 2 and "at most 86400" in err and err.count("\n") == 1, err)
    rc, out, err = distlab("demo", "juggling")
    check("demo: an unknown demo is one line naming it",
          rc == 2 and "no demo named 'juggling'" in err and err.count("\n") == 1, err)


# Code that never ends: the ranks' timeout fails it, in words for the
# exercise (the shell's "`respawn` restarts the ranks" is for its prompt,
# and code may not hold `respawn`). The exercise with a timeout of 1 s, on
# one rank: the loop spins one core until then.
def never_ends():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "a.txt")
        with open(path, "w") as f:
            f.write("while True: pass\n")
        quick = os.path.join(tmp, "ring.scenario")
        ring = os.path.join(LIBRARY, "ring-allreduce-code.scenario")
        with open(ring) as src, open(quick, "w") as dst:
            text = src.read()
            check("ring-allreduce-code sets its timeout (to 5 s)", "\nset timeout 5\n" in text)
            dst.write(text.replace("\nset timeout 5\n", "\nset timeout 1\n"))
        rc, out, err = distlab("exercise", "start", quick, "--np", "1", "--answers", path)
        failed = [l for l in out.splitlines() if l.startswith("  your code failed: ")]
        check("code that never ends: failed at the timeout, without the shell's advice",
              rc == 0 and failed and "no answer from rank" in failed[0]
              and "respawn" not in failed[0] and "score: 0/1" in out, out[-1500:] + err)


background = [in_background(elastic_demo), in_background(never_ends)]

# ---- exercises ----

def answers_of(name):
    with open(os.path.join(LIBRARY, name + ".scenario")) as f:
        return [l.split(None, 1)[1].strip() for l in f if l.startswith("answer ")]


def writes_in(name):
    with open(os.path.join(LIBRARY, name + ".scenario")) as f:
        return sum(1 for l in f if l.startswith("write "))


rc, out, err = distlab("exercise", "list")
listed = [r.split()[0] for r in out.splitlines()[1:]]
exercises = [n for n in names if answers_of(n) or writes_in(n)]
check("exercise list: the scenarios that ask, with their questions",
      rc == 0 and listed == exercises and len(exercises) >= 11
      and "ring-allreduce-code" in listed, out + err)

with tempfile.TemporaryDirectory() as tmp:
    for name in [n for n in exercises if not writes_in(n)]:
        right = os.path.join(tmp, name + ".right")
        wrong = os.path.join(tmp, name + ".wrong")
        with open(right, "w") as f:
            f.write("\n".join(answers_of(name)) + "\n")
        with open(wrong, "w") as f:
            f.write("nope\n" * len(answers_of(name)))
        n = len(answers_of(name))
        rc, out, err = distlab("exercise", "start", name, "--answers", right)
        check("%s: right answers score %d/%d" % (name, n, n),
              rc == 0 and out.rstrip().endswith("score: %d/%d" % (n, n)), out[-800:] + err)
        rc, out, err = distlab("exercise", "start", name, "--answers", wrong)
        check("%s: wrong answers score 0/%d, with the hint and the answer" % (name, n),
              rc == 0 and out.rstrip().endswith("score: 0/%d" % n) and "not quite" in out
              and "the answer: " in out, out[-800:] + err)

    rc, out, err = distlab("exercise", "start", "all_reduce", "--answers",
                           os.path.join(tmp, "all_reduce.wrong"), "--report", "json")
    try:
        rep = json.loads(out)
    except ValueError:
        rep = None
    check("--report json: per-question results and the score, alone on stdout",
          rc == 0 and rep is not None and rep["score"] == 0 and rep["max"] == 3
          and [q["correct"] for q in rep["questions"]] == [False] * 3
          and rep["questions"][0]["given"] == ["nope"] and rep["questions"][0]["answer"] == "[16, 20]",
          out + err)

    # An answer line too long to read is one wrong try: the next line
    # answers the next question (it used to be cut in two, every later
    # answer shifted by one).
    long_line = os.path.join(tmp, "long.txt")
    with open(long_line, "w") as f:
        f.write("[16, 20" + ", 0" * 100 + "]\n6\n[7, 8]\n")
    rc, out, err = distlab("exercise", "start", "all_reduce", "--answers", long_line)
    check("an answer over 255 bytes: not read, one line, and the others score (2/3)",
          rc == 0 and out.count("an answer is at most 255 bytes, and that one has 308: not read\n")
          == 1 and out.rstrip().endswith("score: 2/3"), out[-1500:] + err)

    klass = os.path.join(tmp, "class")
    os.mkdir(klass)
    with open(os.path.join(klass, "ada.txt"), "w") as f:
        f.write("16, 20\n6\ntensor([7, 8])\n")
    with open(os.path.join(klass, "bo.txt"), "w") as f:
        f.write("[16, 20]\n5\n")
    csv = os.path.join(tmp, "class.csv")
    rc, out, err = distlab("exercise", "grade", "all_reduce", klass, "--csv", csv)
    with open(csv) as f:
        table = f.read()
    check("grade: a line per learner and a CSV",
          rc == 0 and out.split() == ["ada", "3/3", "bo", "1/3"]
          and table == "learner,score,max,q1,q2,q3\nada,3,3,1,1,1\nbo,1,3,1,0,0\n", out + err + table)
    with open(os.path.join(klass, 'x,"y".txt'), "w") as f:
        f.write("[16, 20]\n")
    rc, out, err = distlab("exercise", "grade", "all_reduce", klass, "--csv", csv)
    with open(csv) as f:
        rows = list(__import__("csv").reader(f))
    check("grade: a learner's name with a comma and quotes is one CSV field",
          rc == 0 and len(rows) == 4 and rows[3][:2] == ['x,"y"', "1"] and len(rows[3]) == 6,
          rows)

    # Answers as learners word them: a rank, a unit, none, thousands with
    # commas, y, and torch's print of a tensor of the number asked for.
    for name, given, points in [
            ("scatter", ["rank 2"], 1),
            ("barrier", ["0 bytes"], 1),
            ("barrier", ["none"], 1),
            ("data-parallel-sgd", ["y", "6,000,000"], 2),
            ("data-parallel-sgd", ["y", "6 MB"], 2),
            ("data-parallel-sgd", ["y", "6000 KB"], 2),
            ("data-parallel-sgd", ["y", "6000000 B"], 2),
            ("data-parallel-sgd", ["y", "6,000,000 GB"], 1),
            ("parameter-server", ["96 bytes", "480", "30"], 3),
            ("parameter-server", ["96 KB", "480", "30 steps"], 2),
            ("reduce-ops", ["[2.5, 5.]", "tensor([-112, -112], dtype=torch.int8)"], 2),
            ("all_reduce", ["[16, 20]", "6 steps", "[7, 8]"], 3),
            ("all_reduce", ["[16, 20]", "6,000", "[7, 8]"], 2),
            # Words end a sentence or are quoted as a name: still the words
            # ("Yes." and "`output_splits`" scored nothing).
            ("data-parallel-sgd", ["Yes.", "6,000,000"], 2),
            ("data-parallel-sgd", ["No.", "6,000,000"], 1),
            ("moe-dispatch", ["9", "`output_splits`."], 2),
            ("moe-dispatch", ["9", "'input_splits'"], 1)]:
        path = os.path.join(tmp, "worded.txt")
        with open(path, "w") as f:
            f.write("\n".join(given) + "\n")
        rc, out, err = distlab("exercise", "start", name, "--answers", path)
        check("%s: %s scores %d" % (name, " / ".join(given), points),
              rc == 0 and "score: %d/" % points in out, out[-800:] + err)

    # The tolerance is relative, also below 1: 0 is not 9e-6.
    small = os.path.join(tmp, "small.scenario")
    with open(small, "w") as f:
        f.write("title: Small\nranks: 1\nask How small?\nanswer 0.000009\n")
    for given, points in [("0", 0), ("0.00000900001", 1), ("9e-6", 1), ("0.0000091", 0)]:
        path = os.path.join(tmp, "small.txt")
        with open(path, "w") as f:
            f.write(given + "\n")
        rc, out, err = distlab("exercise", "start", small, "--answers", path)
        check("answer 0.000009: %s scores %d" % (given, points),
              rc == 0 and "score: %d/1" % points in out, out[-800:] + err)

    def bad_file(text):
        path = os.path.join(tmp, "bad.scenario")
        with open(path, "w") as f:
            f.write(text)
        return path
    for text, line, what in [("title: Q\nsizes: 2-\n", 2, "is not a list of world sizes"),
                             ("title: Q\nranks: 300\n", 2, "not a number of ranks (1 to 256)"),
                             ("title: Q\nsizes: 2-300\n", 2, "is not a list of world sizes"),
                             ("title: Q\nranks: 4\nsizes: 2, 8\n", 1, "not among its `sizes:`"),
                             ("title: Q\nanswer 3\n", 2, "answer must follow an `ask` line"),
                             ("title: Q\nask Why?\nsay so\n", 2, "no `answer` line"),
                             ("title: Q\nask A?\nanswer 1\nanswer 2\n", 4, "a second answer")]:
        bad = bad_file(text)
        rc, out, err = distlab("exercise", "start", bad, "--answers", "/dev/null")
        check("malformed question (%s): refused with file:line" % what,
              rc == 1 and err.startswith("distlab: %s:%d: " % (bad, line)) and what in err, err)

rc, out, err = distlab("scenario", "run", "reduce", "--backend", "mpi")
check("a lesson that sets builtin algorithms, on another backend: refused at once, one line",
      rc == 2 and out == "" and err == "distlab: reduce chooses the builtin backend's algorithms "
      "(line 13: `set algo reduce chain`): it runs on the builtin backend only, not on mpi\n", err)

rc, out, err = distlab("exercise", "start", "reduce")
check("an exercise without a terminal or --answers is one clear line",
      rc == 2 and "--answers FILE" in err and err.count("\n") == 1, err)
rc, out, err = distlab("exercise", "start", "reduce", "--report", "xml", "--answers", "/dev/null")
check("--report takes json only", rc == 2 and "--report takes json" in err, err)


def on_pty(argv, answer, deadline=90):
    """Runs distlab on a terminal (a pty); answer(seen) gives the bytes to
    type, or None, each time more output has come. Returns the exit status
    and the output, or None where it did not end in time."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["DISTLAB_SCENARIOS"] = LIBRARY
        os.environ["NO_COLOR"] = "1"
        os.execv(EXE, [EXE] + argv)
    out, end = b"", time.monotonic() + deadline
    while time.monotonic() < end:
        if not select.select([fd], [], [], 0.2)[0]:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
        typed = answer(out.decode(errors="replace"))
        if typed:
            os.write(fd, typed.encode())
    # The terminal may close a moment before the process has ended.
    done, status = os.waitpid(pid, os.WNOHANG)
    while done == 0 and time.monotonic() < end:
        time.sleep(0.05)
        done, status = os.waitpid(pid, os.WNOHANG)
    if done == 0:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    os.close(fd)
    return (os.WEXITSTATUS(status) if done else None), out.decode(errors="replace")


def in_turn(prompts, replies):
    """Types the next of replies for every new occurrence of any of prompts."""
    replies, seen_prompts = iter(replies), [0]

    def answer(text):
        n = sum(text.count(p) for p in prompts)
        if n > seen_prompts[0]:
            seen_prompts[0] = n
            return next(replies, None)
        return None
    return answer


def each_prompt(prompts, reply):
    return in_turn(prompts, itertools.repeat(reply))


def in_order(pairs):
    """For each (text, reply) in turn: once text shows after the last one
    matched, types reply."""
    at = [0, 0]  # the next pair, and where in the output to look from

    def answer(text):
        typed = ""
        while at[0] < len(pairs) and pairs[at[0]][0] in text[at[1]:]:
            want, reply = pairs[at[0]]
            at[1] = text.index(want, at[1]) + len(want)
            at[0] += 1
            typed += reply
        return typed or None
    return answer


# ---- a `write` question: the ring all-reduce by hand ----

RING = "ring-allreduce-code"
with open(os.path.join(LIBRARY, RING + ".scenario")) as f:
    _text = f.read()
SOLUTION = "\n".join(l[4:] for l in _text.split("\nsolution\n")[1].split("\nsay ")[0].splitlines())
OFF_BY_ONE = SOLUTION.replace("r = (rank - k - 1 + world_size)", "r = (rank - k + world_size)", 1)
ALL_TO_ALL = """u = t.clone()
buf = zeros(world_size, dtype=int64)
for k in range(1, world_size):
    h = isend u dst=(rank + k) % world_size
    recv buf src=(rank + world_size - k) % world_size
    wait h
    t += buf"""
DEADLOCK = "buf = zeros(1, dtype=int64); recv buf src=(rank + 1) % world_size; t[0:1] = buf"


def report(tmp, name, answers, *extra):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(answers)
    start = time.monotonic()
    rc, out, err = distlab("exercise", "start", RING, "--answers", path, "--report", "json", *extra)
    took = time.monotonic() - start
    try:
        rep = json.loads(out)
    except ValueError:
        rep = None
    return rc, rep, out + err, took


def only_try(rep):
    q = rep["questions"][0] if rep and rep["questions"] else {}
    return q, (q.get("tries") or [{}])[0]


def sent(t):
    return [(r["messages"], r["bytes"]) for r in t.get("ranks", [])]


with tempfile.TemporaryDirectory() as tmp:
    rc, out, err = distlab("exercise", "start", RING, "--answers",
                           os.path.join(tmp, "none.txt"))
    check("code exercise: an answers file that is not there is one line",
          rc == 2 and "cannot read" in err and err.count("\n") == 1, out + err)

    with open(os.path.join(tmp, "right.txt"), "w") as f:
        f.write("code:\n" + SOLUTION + "\nend\n")
    rc, out, err = distlab("exercise", "start", RING, "--answers", os.path.join(tmp, "right.txt"))
    check("code exercise, right code: counted per rank (2(n-1) = 6 messages, 48 B) and scored",
          rc == 0 and out.rstrip().endswith("score: 1/1")
          and all("  rank %d sent 6 messages, 48 B\n" % r in out for r in range(4))
          and "  right: every rank's t is all_reduce(t)'s, within the limits" in out
          and "the solution:" not in out, out[-3000:] + err)

    rc, rep, text, _ = report(tmp, "right.txt", "code:\n" + SOLUTION + "\nend\n")
    q, t = only_try(rep)
    check("--report json, right code: kind, points, and per rank messages, bytes and matched",
          rc == 0 and rep["score"] == 1 and rep["max"] == 1 and q["kind"] == "write"
          and q["correct"] and q["points"] == 1 and q["check"] == "t == all_reduce(t)"
          and q["given"] == [SOLUTION] and t["ran"] and t["matched"] and t["within_limits"]
          and t["error"] is None and sent(t) == [(6, 48)] * 4
          and all(r["matched"] for r in t["ranks"]) and rep["checks_passed"], text)

    with open(os.path.join(tmp, "ring.dlab"), "w") as f:
        f.write(SOLUTION + "\n")
    rc, rep, text, _ = report(tmp, "at.txt", "@ring.dlab\n")
    check("an answers file's @FILE, beside it, is the code",
          rc == 0 and rep["score"] == 1 and sent(only_try(rep)[1]) == [(6, 48)] * 4, text)

    rc, rep, text, _ = report(tmp, "np3.txt", "@ring.dlab\n", "--np", "3")
    check("at --np 3: right, 2(3-1) = 4 messages and 32 B per rank",
          rc == 0 and rep["score"] == 1 and sent(only_try(rep)[1]) == [(4, 32)] * 3, text)

    rc, rep, text, _ = report(tmp, "off.txt", "code:\n" + OFF_BY_ONE + "\nend\n")
    q, t = only_try(rep)
    check("an off-by-one: it runs and is counted, but the sum is wrong: no points",
          rc == 0 and rep["score"] == 0 and t["ran"] and not t["matched"] and t["within_limits"]
          and sent(t) == [(6, 48)] * 4 and not any(r["matched"] for r in t["ranks"])
          and rep["checks_passed"], text)
    rc, out, err = distlab("exercise", "start", RING, "--answers", os.path.join(tmp, "off.txt"))
    check("... the output names what a rank holds and what all_reduce gives, then the hint, "
          "and the solution runs",
          rc == 0 and re.search(r"\n  rank 0: t = tensor\(\[[ 0-9,]+\]\), but all_reduce\(t\) "
                                r"gives tensor\(\[[ 0-9,]+\]\)\n", out) is not None
          and "  not quite: Reduce-scatter" in out
          and "  the solution:" in out and "ok   check t == all_reduce(t)" in out
          and out.rstrip().endswith("score: 0/1"), out[-3000:] + err)

    # The start is random, from a seed of each rank's own drawn for the
    # question: the same for both tries and the solution, another the next
    # time, and not one a rank can make up from another's rank.
    def wants(text):
        return re.findall(r"but all_reduce\(t\) gives (tensor\(\[[ 0-9,]+\]\))", text)
    _, out2, _ = distlab("exercise", "start", RING, "--answers", os.path.join(tmp, "off.txt"))
    check("a random start: the same within a question's run, another in the next",
          len(set(wants(out))) == 1 and len(set(wants(out2))) == 1
          and wants(out) != wants(out2), out[-1500:] + out2[-1500:])

    rc, rep, text, _ = report(tmp, "seeds.txt", "code:\nu = zeros(world_size, dtype=int64)\n"
                              "for k in range(world_size):\n    manual_seed(k)\n"
                              "    u += randint(0, 100, (world_size,))\nt = u\nend\n")
    q, t = only_try(rep)
    check("every rank's start made up without a message (a rank's default seed is its rank): "
          "wrong", rc == 0 and rep["score"] == 0 and t["ran"] and not t["matched"]
          and sent(t) == [(0, 0)] * 4, text)

    rc, rep, text, _ = report(tmp, "ref.txt", "t.zero_(); _builtin_t.zero_()\n")
    q, t = only_try(rep)
    check("code that writes into the checker's copy of t is not run",
          rc == 0 and rep["score"] == 0 and t["refused"] and not t["ran"], text)

    rc, rep, text, _ = report(tmp, "copy.txt", "t[:] = _builtin_t\n")
    q, t = only_try(rep)
    check("code that reads the checker's copy of the answer is not run",
          rc == 0 and rep["score"] == 0 and t["refused"]
          and t["error"] == "line 1: names that begin with _builtin_ are the checker's", text)

    rc, rep, text, _ = report(tmp, "into.txt", "out = zeros(world_size * world_size, dtype=int64); "
                              "dist.all_gather_into_tensor(out, t); "
                              "t = out.reshape(world_size, world_size).sum(0)\n")
    q, t = only_try(rep)
    check("torch's other form of a forbidden collective is ruled out too, named as such",
          rc == 0 and rep["score"] == 0 and t["refused"]
          and t["error"] == "line 1: it calls all_gather_into_tensor, a form of all_gather, "
          "which this exercise rules out", text)

    rc, rep, text, _ = report(tmp, "builtin.txt", "all_reduce t\n")
    q, t = only_try(rep)
    check("the built-in all_reduce is ruled out: not run, one line naming it",
          rc == 0 and rep["score"] == 0 and t["refused"] and not t["ran"]
          and t["error"] == "line 1: it calls all_reduce, which this exercise rules out"
          and t["ranks"] == [], text)

    rc, rep, text, _ = report(tmp, "bytes.txt", "code:\n" + ALL_TO_ALL + "\nend\n")
    q, t = only_try(rep)
    check("a right sum that sends the whole tensor is over the bytes limit: no points",
          rc == 0 and rep["score"] == 0 and t["matched"] and not t["within_limits"]
          and sent(t) == [(3, 96)] * 4, text)

    rc, rep, text, _ = report(tmp, "parse.txt", "t = (1 +\n")
    q, t = only_try(rep)
    check("code that does not parse: not run, with its line and column",
          rc == 0 and rep["score"] == 0 and t["refused"]
          and t["error"].startswith("it does not parse: line 1, column 9: "), text)

    rc, rep, text, _ = report(tmp, "quit.txt", "quit\n")
    check("a session command in the code is refused, not run",
          rc == 0 and rep["score"] == 0 and "command of the session" in only_try(rep)[1]["error"],
          text)

    rc, rep, text, took = report(tmp, "deadlock.txt", DEADLOCK + "\n")
    q, t = only_try(rep)
    check("a recv that nothing matches fails within the scenario's timeout (5 s), one line, "
          "and the solution still runs (%.1f s)" % took,
          rc == 0 and rep["score"] == 0 and not t["ran"] and not t["refused"]
          and "rank " in (t["error"] or "") and "\n" not in (t["error"] or "\n")
          and took < 20 and sent(t) == [(0, 0)] * 4 and rep["checks_passed"], text)

    rc, rep, text, _ = report(tmp, "barrier.txt", "on 0: barrier\n")
    error = only_try(rep)[1].get("error") or ""
    check("a failure reported in several lines is one line that reads whole",
          rc == 0 and error.startswith("barrier #")
          and "; nothing was sent: rank 0 barrier" in error
          and "; rank 1 not calling it" in error and not error.endswith(":")
          and "\n" not in error, text)

    # Code a line of 5000 bytes (the lines used to be cut at 4096, the
    # rest read as the next answer).
    long_code = "; ".join(["t += 0"] * 700)
    rc, rep, text, _ = report(tmp, "longcode.txt", long_code + "\n")
    q, t = only_try(rep)
    check("a line of code of %d bytes runs whole" % len(long_code),
          rc == 0 and t.get("code") == long_code and t.get("ran") and len(q["tries"]) == 1, text)

    rc, rep, text, _ = report(tmp, "open.txt", "code:\n" + SOLUTION + "\n")
    check("a `code:` block without its `end`: a wrong try saying so",
          rc == 0 and rep["score"] == 0 and "no `end` line" in only_try(rep)[1]["error"], text)

    rc, rep, text, _ = report(tmp, "empty.txt", "")
    check("no answer: no points, no tries, the solution's checks still hold",
          rc == 0 and rep["score"] == 0 and rep["questions"][0]["tries"] == []
          and rep["checks_passed"], text)

    for np in ("2", "3", "8"):
        rc, out, err = distlab("scenario", "run", RING, "--np", np)
        n = int(np)
        check("scenario run %s --np %s: the solution holds, %d messages per rank" % (RING, np,
                                                                                   2 * (n - 1)),
              rc == 0 and "ok   check t == all_reduce(t) on every rank" in out
              and "  rank %d sent %d messages, %d B\n" % (n - 1, 2 * (n - 1), 16 * (n - 1)) in out,
              out[-1500:] + err)

    # A class: inline code, a file in a subfolder (grade reads only the
    # folder's own files), the built-in collective.
    klass = os.path.join(tmp, "class")
    os.makedirs(os.path.join(klass, "code"))
    with open(os.path.join(klass, "ada.txt"), "w") as f:
        f.write("code:\n" + SOLUTION + "\nend\n")
    with open(os.path.join(klass, "code", "cy.dlab"), "w") as f:
        f.write(SOLUTION + "\n")
    with open(os.path.join(klass, "cy.txt"), "w") as f:
        f.write("@code/cy.dlab\n")
    with open(os.path.join(klass, "bo.txt"), "w") as f:
        f.write("all_reduce t\n")
    csv = os.path.join(tmp, "ring.csv")
    rc, out, err = distlab("exercise", "grade", RING, klass, "--csv", csv)
    with open(csv) as f:
        table = f.read()
    check("grade: code answers, inline and @FILE",
          rc == 0 and out.split() == ["ada", "1/1", "bo", "0/1", "cy", "1/1"]
          and table == "learner,score,max,q1\nada,1,1,1\nbo,0,1,0\ncy,1,1,1\n", out + err + table)

    # ask and write in one exercise: the answers file goes question by question.
    mixed = os.path.join(tmp, "mixed.scenario")
    with open(mixed, "w") as f:
        f.write("title: Mixed\nranks: 2\nset echo off\n"
                "ask How many ranks are there?\nanswer 2\n"
                "write Sum both ranks' t into each with isend/recv.\n"
                "given t = arange(2) + 2 * rank\n"
                "check t == all_reduce(t)\nlimit messages 1\nforbid all_reduce\n"
                "solution\n"
                "    u = zeros(2, dtype=int64)\n"
                "    h = isend t dst=1 - rank\n"
                "    recv u src=1 - rank\n"
                "    wait h\n"
                "    t += u\n"
                "expect * t == [2, 4]\n"
                "ask And now?\nanswer yes\n")
    code = "u = zeros(2, dtype=int64); h = isend t dst=1 - rank; recv u src=1 - rank; wait h; t += u"
    answers = os.path.join(tmp, "mixed.txt")
    with open(answers, "w") as f:
        f.write("2\n%s\nyes\n" % code)
    rc, out, err = distlab("exercise", "start", mixed, "--answers", answers, "--report", "json")
    rep = json.loads(out) if rc == 0 else None
    check("ask and write in one exercise: a line, then code, then a line; 3/3",
          rep is not None and rep["score"] == 3
          and [q["kind"] for q in rep["questions"]] == ["ask", "write", "ask"]
          and sent(rep["questions"][1]["tries"][0]) == [(1, 16)] * 2 and rep["checks_passed"],
          out + err)
    with open(answers, "w") as f:
        f.write("2\nt = t * 0\nyes\n")
    rc, out, err = distlab("exercise", "start", mixed, "--answers", answers)
    check("... a wrong code answer: the solution runs, so the scenario's own expect still holds",
          rc == 0 and "ok   expect 0 t == [2, 4]" in out and out.rstrip().endswith("score: 2/3"),
          out + err)

    # A tensor large enough to print in part (3000 elements, and one whose
    # cut hides a wrong element) is still compared whole.
    big = os.path.join(tmp, "big.scenario")
    with open(big, "w") as f:
        f.write("title: Big\nranks: 2\nset echo off\n"
                "write Sum both ranks' t into each with isend/recv.\n"
                "given t = randint(0, 100, (3000,))\n"
                "check t == all_reduce(t)\nforbid all_reduce\n"
                "solution\n"
                "    u = zeros(3000, dtype=int64)\n"
                "    h = isend t dst=1 - rank\n"
                "    recv u src=1 - rank\n"
                "    wait h\n"
                "    t += u\n")
    big_code = ("u = zeros(3000, dtype=int64); h = isend t dst=1 - rank; recv u src=1 - rank; "
                "wait h; t += u")
    for code, score in [(big_code, 1), (big_code + "; t[1500] += 1", 0)]:
        with open(answers, "w") as f:
            f.write(code + "\n")
        rc, out, err = distlab("exercise", "start", big, "--answers", answers, "--report", "json")
        rep = json.loads(out) if rc == 0 else None
        check("a write question on 3000 elements: %s" % ("right" if score else "one wrong "
                                                         "element that a print does not show"),
              rep is not None and rep["score"] == score
              and sent(rep["questions"][0]["tries"][0]) == [(1, 24000)] * 2, out + err)

    # One past what a snapshot carries whole is refused in one line.
    with open(big, "w") as f:
        f.write("title: Huge\nranks: 2\nset echo off\nwrite Sum t.\n"
                "given t = ones(9000000, dtype=int64) * (rank + 1)\n"
                "check t == all_reduce(t)\nsolution\n    all_reduce t\n")
    with open(answers, "w") as f:
        f.write("all_reduce t\n")
    rc, out, err = distlab("exercise", "start", big, "--answers", answers)
    check("a write question on 69 MiB a rank: refused, saying the most it compares",
          rc == 1 and "check: t holds 69 MiB on a rank, and a write question compares at most "
          "64 MiB; the scenario stops here" in err, out + err)

    # A send ruled out is ruled out in a P2POp too, by position or keyword.
    nosend = os.path.join(tmp, "nosend.scenario")
    with open(nosend, "w") as f:
        f.write("title: No send\nranks: 2\nset echo off\n"
                "write Make t every rank's sum without a send.\n"
                "given t = arange(2) + 2 * rank\n"
                "check t == all_reduce(t)\nforbid send\n"
                "solution\n"
                "    all_reduce t\n")
    for op in ["dist.isend", "op=dist.isend"]:
        with open(answers, "w") as f:
            f.write("u = zeros(2, dtype=int64); reqs = dist.batch_isend_irecv("
                    "[dist.P2POp(%s, tensor=t, peer=1 - rank), "
                    "dist.P2POp(dist.irecv, u, 1 - rank)]); reqs[0].wait(); reqs[1].wait(); "
                    "t += u\n" % op)
        rc, out, err = distlab("exercise", "start", nosend, "--answers", answers,
                               "--report", "json")
        rep = json.loads(out) if rc == 0 else None
        t = only_try(rep)[1] if rep else {}
        check("forbid send: P2POp(%s, ...) is not run" % op,
              rep is not None and rep["score"] == 0 and t["refused"]
              and t["error"] == "line 1: it calls isend, a form of send, which this exercise "
                                "rules out", out + err)

    # Malformed `write` directives are refused before any rank starts.
    for text, line, what in [
            ("title: W\ngiven t = 1\n", 2, "given must follow a `write` line"),
            ("title: W\nwrite W\ncheck t == all_reduce(t)\n", 2, "has no `solution`"),
            ("title: W\nwrite W\nsolution\n    t = t\n", 2, "has no `check` line"),
            ("title: W\nwrite W\ncheck t all_reduce(t)\n", 3, "check needs NAME == COLLECTIVE"),
            ("title: W\nwrite W\nlimit bytes 2 * n\n", 3, "'n' is not known here"),
            ("title: W\nwrite W\nforbid frob\n", 3, "'frob' is no command"),
            ("title: W\nwrite W\ncheck t == all_reduce(t)\nforbid all_reduce\nsolution\n"
             "    all_reduce t\n", 5, "the solution: line 1: it calls all_reduce")]:
        bad = os.path.join(tmp, "bad.scenario")
        with open(bad, "w") as f:
            f.write(text)
        rc, out, err = distlab("exercise", "start", bad, "--answers", "/dev/null")
        check("malformed write (%s): refused with file:line" % what,
              rc == 1 and err.startswith("distlab: %s:%d: " % (bad, line)) and what in err
              and out == "", out + err)

    # On a terminal: a first try that is ruled out, then :load FILE.
    status, shown = on_pty(["exercise", "start", RING], in_order([
        ("reads a file).\r\n> ", "all_reduce t\n"), ("... ", "\n"), ("rules out", ""),
        ("\r\n> ", ":load %s\n" % os.path.join(tmp, "ring.dlab"))]), deadline=60)
    shown = shown.replace("\r\n", "\n")
    ok = status is not None
    check("on a terminal: a wrong block, then :load FILE at the second try scores 0.5",
          ok and status == 0 and "your code was not run" in shown
          and "  right (second try)" in shown and "score: 0.5/1" in shown, shown[-2500:])


# At np 1 all_reduce(t) is t itself: code that rebinds t to a number was
# right, compared with the tensor the `given` line showed.
with tempfile.TemporaryDirectory() as tmp:
    for code in ["t = 5", "t = None", "del t"]:
        path = os.path.join(tmp, "a.txt")
        with open(path, "w") as f:
            f.write(code + "\n")
        rc, out, err = distlab("exercise", "start", RING, "--np", "1", "--answers", path)
        check("np 1, `%s`: wrong, t holding no tensor" % code,
              rc == 0 and "score: 0/1" in out
              and re.search(r"\n  rank 0: t holds no tensor, but all_reduce\(t\) gives tensor", out)
              is not None, out[-1500:] + err)


# A second wrong try at a code question gets no hint again, as at an `ask`.
rc, out = on_pty(["exercise", "start", RING], in_order([
    ("reads a file).\r\n> ", "all_reduce t\n"), ("... ", "\n"), ("rules out", ""),
    ("\r\n> ", "all_reduce t\n"), ("... ", "\n")]), deadline=60)
out = (out or "").replace("\r\n", "\n")
check("a code question: the hint after the first wrong try only",
      rc == 0 and out.count("  not quite: Reduce-scatter: in step k") == 1
      and out.count("  not quite\n") == 1 and "score: 0/1" in out, out[-2500:])


# --step on a terminal: Enter runs each step, and the scenario goes on to
# its end (it used to ask for Enter again and again at the same step).
rc, out = on_pty(["scenario", "run", "all_reduce", "--step"],
                 each_prompt(["(Enter runs the next step", "(Enter to go on)"], "\n"))
check("--step on a terminal: Enter steps each collective through to the scenario's end",
      rc == 0 and out.count("step 6/6") == 2 and "ok   expect 3 t == tensor([7, 8])" in out,
      out[-2500:])
rc, out = on_pty(["scenario", "run", "all_reduce", "--step"],
                 each_prompt(["(Enter runs the next step", "(Enter to go on)"], "c\n"))
check("--step on a terminal: c runs the rest of each collective",
      rc == 0 and out.count("steps 1-6 ran") == 2 and "ok   expect 3 t == tensor([7, 8])" in out,
      out[-2500:])

# At a question on a terminal, what is no answer costs no try: `hint`, and
# words where numbers are asked for; `quit` leaves, as a stopped exercise.
rc, out = on_pty(["exercise", "start", "all_reduce"],
                 in_turn(["(Enter to go on)", "\n> "],
                         ["\n", "hint\n", "sixteen\n", "rank 3 holds [16, 20]\n", "[16, 20]\n",
                          "quit\n"]))
check("an exercise on a terminal: hint and words are no tries, quit leaves",
      rc == 1 and out.count("answer with numbers, such as 6 or [1, 2]") == 2
      and "  right\r\n" in out and "(left the exercise)" in out
      and "score: 1/3" in out, out[-2500:])


def lines_of_kind(name, word):
    with open(os.path.join(LIBRARY, name + ".scenario")) as f:
        return [i + 1 for i, l in enumerate(f.read().split("\n")) if l.startswith(word + " ")]


left = re.search(r"all_reduce: left at line (\d+)", out)
check("... and says it left at the question's line, not the last shell line's",
      left is not None and int(left.group(1)) in lines_of_kind("all_reduce", "ask"), out[-800:])

# At a code question on a terminal too: `hint` shows the hint and `quit`
# leaves, neither a try (they used to run as code, two wrong tries).
rc, out = on_pty(["exercise", "start", RING],
                 in_turn(["reads a file).\r\n> ", "(quit leaves)\r\n> "], ["hint\n", "quit\n"]))
left = re.search(r"left at line (\d+)", out)
check("a code question on a terminal: hint shows the hint, quit leaves, no try is used",
      rc == 1 and "  Reduce-scatter: in step k" in out and "(left the exercise)" in out
      and "your code failed" not in out and "the solution:" not in out
      and left is not None and int(left.group(1)) == lines_of_kind(RING, "write")[0]
      and "score: 0/1" in out, out[-2500:])

def on_pty_piped(argv, answer, deadline=60):
    """As on_pty, with standard output a pipe (`| tee log`): the terminal
    is standard input and standard error; what comes back is the pipe's."""
    master, slave = os.openpty()
    env = dict(os.environ, DISTLAB_SCENARIOS=LIBRARY, NO_COLOR="1")
    proc = subprocess.Popen([EXE] + argv, stdin=slave, stdout=subprocess.PIPE, stderr=slave,
                            env=env, start_new_session=True)
    os.close(slave)
    out, end, fds = b"", time.monotonic() + deadline, [proc.stdout.fileno(), master]
    while time.monotonic() < end and proc.stdout.fileno() in fds:
        for fd in select.select(fds, [], [], 0.2)[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                fds.remove(fd)
            elif fd != master:  # the terminal's echo and errors are not kept
                out += data
                typed = answer(out.decode(errors="replace"))
                if typed:
                    os.write(master, typed.encode())
    try:
        proc.wait(timeout=max(0.1, end - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    os.close(master)
    proc.stdout.close()
    return proc.returncode if time.monotonic() < end else None, out.decode(errors="replace")


def per_prompt(replies):
    """For each new occurrence of a prompt (a key of replies), types its next reply."""
    seen = dict.fromkeys(replies, 0)

    def answer(text):
        typed = ""
        for prompt, more in replies.items():
            while seen[prompt] < text.count(prompt):
                seen[prompt] += 1
                typed += next(more, "")
        return typed or None
    return answer


# On a terminal with standard output a pipe: the questions go down the
# pipe and are answered at the terminal (a line too long to read there
# is no try).
rc, out = on_pty_piped(["exercise", "start", "all_reduce"], per_prompt({
    "(Enter to go on)": itertools.repeat("\n"),
    "\n> ": iter(["x" * 300 + "\n", "[16, 20]\n", "6\n", "[7, 8]\n"])}))
check("exercise start | tee: asked at the terminal, 3/3",
      rc == 0 and "? After `all_reduce t`, what does rank 3 hold?" in out
      and "that one has 300: that was no try" in out
      and out.count("  right\n") == 3 and out.rstrip().endswith("score: 3/3"), out[-2500:])

# --report json on a terminal, no --answers: refused at once (it used to
# wait for answers to questions it printed nowhere).
rc, out = on_pty(["exercise", "start", "all_reduce", "--report", "json"], lambda text: None,
                 deadline=20)
check("--report json without --answers on a terminal: refused in one line",
      rc == 2 and "--report json needs --answers FILE" in out and out.count("\n") == 1, out)

# Ctrl-D where no line was ended: what comes next starts a line of its own
# (it was glued to the prompt: "(Enter to go on) ? After ...").
rc, out = on_pty(["exercise", "start", "all_reduce"], in_order([("(Enter to go on)", "\x04")]),
                 deadline=30)
check("Ctrl-D at an exercise's pause: the prompt's line ends, then the exercise is left",
      rc == 1 and "(Enter to go on) \r\n? After `all_reduce t`" in out
      and "(left the exercise)" in out, out[-1500:])
rc, out = on_pty(["exercise", "start", "all_reduce"], in_order([
    ("(Enter to go on)", "\n"), ("\r\n> ", "[1,\x04"), ("[1,", "\x04")]), deadline=30)
check("Ctrl-D after half an answer: the refusal starts its own line",
      rc == 1 and "[1,\r\n  answer with numbers" in out and "(left the exercise)" in out,
      out[-1500:])

# `quit` (or `q`) at a pause or at a step's prompt leaves there, as at a
# question; it used to go on as Enter does (a step's prompt ran a step).
rc, out = on_pty(["exercise", "start", "all_reduce"], in_order([("(Enter to go on)", "quit\n")]),
                 deadline=30)
check("quit at an exercise's pause leaves it: the questions are not asked",
      rc == 1 and "  (left the exercise)" in out and "? After" not in out
      and "all_reduce: left at line 9, before its end" in out and "score: 0/3" in out,
      out[-1500:])
rc, out = on_pty(["scenario", "run", "all_reduce", "--step"], in_order([
    ("(Enter to go on)", "\n"), ("(Enter runs the next step, c the rest)", "q\n")]), deadline=30)
check("q at a step's prompt leaves the scenario, no step run",
      rc == 1 and "  (left the scenario)" in out and "step 1/6" not in out
      and "all_reduce: left at line 20, before its end" in out, out[-1500:])

# :load with no file, or a folder: said as such, and no try is used.
status, shown = on_pty(["exercise", "start", RING], in_order([
    ("reads a file).\r\n> ", ":load\n"), ("\r\n> ", ":load /\n"), ("\r\n> ", "quit\n")]),
    deadline=30)
shown = (shown or "").replace("\r\n", "\n")
check(":load alone and :load of a folder: one line each that names the problem, no try",
      status == 1 and "  :load needs a file: :load FILE\n" in shown
      and "  cannot read /: Is a directory\n" in shown and "Input/output error" not in shown
      and "not quite" not in shown and "score: 0/1" in shown, shown[-1500:])

# An answers file saved with a UTF-8 byte order mark (Notepad's way): the
# mark is no part of the first answer, which it made wrong.
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "ada.txt"), "wb") as f:
        f.write(b"\xef\xbb\xbf[16, 20]\r\n6\r\n[7, 8]\r\n")
    rc, out, err = distlab("exercise", "grade", "all_reduce", tmp)
    check("grade: an answers file with a byte order mark scores 3/3",
          rc == 0 and out.split() == ["ada", "3/3"], out + err)
    rc, out, err = distlab("exercise", "start", "all_reduce", "--answers",
                           os.path.join(tmp, "ada.txt"))
    check("start --answers: a byte order mark is no part of the first answer",
          rc == 0 and "score: 3/3" in out, out[-800:] + err)
    # A code file that @ names, saved so too: the mark did not parse.
    with open(os.path.join(tmp, "ring.dlab"), "wb") as f:
        f.write(b"\xef\xbb\xbf" + SOLUTION.encode())
    with open(os.path.join(tmp, "bo.txt"), "w") as f:
        f.write("@ring.dlab\n")
    rc, out, err = distlab("exercise", "start", RING, "--answers", os.path.join(tmp, "bo.txt"))
    check("@FILE: a code file with a byte order mark runs, and is right",
          rc == 0 and "score: 1/1" in out and "unexpected character" not in out,
          out[-800:] + err)

# A folder with no answers files is no class of none: one line, exit 2.
with tempfile.TemporaryDirectory() as tmp:
    os.mkdir(os.path.join(tmp, "code"))
    rc, out, err = distlab("exercise", "grade", "all_reduce", tmp)
    check("grade of a folder without answers files: refused in one line",
          rc == 2 and out == ""
          and err == "distlab: %s holds no answers files: put one file per learner in it\n"
          % tmp, out + err)

for t in background:
    t.join()
print("%d failed" % len(failures) if failures else "all passed")
sys.exit(1 if failures else 0)
