#!/usr/bin/env python3
"""The shell language's blocks, loops, operators and slices, through the
real `distlab shell`: `on RANKS:` over the rest of a line and over an
indented block, if/elif/else on the rank, for loops (a hand-written ring
all-reduce checked against all_reduce), blocks in files, on standard input
and in `source`, and errors that name the line.

usage: test_lang.py DISTLAB
"""
import os
import subprocess
import sys
import tempfile

EXE = sys.argv[1]
failures = []


def shell(args, stdin=None, np=4):
    p = subprocess.run([EXE, "shell", "--np", str(np), "--timeout", "10"] + args, input=stdin,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def check(name, cond, detail=""):
    print(("ok    " if cond else "FAIL  ") + name)
    if not cond:
        failures.append(name)
        print("      " + detail.replace("\n", "\n      "))


def lines_of(out):
    return [l.strip() for l in out.splitlines() if l.strip()]


def script(text, np=4, args=()):
    with tempfile.NamedTemporaryFile("w", suffix=".dl", delete=False) as f:
        f.write(text)
    try:
        return shell(list(args) + [f.name], np=np)
    finally:
        os.unlink(f.name)


# ---- blocks ----

# `on 0:` covers the rest of the line: the guide's isend/wait example at np=4.
rc, out, err = shell(["-c", "t = zeros(2) + rank; on 0: h = isend t dst=1; wait h; "
                            "on 1: h = irecv t src=0; wait h; print t"], np=4)
check("on R: covers the rest of the line (isend/wait at np=4)",
      rc == 0 and "rank 0: h: done" in out and "rank 1: h: done, received from rank 0" in out
      and lines_of(out)[-1] == "rank 1: t = tensor([0., 0.])"
      and "rank 2" not in "\n".join(lines_of(out)[4:]), out + err)

# An indented `on` block in a file, then a line for every rank.
rc, out, err = script("t = arange(2) + 10*rank\n"
                      "on 0:\n"
                      "    t = t + 1\n"
                      "    send t dst=1\n"
                      "on 1:\n"
                      "    recv t src=0\n"
                      "print t\n")
check("on R: block in a file",
      rc == 0 and lines_of(out)[-4:] == ["rank 0: t = tensor([1, 2])", "rank 1: t = tensor([1, 2])",
                                         "rank 2: t = tensor([20, 21])",
                                         "rank 3: t = tensor([30, 31])"], out + err)

# if / elif / else on rank and world_size.
rc, out, err = script("if rank == 0:\n"
                      "    x = 100\n"
                      "elif rank < world_size - 1:\n"
                      "    x = rank * 10\n"
                      "else:\n"
                      "    x = -1\n"
                      "print x\n")
check("if/elif/else on rank",
      rc == 0 and lines_of(out)[-4:] == ["rank 0: x = 100", "rank 1: x = 10", "rank 2: x = 20",
                                         "rank 3: x = -1"], out + err)

# A loop with a collective inside, and its variable in expressions.
rc, out, err = shell(["-c", "t = ones(1, dtype=int64)\nfor i in range(3):\n    all_reduce t\n"
                            "print t"], np=2)
check("for loop around all_reduce",
      rc == 0 and lines_of(out)[-2:] == ["rank 0: t = tensor([8])", "rank 1: t = tensor([8])"],
      out + err)
rc, out, err = shell(["-c", "s = 0\nfor i in range(10, 0, -3):\n    s = s + i\nprint s"], np=1)
check("range with a negative step", rc == 0 and lines_of(out)[-1] == "rank 0: s = 22", out + err)
rc, out, err = shell(["-c", "for x in [1, 2.5]:\n    print x"], np=1)
check("for over a list", rc == 0 and lines_of(out)[-2:] == ["rank 0: x = 1", "rank 0: x = 2.5"],
      out + err)

# Blocks from standard input and from `source`.
rc, out, err = shell([], stdin="t = ones(1) * rank\nfor i in range(2):\n    on 1:\n"
                               "        t = t + 1\nprint t\n", np=2)
check("a block on standard input",
      rc == 0 and lines_of(out)[-2:] == ["rank 0: t = tensor([0.])", "rank 1: t = tensor([3.])"],
      out + err)
with tempfile.NamedTemporaryFile("w", suffix=".dl", delete=False) as f:
    f.write("if rank == 1:\n    y = 7\nelse:\n    y = 8\n")
rc, out, err = shell(["-c", "source %s; print y" % f.name], np=2)
os.unlink(f.name)
check("source runs a file with blocks",
      rc == 0 and lines_of(out)[-2:] == ["rank 0: y = 8", "rank 1: y = 7"], out + err)

# Errors name the line and column; a failing block stops the script.
rc, out, err = script("t = ones(2)\nfor i in range(2):\n    all_reduce t\n    print u\n")
check("an error inside a loop names its line",
      rc == 1 and "line 3, column 11: 'u' is not defined" in err and "line 2 failed" in err,
      out + err)
rc, out, err = script("t = 1\nif rank == 0:\n  t = 2\n    t = 3\n")
check("a malformed block is refused with a caret on its line",
      rc == 1 and "^ unexpected indent" in err and "    t = 3" in err and "line 2 failed" in err,
      out + err)
rc, out, err = shell(["-c", "t = ones(2, 2)\nif t:\n    x = 1"], np=1)
check("a tensor of several values is no condition",
      rc == 1 and "Boolean value of Tensor with more than one value is ambiguous" in err, err)

print("lang: %d failed" % len(failures))
sys.exit(1 if failures else 0)
