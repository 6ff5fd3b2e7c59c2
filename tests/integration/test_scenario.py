#!/usr/bin/env python3
"""The scenario library through the real binary: every scenario in
scenarios/ runs non-interactively on live ranks and its `expect` lines pass;
a failing `expect` exits 1 naming the file and line; a malformed file is
refused with its file and line before any rank starts; `list` and `show`;
`--step` shows a collective step by step. Exercises: each is taken with a
right and a wrong answers file and scored; --report json; a class graded
from a folder of answer files, with its CSV.

usage: test_scenario.py DISTLAB SCENARIO_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

EXE, LIBRARY = sys.argv[1], sys.argv[2]
failures = []


def check(name, cond, detail=""):
    print(("ok    " if cond else "FAIL  ") + name)
    if not cond:
        failures.append(name)
        if detail:
            print("      " + detail.replace("\n", "\n      "))


def distlab(*args):
    env = dict(os.environ, DISTLAB_SCENARIOS=LIBRARY)
    p = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=120, env=env,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


names = sorted(f[:-9] for f in os.listdir(LIBRARY) if f.endswith(".scenario"))
check("the library has a scenario per collective, ping-pong, and the classic lessons",
      {"ping-pong", "broadcast", "scatter", "gather", "reduce", "all_gather", "all_reduce",
       "reduce_scatter", "all_to_all", "barrier", "ring-allreduce", "parameter-server",
       "data-parallel-sgd", "sync-batchnorm", "reduce-ops", "subgroups"} <= set(names), str(names))

for name in names:
    rc, out, err = distlab("scenario", "run", name)
    expects = out.count("\nok   expect ")
    check("%s runs and its %d expectations hold" % (name, expects),
          rc == 0 and expects > 0 and "FAIL" not in err, out[-1500:] + err)

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

    for text, line, what in [
            ("title: M\nexpect one t == [1]\n", 2, "'one' is not a rank"),
            ("title: M\nexpect 0 t [1]\n", 2, "expect needs RANK NAME == VALUE"),
            ("title: M\nexpect 0 t == [1, \n", 2, "cannot read the value"),
            ("title: M\nsay hi\nranks: 2\n", 3, "must come before the first step"),
            ("title: M\nranks: lots\n", 2, "'lots' is not a number of ranks"),
            ("say no title\n", 1, "no `title:` line")]:
        bad = write("bad.scenario", text)
        rc, out, err = distlab("scenario", "run", bad)
        check("malformed (%s): refused with file:line" % what,
              rc == 1 and err.startswith("distlab: %s:%d: " % (bad, line)) and what in err
              and out == "", out + err)

# ---- exercises ----

def answers_of(name):
    with open(os.path.join(LIBRARY, name + ".scenario")) as f:
        return [l.split(None, 1)[1].strip() for l in f if l.startswith("answer ")]


rc, out, err = distlab("exercise", "list")
listed = [r.split()[0] for r in out.splitlines()[1:]]
exercises = [n for n in names if answers_of(n)]
check("exercise list: the scenarios that ask, with their questions",
      rc == 0 and listed == exercises and len(exercises) >= 10, out + err)

with tempfile.TemporaryDirectory() as tmp:
    for name in exercises:
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

    def bad_file(text):
        path = os.path.join(tmp, "bad.scenario")
        with open(path, "w") as f:
            f.write(text)
        return path
    for text, line, what in [("title: Q\nanswer 3\n", 2, "answer must follow an `ask` line"),
                             ("title: Q\nask Why?\nsay so\n", 2, "no `answer` line"),
                             ("title: Q\nask A?\nanswer 1\nanswer 2\n", 4, "a second answer")]:
        bad = bad_file(text)
        rc, out, err = distlab("exercise", "start", bad, "--answers", "/dev/null")
        check("malformed question (%s): refused with file:line" % what,
              rc == 1 and err.startswith("distlab: %s:%d: " % (bad, line)) and what in err, err)

rc, out, err = distlab("exercise", "start", "reduce")
check("an exercise without a terminal or --answers is one clear line",
      rc == 2 and "--answers FILE" in err and err.count("\n") == 1, err)
rc, out, err = distlab("exercise", "start", "reduce", "--report", "xml", "--answers", "/dev/null")
check("--report takes json only", rc == 2 and "--report takes json" in err, err)

print("%d failed" % len(failures) if failures else "all passed")
sys.exit(1 if failures else 0)
