#!/usr/bin/env python3
"""The examples of the README and docs/*.md, run as written: every fenced
block that shows a `$ distlab ...` command or a `distlab> ` shell session
is run with the real binary (a shell session on 4 ranks, or on as many as
its output shows when it elides none), and what it prints must begin with
what the page shows, line for line. A line of just `...` in an output
stands for any number of lines, and so does a command's output that the
page does not show; the pages write process ids as 4242. Blocks whose
output depends on the machine (timings, GPUs) are listed in SKIP with the
reason, and blocks that go on from the text above them get SETUP's lines
first.

usage: test_docs.py DISTLAB
"""
import glob
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures  # noqa: E402

EXE = os.path.abspath(sys.argv[1])
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# (page, first line of the block): why it is not run.
SKIP = {
    ("docs/guide.md", "$ distlab bench all_reduce --np 2 -b 8 -e 64M -f 2"):
        "timings of the machine that measured them",
    ("docs/guide.md", "$ distlab run all_reduce --np 4 --algo ring --count 4 --trace ring.json"):
        "writes a file; tests/integration/test_trace.py checks traces",
    ("docs/guide.md", "$ distlab bench all_reduce -b 64G -e 64G --np 4"):
        "the memory this machine has",
    ("docs/guide.md", "$ distlab launch --nnodes 1:2 --nproc-per-node 2 --max-restarts 3 --rdzv-id demo \\"):
        "process ids and times; tests/integration/test_launch.py runs launch",
    ("docs/backends.md", "$ distlab run all_reduce --np 2 --backend mpi"):
        "what a build without OpenMPI says",
    ("docs/backends.md", "$ distlab backends"): "what this machine's GPUs and libraries allow",
    ("docs/backends.md", "$ distlab backends --ascii"): "what this machine's GPUs and libraries allow",
    ("docs/backends.md", "$ distlab backends --json"): "what this machine's GPUs and libraries allow",
}

# (page, first line of the block): shell lines run before it, for a block
# that goes on from the page's text above it (their output is not checked).
SETUP = {
    ("docs/guide.md", "distlab> set"): ["set algo all_reduce ring", "step on"],
    ("docs/guide.md", "distlab> on 0: all_reduce t; on 1: broadcast t src=1"): ["t = rand(4)"],
    ("docs/guide.md", "distlab> on 0: recv t src=1"): ["t = rand(4)"],
}

PROMPT = re.compile(r"^distlab(?: \[[^\]]*\])?> ?(.*)$")


def run(argv, stdin_text="", env=None):
    """argv's standard output and error together, as a terminal shows them,
    run in a scratch directory; its process group is killed after 120 s."""
    with tempfile.TemporaryDirectory() as cwd:
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True,
                             env=dict(os.environ, **(env or {})),
                             text=True, errors="replace")
        try:
            out, _ = p.communicate(stdin_text, timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            out += "\n[killed after 120 s]"
    return out


def blocks(page):
    text = open(os.path.join(ROOT, page)).read()
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M)


def line_match(want, got):
    """A line of a page against a line printed: the pages write every
    process id as 4242."""
    if "4242" not in want:
        return want == got
    return re.fullmatch(r"\d+".join(re.escape(p) for p in want.split("4242")), got) is not None


def pattern_match(want, got):
    """Whether lines got match lines want, where a line of just `...`
    (any indentation) matches any number of lines."""
    want = [w.rstrip() for w in want]
    got = [g.rstrip() for g in got]
    memo = {}

    def m(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(want):
            r = j == len(got)
        elif want[i].strip() == "...":
            r = any(m(i + 1, k) for k in range(j, len(got) + 1))
        else:
            r = j < len(got) and line_match(want[i], got[j]) and m(i + 1, j + 1)
        memo[(i, j)] = r
        return r

    return m(0, 0)


def shell_session(lines, setup):
    """A `distlab> ` block as (input lines, expected output pattern)."""
    inp, want = list(setup), ["..."] if setup else []
    shown = True  # whether the last command's output is shown
    in_block = False
    for line in lines:
        p = PROMPT.match(line)
        if p:
            if not shown:
                want.append("...")
            inp.append(p.group(1))
            in_block = p.group(1).rstrip().endswith(":")
            shown = False
            continue
        if in_block and (line == "..." or line.startswith("... ")):
            inp.append(line[4:])
            continue
        in_block = False
        want.append(line)
        shown = True
    # A page shows the first lines of what a block prints.
    want.append("...")
    return inp, want


def np_of(lines):
    """The ranks a block runs on: those it shows, when it elides none of
    its output, else 4 (the shell's default, as the tutorials run)."""
    shown = [l for l in lines if not PROMPT.match(l) and not l.startswith("... ")]
    if any(l.strip() == "..." for l in shown):
        return 4
    ranks = [int(r) for l in shown for r in re.findall(r"^\s*rank (\d+)\b", l)]
    return max(ranks) + 1 if ranks else 4


def check_shell(name, lines, setup):
    inp, want = shell_session(lines, setup)
    out = run([EXE, "shell", "--np", str(np_of(lines)), "-k"], "\n".join(inp) + "\n")
    got = [l for l in out.splitlines()
           if not re.match(r"^distlab: stdin: line \d+ failed: ", l)]
    check(name, pattern_match(want, got),
          "want:\n%s\ngot:\n%s" % ("\n".join(want), "\n".join(got)))


def commands(lines):
    """A `$ ` block as [(command text, expected output pattern)]: a command
    goes on over lines that end in a backslash."""
    out = []
    for line in lines:
        if line.startswith("$ ") or out and out[-1][0].endswith("\\") and not out[-1][1][:-1]:
            text = line[2:] if line.startswith("$ ") else line
            if out and out[-1][0].endswith("\\"):
                out[-1] = (out[-1][0][:-1] + " " + text.strip(), out[-1][1])
            else:
                out.append((text, ["..."]))
        else:
            out[-1][1].insert(-1, line)
    return out


def check_command(page, lines):
    for text, want in commands(lines):
        argv = shlex.split(text)
        env = {}
        while argv and re.match(r"^[A-Z_]+=", argv[0]):
            k, v = argv.pop(0).split("=", 1)
            env[k] = v
        if not argv or argv[0] != "distlab":
            continue
        if "mpi" in argv and "ASAN_OPTIONS" in os.environ:
            # Under the sanitizers, Open MPI's own allocations leak (as the
            # mpi tests' env in meson.build says); memory errors still abort.
            env.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1")
        got = run([EXE] + argv[1:], env=env).splitlines()
        check("%s: $ %s" % (page, text), pattern_match(want, got),
              "want:\n%s\ngot:\n%s" % ("\n".join(want), "\n".join(got)))


pages = ["README.md"] + sorted(os.path.relpath(p, ROOT)
                               for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
for page in pages:
    for b in blocks(page):
        lines = b.rstrip("\n").split("\n")
        first = lines[0]
        name = "%s: %s" % (page, first)
        if (page, first) in SKIP:
            print("skip  %s (%s)" % (name, SKIP[(page, first)]))
            continue
        setup = SETUP.get((page, first), [])
        if PROMPT.match(first):
            check_shell(name, lines, setup)
        elif first.startswith("$ distlab shell"):
            check_shell(name, lines[1:], setup)
        elif re.match(r"^\$ ([A-Z_]+=\S* )*distlab ", first):
            check_command(page, lines)

print("docs: %d failed" % len(failures))
sys.exit(1 if failures else 0)
