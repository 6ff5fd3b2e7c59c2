#!/usr/bin/env python3
"""The shell (`distlab shell`) driven through -c, files and standard input:
tensors, targeting, collectives, p2p with handles, groups, session commands,
and the error paths (a malformed line, an unknown name, a rank that does not
exist, a killed rank), each with its exit code.

usage: test_shell.py DISTLAB
"""
import os
import subprocess
import sys
import tempfile

EXE = sys.argv[1]
failures = []


def shell(args, stdin=None, np=3):
    p = subprocess.run([EXE, "shell", "--np", str(np), "--timeout", "10"] + args, input=stdin,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def check(name, cond, detail=""):
    print(("ok    " if cond else "FAIL  ") + name)
    if not cond:
        failures.append(name)
        print("      " + detail.replace("\n", "\n      "))


def lines_of(out):
    return [l.strip() for l in out.splitlines() if l.strip()]


# Tensors, rank/world_size arithmetic and all_reduce, as in torch's tutorial.
rc, out, err = shell(["-c", "t = arange(2) + 1 + 2*rank; all_reduce t op=sum"], np=4)
want = ["rank %d: t = tensor([%d, %d])" % (r, 1 + 2 * r, 2 + 2 * r) for r in range(4)]
want += ["rank %d: t = tensor([16, 20])" % r for r in range(4)]
check("all_reduce as in torch's example", rc == 0 and lines_of(out) == want, out + err)

# Targeting and print.
rc, out, err = shell(["-c", "t = full(2, 7); on 1: t = t * 2; on 0,2: print t; on 1-2: print t"])
check("on ranks: assignment and print",
      rc == 0 and lines_of(out)[-4:] == ["rank 0: t = tensor([7, 7])", "rank 2: t = tensor([7, 7])",
                                         "rank 1: t = tensor([14, 14])",
                                         "rank 2: t = tensor([7, 7])"], out + err)

# Type promotion as torch does it.
rc, out, err = shell(["-c", "a = tensor([1, 2]) / 2; b = ones(2, dtype=float64) + 1; "
                            "c = tensor([1, 2], dtype=int32) + 1"], np=1)
check("dtype promotion", rc == 0 and lines_of(out) == [
    "rank 0: a = tensor([0.5000, 1.0000])",
    "rank 0: b = tensor([2., 2.], dtype=torch.float64)",
    "rank 0: c = tensor([2, 3], dtype=torch.int32)"], out + err)

# Point to point with handles.
rc, out, err = shell(["-c", "t = zeros(2) + rank; on 0: h = isend t dst=1; on 1: h = irecv t src=0; "
                            "wait h; on 1: print t"], np=2)
check("isend, irecv, wait", rc == 0 and "rank 1: h: done, received from rank 0" in out
      and lines_of(out)[-1] == "rank 1: t = tensor([0., 0.])", out + err)

# Groups: only members reduce, numbered within the group.
rc, out, err = shell(["-c", "g = new_group([0, 2]); t = ones(1) * rank; all_reduce t group=g; "
                            "print t"], np=3)
check("new_group and group=", rc == 0 and lines_of(out)[-3:] == [
    "rank 0: t = tensor([2.])", "rank 1: t = tensor([1.])", "rank 2: t = tensor([2.])"],
      out + err)

# Lists: gather and all_gather make the list on the fly.
rc, out, err = shell(["-c", "t = arange(2) + 10*rank; gather t dst=0 gather_list=out; "
                            "all_gather lst t"], np=2)
check("gather_list and all_gather lists",
      rc == 0 and "rank 0: out = [tensor([0, 1]), tensor([10, 11])]" in out
      and "rank 1: lst = [tensor([0, 1]), tensor([10, 11])]" in out, out + err)

# Session: set algo, explain, ranks, history.
rc, out, err = shell(["-c", "set algo all_reduce ring; explain all_reduce; ranks"], np=4)
check("set algo, explain, ranks", rc == 0 and "step 6/6  all-gather" in out
      and out.count("ready") == 4, out + err)
rc, out, err = shell(["-c", "set algo all_reduce tree"], np=2)
check("set algo rejects a wrong algorithm",
      rc == 1 and "does not implement all_reduce" in err and "ring" in err, err)

# Errors: a malformed line points at its column and changes nothing.
rc, out, err = shell(["-c", "all_reduce t op="])
check("malformed line: caret and exit 1",
      rc == 1 and "^ expected a value after 'op='" in err and "line 1 failed" in err, err)
rc, out, err = shell(["-c", "print nope"])
check("unknown name: each rank says so", rc == 1 and err.count("'nope' is not defined") == 3, err)
rc, out, err = shell(["-c", "on 7: t = ones(1)"])
check("a rank that does not exist", rc == 1 and "rank 7 does not exist (world size 3)" in err, err)

# A script on standard input stops at its first error, naming the line.
rc, out, err = shell([], stdin="t = ones(2)\n\n# a comment\nbogus t\nprint t\n", np=2)
check("stdin script stops at line 4", rc == 1 and "stdin: line 4 failed" in err
      and "print" not in out.split("tensor([1., 1.])")[-1], out + err)

# A file.
with tempfile.NamedTemporaryFile("w", suffix=".dl", delete=False) as f:
    f.write("t = arange(3)\nbroadcast t src=1\n")
rc, out, err = shell([f.name], np=2)
os.unlink(f.name)
check("a script file", rc == 0 and lines_of(out)[-1] == "rank 1: t = tensor([0, 1, 2])", out + err)

# A killed rank is reported; the world comes back with respawn.
rc, out, err = shell([], stdin="t = ones(1)\nkill 1\nranks\nrespawn\nt = ones(1)\nall_reduce t\n",
                     np=2)
check("kill, ranks, respawn",
      rc == 0 and "rank 1 (pid" in err and "SIGKILL" in err and "dead (SIGKILL)" in out
      and lines_of(out)[-1] == "rank 1: t = tensor([2.])", out + err)
rc, out, err = shell([], stdin="kill 1\nall_reduce t\n", np=2)
check("a collective on a dead world fails", rc == 1 and "rank 1 is dead" in err, err)

print("shell: %d failed" % len(failures))
sys.exit(1 if failures else 0)
