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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures, lines_of, torch_prints  # noqa: E402

EXE = sys.argv[1]


def shell(args, stdin=None, np=4):
    p = subprocess.run([EXE, "shell", "--np", str(np), "--timeout", "10"] + args, input=stdin,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def refused(cases):
    """Each (code, message): the line fails at np=1 with the message in its error."""
    for code, msg in cases:
        rc, out, err = shell(["-c", code], np=1)
        check("error: " + code.replace("\n", "; "), rc == 1 and msg in err, out + err)


def python_lines(program):
    """What the Python that runs this test prints for program, as rank 0's lines."""
    py = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                        timeout=60)
    return ["rank 0: " + ln for ln in py.stdout.splitlines()]


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

# A if C else B, as Python's: one value chosen per rank, and only it
# evaluated (1/0 in the branch not taken fails nothing); a run of them; in
# a comprehension's item beside its filter; a tensor as the value.
rc, out, err = shell(["-c", "set echo off\n"
                            "x = 'root' if rank == 0 else 'leaf' if rank == world_size - 1 "
                            "else 'mid'\n"
                            "y = 1 // 0 if rank < 0 else [i if i % 2 else -i for i in range(5) "
                            "if i > 0]\n"
                            "t = torch.ones(2) if rank == 0 else torch.zeros(2)\n"
                            "dist.broadcast(t, src=0)\n"
                            "print(x, y, t)"], np=3)
check("A if C else B on each rank, the branch not taken left alone",
      rc == 0 and lines_of(out)[-3:] == ["rank 0: root [1, -2, 3, -4] tensor([1., 1.])",
                                    "rank 1: mid [1, -2, 3, -4] tensor([1., 1.])",
                                    "rank 2: leaf [1, -2, 3, -4] tensor([1., 1.])"], out + err)

# An expression alone shows its value, as Python's prompt does: a tensor
# or number by its name (or "value"), anything else as its repr; so does
# a call's, but where it is None (l.append(3)) or the call is in a def's
# body; a name that names nothing says which command it may have meant.
rc, out, err = shell(["-c", "set echo off\nt = arange(3)\nt\nt + 1\nt.shape\n[1, 'a']\n"
                            "rank * 10\nt.sum()\nl = [1]\nl.append(3)\nlen(l)\n"
                            "dist.get_rank()\ntorch.ones(1)\ndef f():\n    len(l)\n    return 5\n"
                            "f()\nh = dist.barrier(async_op=True)\nh.wait()"], np=2)
check("an expression alone shows its value, and a call's value where it is not None",
      rc == 0 and lines_of(out) == ["rank 0: t = tensor([0, 1, 2])", "rank 1: t = tensor([0, 1, 2])",
                                    "rank 0: value = tensor([1, 2, 3])",
                                    "rank 1: value = tensor([1, 2, 3])",
                                    "rank 0: torch.Size([3])", "rank 1: torch.Size([3])",
                                    "rank 0: [1, 'a']", "rank 1: [1, 'a']",
                                    "rank 0: value = 0", "rank 1: value = 10",
                                    "rank 0: value = tensor(3)", "rank 1: value = tensor(3)",
                                    "rank 0: value = 2", "rank 1: value = 2",
                                    "rank 0: value = 0", "rank 1: value = 1",
                                    "rank 0: value = tensor([1.])", "rank 1: value = tensor([1.])",
                                    "rank 0: value = 5", "rank 1: value = 5",
                                    "rank 0: h: done", "rank 1: h: done"], out + err)
rc, out, err = shell(["-c", "barier"], np=2)
check("a name alone that names nothing suggests the command",
      rc == 1 and "'barier' is not defined; did you mean the command 'barrier'?" in err, out + err)

# A statement echoes its first 100 assignments and counts the rest in one
# line (a loop of a million would send the shell a million events); `set
# echo off` hides that line too; a def's assignments are not echoed at all.
rc, out, err = shell(["-c", "for i in range(250):\n    x = i\nprint(x)"], np=1)
got = lines_of(out)
check("a loop echoes its first 100 assignments, how many more, and the last value",
      rc == 0 and len(got) == 103 and got[99] == "rank 0: x = 99" and
      got[100] == "rank 0: ... and 150 more assignments (a statement echoes its first 100, "
                  "then the last value of each name)" and
      got[101:] == ["rank 0: x = 249"] * 2, out + err)
# What the shell's model holds after such a loop is the rank's last value:
# a scenario's expect reads it.
with tempfile.NamedTemporaryFile("w", suffix=".scenario", delete=False) as f:
    f.write("title: echo\nranks: 2\nfor i in range(150):\n    t = ones(i % 3 + 1) * i\n"
            "expect * t == [149., 149., 149.]\n")
try:
    p = subprocess.run([EXE, "scenario", "run", f.name], capture_output=True, text=True,
                       timeout=120)
finally:
    os.unlink(f.name)
check("after a loop of 150 assignments, expect reads the last value",
      p.returncode == 0 and "ok   expect 0 t == [149., 149., 149.]" in p.stdout and
      "ok   expect 1 t == [149., 149., 149.]" in p.stdout,
      p.stdout + p.stderr)
rc, out, err = shell(["-c", "set echo off\nfor i in range(250):\n    x = i\nprint(x)"], np=1)
check("set echo off hides the count too", rc == 0 and lines_of(out) == ["rank 0: x = 249"],
      out + err)

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
# An assignment echoes every kind of list as Python's repr writes it: a
# list of numbers once echoed nothing, and one of a tensor and a number
# stopped after the tensor.
rc, out, err = shell(["-c", "y = [1, 2]\nz = [ones(2), 3]\nx = (5, 6)\ne = []\n"
                            "n = [[1, 2], [3]]\nu = (ones(1), zeros(1))"], np=1)
check("a list, a tuple, an empty list, nested lists echo whole",
      rc == 0 and lines_of(out) == ["rank 0: y = [1, 2]", "rank 0: z = [tensor([1., 1.]), 3]",
                                    "rank 0: x = (5, 6)", "rank 0: e = []",
                                    "rank 0: n = [[1, 2], [3]]",
                                    "rank 0: u = (tensor([1.]), tensor([0.]))"], out + err)
# while, break and continue, as Python runs them; a break of an inner loop
# leaves the outer one running, and continue at the top stays the step
# command.
rc, out, err = shell(["-c", "set echo off\nfor i in range(3):\n    for j in range(3):\n"
                            "        if j == 1:\n            break\n        print(i, j)\n"
                            "i = 0\ns = 0\nwhile i < 10:\n    i += 1\n    if i % 2 == 0:\n"
                            "        continue\n    s += i\nprint(s, i)\n"
                            "def f(n):\n    k = 0\n    while True:\n        k += 1\n"
                            "        if k >= n:\n            return k\nprint(f(4), 'k')"], np=1)
check("while, break and continue",
      rc == 0 and lines_of(out) == ["rank 0: 0 0", "rank 0: 1 0", "rank 0: 2 0", "rank 0: 25 10",
                                    "rank 0: 4 k"], out + err)
rc, out, err = shell(["-c", "if rank == 0:\n    print(rank)\n    break"], np=1)
check("break outside a loop is refused before anything of its block runs",
      rc == 1 and "'break' outside loop" in err and "rank 0" not in out, out + err)

# With group=, src= and dst= are world ranks, as torch numbers them (gloo
# gives the same); a rank outside the group is refused in one line.
rc, out, err = shell(["-c", "set echo print\ng = dist.new_group([1, 2])\n"
                            "t = torch.ones(1) * rank\ndist.broadcast(t, src=1, group=g)\n"
                            "print('', t)\nt = torch.ones(1) * rank\n"
                            "dist.reduce(t, dst=2, group=g)\nprint('', t)"], np=3)
check("group=: src= and dst= name world ranks",
      rc == 0 and lines_of(out) == ["rank 0:  tensor([0.])", "rank 1:  tensor([1.])",
                                    "rank 2:  tensor([1.])", "rank 0:  tensor([0.])",
                                    "rank 1:  tensor([1.])", "rank 2:  tensor([3.])"], out + err)
rc, out, err = shell(["-c", "g = dist.new_group([1, 2])\nt = torch.ones(1)\n"
                            "dist.broadcast(t, src=0, group=g)"], np=3)
check("group=: a src outside the group is refused",
      rc == 1 and "src=0: the global rank 0 is not part of the group" in err, out + err)
# recv returns the sender's rank; all_gather's output must be a list.
rc, out, err = shell(["-c", "set echo print\nt = torch.ones(1) * rank\nif rank == 1:\n"
                            "    dist.send(t, dst=0)\nif rank == 0:\n    src = dist.recv(t)\n"
                            "    print('from', src)"], np=2)
check("src = dist.recv(t) is the sender's rank",
      rc == 0 and lines_of(out) == ["rank 0: from 1"], out + err)
rc, out, err = shell(["-c", "t = torch.ones(2)\nout = torch.zeros(4)\ndist.all_gather(out, t)"],
                     np=2)
check("all_gather into a tensor is refused, naming all_gather_into_tensor",
      rc == 1 and "all_gather: out is a tensor, and the output is a list of tensors "
      "(all_gather_into_tensor gathers into one tensor)" in err, out + err)

# Python's comparisons (chains, in, is), print's sep= and end=, list
# methods and builtins of numbers: what Python (and torch, for a tensor)
# prints for the same lines.
rc, out, err = shell(["-c", "set echo off\n"
                            "print(2 in [1, 2], 3 not in (1, 2), 'ell' in 'hello', "
                            "2 in torch.tensor([1, 2]), 0 < 1 < 2, 0 < 2 < 1, [1, 2] == [1, 2], "
                            "(1, 2) == [1, 2], torch.ones(2, 3).shape == (2, 3), None is None, "
                            "1 is not None)\n"
                            "for i in range(3):\n    print(i, end=' ')\nprint()\n"
                            "print(1, 2, sep='-')\n"
                            "l = [1, 2]\nl.append(3)\nl.extend((4, 5))\nl.insert(0, 0)\n"
                            "x = l.pop()\ny = l.pop(0)\nl.remove(2)\n"
                            "print(l, x, y, l.index(3), l.count(1), (1, 2, 1).count(1))\n"
                            "print(max(1, 5), min(3, 1.5, 2), abs(-3), abs(-2.5), round(2.5), "
                            "round(3.5), round(2.675, 2), round(1250, -2), str(3) + 'a', "
                            "list(range(5, 0, -2)), list('ab'))"], np=1)
check("comparisons, print's sep= and end=, list methods and builtins as Python's",
      rc == 0 and lines_of(out) == [
          "rank 0: True True True True True False True False True True True",
          "rank 0: 0 1 2", "rank 0: 1-2", "rank 0: [1, 3, 4] 5 0 1 1 2",
          "rank 0: 5 1.5 3 2.5 2 4 2.67 1200 3a [5, 3, 1] ['a', 'b']"], out + err)
refused([("print(undefined_q == None)", "'undefined_q' is not defined"),
         ("print(undefined_q is None)", "'undefined_q' is not defined"),
         ("print(1 in undefined_q)", "'undefined_q' is not defined"),
         # a function's list argument shares the caller's items
         ("l = [torch.ones(2)]\ndef f(a):\n    l.pop()\n    return a[0]\nf(l)",
          "pop() on a list a running function was given is not supported here"),
         ("l = (1, 2)\nl.append(3)", "'tuple' object has no attribute 'append'"),
         ("print(3 in 5)", "argument of type 'int' is not iterable"),
         ("x = [1]\nx.remove(2)", "list.remove(x): x not in list"),
         ("x = []\nx.pop()", "pop from empty list")])

# l.sort() and l.reverse(): in place, as Python's (the lines are Python's own).
rc, out, err = shell(["-c", "set echo off\nl = [3, 1, 2, 1.5]\nl.sort()\nm = ['b', 'c', 'a']\n"
                            "m.sort(reverse=True)\nd = {'k': [2, 0, 1]}\nd['k'].reverse()\n"
                            "def f(x):\n    x.sort()\n    x.reverse()\n    return x\n"
                            "n = [9, 7, 8]\nprint(l, m, d, f([9, 8]), f(n), n)"], np=1)
check("l.sort(), sort(reverse=True), reverse() of an item, sort of a parameter",
      rc == 0 and lines_of(out) == [
          "rank 0: [1, 1.5, 2, 3] ['c', 'b', 'a'] {'k': [1, 0, 2]} [9, 8] [9, 8, 7] [9, 8, 7]"],
      out + err)
refused([("l = [3, 1]\nl.sort(cmp=abs)", "unknown keyword 'cmp' for sort()"),
         ("l = (2, 1)\nl.sort()", "'tuple' object has no attribute 'sort'"),
         ("l = [1, 'a']\nl.sort()", "'<' not supported between instances of 'str' and 'int'"),
         ("l = [2, 1]\nl.sort(dim=0)", "sort() of a list takes key= and reverse= only")])

# An in-place method in a function on a global tensor (an SGD step in a
# def) is a call, as in Python: it binds nothing, and changes the global.
rc, out, err = shell(["-c", "set echo off\nw = torch.ones(2)\ng = torch.ones(2)\n"
                            "def step(lr):\n    w.add_(g, alpha=-lr)\n    w.mul_(2)\n"
                            "    w[0].add_(1)\nstep(0.5)\nprint(w)"], np=1)
check("w.add_(g, alpha=) in a def changes the global w",
      rc == 0 and lines_of(out) == ["rank 0: w = tensor([2., 1.])"], out + err)

# reversed(), and range(...) given to the builtins that take an iterable;
# the lines are Python's own.
rc, out, err = shell(["-c", "set echo off\nfor i in reversed(range(1, 7, 2)):\n    print(i, end=' ')\n"
                            "print()\nprint(reversed([1, 'a']), list(reversed('ab')), "
                            "list(reversed((1, 2))), sorted(range(3), reverse=True), sum(range(5)), "
                            "max(range(4)), min(range(2, 5)), len(range(2, 10, 3)), any(range(1)), "
                            "all(range(1, 3)))"], np=1)
check("reversed() and range(...) in sorted, sum, max, min, len, any and all",
      rc == 0 and lines_of(out) == ["rank 0: 5 3 1", "rank 0: ['a', 1] ['b', 'a'] [2, 1] "
                                    "[2, 1, 0] 10 3 2 3 False True"], out + err)
refused([("print(reversed(5))", "'int' object is not reversible"),
         ("print(min(range(0)))", "min() arg is an empty sequence"),
         ("x = torch.max(range(3))", "unknown function 'range'")])

# A command that returns nothing appends None, as Python's append of its
# None; extend takes a string's characters.
rc, out, err = shell(["-c", "set echo print\nt = torch.ones(1)\nx = []\n"
                            "x.append(dist.all_reduce(t))\nx.extend('ab')\nprint(x, t)"], np=2)
check("append of a command's None, extend of a string",
      rc == 0 and lines_of(out) == ["rank 0: [None, 'a', 'b'] tensor([2.])",
                                    "rank 1: [None, 'a', 'b'] tensor([2.])"], out + err)

# Strings as Python's: %, format(), * and comparisons, indexing, methods;
# the lines are Python's (and torch's, for a tensor's fields) own output.
STRING_LINES = [
    "print('Rank %d has %s (%.2f%%) %5s|%-5s|%05d %x %e' % (rank, 'data', 12.345, 'ab', 'cd', -42, 255, 1234.5))",
    "print('{} has {:.3f} {name!r} {name}'.format(rank, 2.5, name='x'))",
    "print(' '.join(['a', 'b']), 'a,b,,c'.split(','), '  x y  '.split(), ' hi '.strip(), 'AbC'.upper(), 'AbC'.lower(), 'abc'.startswith('ab'), 'abc'.endswith('bc'), 'aXbX'.replace('X', '-'), 'abcb'.find('b'), 'abab'.count('ab'), 'abc'.index('c'))",
    "print('%s %d %.1f' % (torch.tensor([1.5, 2]), torch.tensor([1.5, 2])[1], torch.tensor([1.5, 2])[0]), '{}'.format(torch.tensor([1.5, 2])[0]), '{:.2f}'.format(torch.tensor([1.5, 2])[1]))",
    "print('%+d % d %#x %#o %8.3e %-8.2f| %g %G %c %r %i' % (5, 5, 255, 8, 12345.678, 3.14159, 0.00001234, 1e20, 65, 'q', 7))",
    "print('{0} {1} {0}'.format('a', 'b'), '{{}} {}'.format(1), '{:>6}|{:<6}|{:^6}'.format('a', 'b', 'c'), '{:08.3f}'.format(-3.14159))",
    "print('ab' * 0, 'x'.join('abc'), 'a b'.split(' '), '%s' % [1, 2], '%s' % None, '%5.1s|' % 'abc')",
    'print(\'%.3d|%5.3d|%-6.3d|%+.4d|%#.4x|%05.3d\' % (5, 5, 5, -7, 255, 5), f\'{"a"!r} {3!s:>4}|{[1]!a}\')',
]
STRING_WANT = [
    'Rank 0 has data (12.35%)    ab|cd   |-0042 ff 1.234500e+03',
    "0 has 2.500 'x' x",
    "a b ['a', 'b', '', 'c'] ['x', 'y'] hi ABC abc True True a-b- 1 2 2",
    'tensor([1.5000, 2.0000]) 2 1.5 1.5 2.00',
    "+5  5 0xff 0o10 1.235e+04 3.14    | 1.234e-05 1E+20 A 'q' 7",
    'a b a {} 1      a|b     |  c    -003.142',
    " axbxc ['a', 'b'] [1, 2] None     a|",
    "005|  005|005   |-0007|0x00ff|00005 'a'    3|[1]",
]
rc, out, err = shell(["-c", "set echo off\n" + "\n".join(STRING_LINES)], np=1)
check("strings: %, format(), methods, as Python prints them",
      rc == 0 and [l.strip()[len("rank 0: "):] for l in out.splitlines()
                   if l.strip().startswith("rank 0: ")] == STRING_WANT, out + err)

# Handles and groups in lists, as torch code keeps them: reqs.append of
# an isend runs the isend as a statement; group= takes groups[i].
rc, out, err = shell(["-c", "set echo print\nt = torch.ones(2) * (rank + 1)\nreqs = []\n"
                            "if rank == 0:\n    for r in range(1, world_size):\n"
                            "        reqs.append(dist.isend(t, dst=r))\n"
                            "else:\n    reqs.append(dist.irecv(t, src=0))\n"
                            "for req in reqs:\n    req.wait()\n"
                            "gs = [dist.new_group([0, 1]), dist.new_group([2, 3])]\n"
                            "u = torch.ones(1) * rank\n"
                            "dist.all_reduce(u, group=gs[rank // 2])\nprint(t, len(reqs), u)"],
                     np=4)
check("lists of work handles and of groups",
      rc == 0 and lines_of(out) == ["rank 0: tensor([1., 1.]) 3 tensor([1.])",
                                    "rank 1: tensor([1., 1.]) 1 tensor([1.])",
                                    "rank 2: tensor([1., 1.]) 1 tensor([5.])",
                                    "rank 3: tensor([1., 1.]) 1 tensor([5.])"], out + err)

# Lines inside brackets join, as Python joins them (a comment may end one);
# an error on a later line names that line.
rc, out, err = shell([], stdin="set echo off\nx = [1,\n     2,   # two\n     3]\n"
                               "def f(a,\n      b=2):\n    return a + b\n"
                               "t = torch.tensor([[1, 2],\n                  [3, 4]])\n"
                               "print(x, f(1,\n           b=5), t.sum())\n", np=1)
check("lines inside brackets join",
      rc == 0 and lines_of(out) == ["rank 0: [1, 2, 3] 6 tensor(10)"], out + err)
rc, out, err = shell([], stdin="print(1,\n      nope)\n", np=1)
check("an error on a joined line names its line and column",
      rc == 1 and "line 2, column 7: 'nope' is not defined" in err, out + err)

# An undefined name inside a list is an error when the list is made, as
# Python's NameError is, also where nothing prints it (a def's body).
for code, col in [("def f():\n    z = [1, (2, nope)]\n    return 3\ny = f()\n", 17),
                  ("def f():\n    return [nope]\ny = f()\n", 13),
                  ("def f():\n    z = [0]\n    z += [nope]\n    return 3\ny = f()\n", 11)]:
    rc, out, err = shell([], stdin="set echo off\n" + code, np=1)
    check("an undefined name in a list in a def: %r" % code.split("\n")[1].strip(),
          rc == 1 and "of its def, column %d: 'nope' is not defined" % col in err, out + err)
rc, out, err = shell([], stdin="x = [t.dtype for t in [ones(1), zeros(2, dtype=torch.int64)]]\n"
                               "print(x)\n", np=1)
check("a comprehension of dtypes makes a list of them, as torch's",
      rc == 0 and lines_of(out)[-1] == "rank 0: [torch.float32, torch.int64]", out + err)

# A training loop's names that the shell has commands of (step, forward,
# next) are the learner's where they are assigned, called or indexed.
rc, out, err = shell([], stdin="set echo off\ndef forward(x):\n    return x * 2\n"
                               "losses = []\nfor step in range(3):\n"
                               "    losses.append(forward(torch.tensor(float(step))).item())\n"
                               "next = 3\nnext += 1\nprint(step, losses, next)\n", np=1)
check("step, forward and next as a training loop's names",
      rc == 0 and lines_of(out) == ["rank 0: 2 [0.0, 2.0, 4.0] 4"], out + err)

# ... and called as a statement, on the right of '=', or defined with a
# torch operator's name; exit() with nothing in it is still the command.
rc, out, err = shell([], stdin="set echo off\ndef forward(x):\n    print('f', x * 2)\n"
                               "forward(3)\nstep = 3\nx = step\nranks = [0, 1]\ng = ranks\n"
                               "def add(a, b):\n    return a + b\nprint(x, g, add(1, 2))\n"
                               "exit()\nprint('not reached')\n", np=1)
check("a def named forward called alone, x = step, g = ranks, def add; exit() quits",
      rc == 0 and lines_of(out) == ["rank 0: f 6", "rank 0: 3 [0, 1] 3"], out + err)

# A def may take the name of torch's add, softmax or norm (writing softmax by
# hand is an exercise); torch.add, torch.softmax and t.norm() stay torch's.
rc, out, err = shell(["-c", "set echo off\ndef add(a, b):\n    return a * 10 + b\n"
                            "def softmax(x):\n    e = x.exp()\n    return e / e.sum()\n"
                            "def norm(v):\n    return v.abs().sum()\nx = torch.tensor([0., 1., 2.])\n"
                            "print(add(1, 2), torch.add(x, 1), softmax(x), torch.softmax(x, 0), "
                            "norm(x), x.norm(), torch.norm(x, p=1))"], np=1)
check("a def named add, softmax or norm, beside torch.add, torch.softmax and x.norm()",
      rc == 0 and lines_of(out) == [
          "rank 0: 12 tensor([1., 2., 3.]) tensor([0.0900, 0.2447, 0.6652]) "
          "tensor([0.0900, 0.2447, 0.6652]) tensor(3.) tensor(2.2361) tensor(3.)"], out + err)

# The shifts bind between & and + as Python's do (the Python that runs this
# test gives the expected line); a hypercube's partners by xor and shift.
SHIFTS = ("1 << 2 + 1, 6 & 1 << 2, 1 | 1 << 1 ^ 1, 2 ** 3 << 1, -1 >> 1, 1 << 2 < 5, "
          "-9 >> 1, True << 3, [5 ^ (1 << k) for k in range(3)], -1 << 63, -2 << 62, 0 << 99")
rc, out, err = shell(["-c", "set echo off\nx = 3\nx <<= 2\nx >>= 1\nprint(x, %s)" % SHIFTS], np=1)
check("<< and >> of ints, their precedence and <<= >>=",
      rc == 0 and lines_of(out) == ["rank 0: 6 " + " ".join(str(v) for v in eval(SHIFTS))],
      out + err)

# Comprehensions of several for clauses nest as Python's (compared with the
# Python that runs this test), flatten all_gather_object's lists at np=2,
# and their variables do not leak.
COMPS = ("[x for row in m for x in row], [x * 10 for row in m if row for x in row if x > 1], "
         "[(i, j) for i in range(3) for j in range(i)], {k: v for k in range(2) for v in [k * 2]}, "
         "[a + b for a, b in [(1, 2), (3, 4)] for _ in range(2)]")
rc, out, err = shell(["-c", "set echo off\nm = [[1, 2], [3], []]\nprint(%s)\n"
                            "gathered = [None] * world_size\n"
                            "dist.all_gather_object(gathered, [rank * 10, rank * 10 + 1])\n"
                            "print([p for part in gathered for p in part])\nprint(row)" % COMPS],
                     np=2)
want = " ".join(str(v) for v in eval(COMPS, {"m": [[1, 2], [3], []]}))
check("comprehensions of several for clauses, as Python's",
      rc == 1 and lines_of(out) == ["rank 0: " + want, "rank 1: " + want,
                                    "rank 0: [0, 1, 10, 11]", "rank 1: [0, 1, 10, 11]"] and
      "'row' is not defined" in err, out + err)

# A string iterates over its characters, as Python's; enumerate of a tensor
# gives its rows (copies), and of a list variable the list's own items.
ITERS = ("{k: v for k in 'ab' for v in range(2)}, list('abc'), [c * 2 for c in 'hi'], "
         "list(zip('ab', [1, 2])), list(enumerate('ab')), sorted('cab')")
rc, out, err = shell(["-c", "set echo off\nfor c in 'ab':\n    print(c)\na, b = 'xy'\n"
                            "m = torch.arange(6).reshape(2, 3)\nfor i, row in enumerate(m):\n"
                            "    print(i, row.tolist())\ngrads = [torch.ones(2), torch.zeros(2)]\n"
                            "for i, g in enumerate(grads):\n    g += i\n"
                            "print(a, b, grads[1].tolist(), %s)" % ITERS], np=1)
check("a string's characters, enumerate of a tensor's rows and of a list's items",
      rc == 0 and lines_of(out) == [
          "rank 0: a", "rank 0: b", "rank 0: 0 [0, 1, 2]", "rank 0: 1 [3, 4, 5]",
          "rank 0: x y [1.0, 1.0] " + " ".join(str(v) for v in eval(ITERS))], out + err)

# A clause takes one if; clauses count as levels of nesting, bounded as
# brackets are (thousands of them overflowed the rank's stack).
refused([("x = [i for i in range(9) if i > 2 if i < 5]", "one 'if' a clause here"),
         ("x = [0" + " for a in [1]" * 100 + "]", "nested too deeply (at most 64 levels)"),
         ("x = 1 << 63", "integer overflow (the shell's ints are 64-bit)")])

# Targets in parentheses unpack in turn, in loops, comprehensions and
# assignments, as Python's (compared with the Python that runs this test);
# a shape that does not fit binds nothing.
NESTED = "[a * b for a, (b, c) in [(1, (2, 3)), (4, (5, 6))]], [x for (x) in [1, 2]]"
rc, out, err = shell(["-c", "set echo off\nfor i, (a, b) in enumerate(zip([1, 2], 'xy')):\n"
                            "    print(i, a, b)\nfor (p, q), r in [((1, 2), 3)]:\n"
                            "    print(p, q, r)\nfor a, in [(5,)]:\n    print(a, a)\n"
                            "d = {'k': (1, 2)}\nfor k, (u, v) in d.items():\n    print(k, u, v)\n"
                            "x, (y, z) = 1, (2, 3)\nprint(x, y, z, %s)\n"
                            "a, (b, x) = 9, (8, 7, 6)" % NESTED], np=1)
want = " ".join(str(v) for v in eval(NESTED))
check("targets in parentheses unpack in turn, as Python's",
      rc == 1 and lines_of(out) == ["rank 0: 0 1 x", "rank 0: 1 2 y", "rank 0: 1 2 3",
                                    "rank 0: 5 5", "rank 0: k 1 2", "rank 0: 1 2 3 " + want] and
      "too many values to unpack (expected 2)" in err, out + err)
refused([("for (a b) in [1]:\n    pass", "expected ')', found 'b'"),
         ("for (a, 1) in [1]:\n    pass", "expected a name or '(' to unpack into, found '1'"),
         ("a, (b, c) = 1, 2", "cannot unpack an int"),
         ("w, (rank, m) = 1, (5, 2)", "cannot assign to 'rank'"),
         ("a, " + "(" * 70 + "b" + ")" * 70 + " = 1, 2", "nested too deeply")])
rc, out, err = shell(["-k"], stdin="set echo off\nx = 5\na, (b, x) = 1, (2, 3, 4)\n"
                                     "for a, (b, x) in [(1, (2, 3, 4))]:\n    pass\nprint(x)\n"
                                     "print(a)\n", np=1)
check("a target that does not fit binds nothing",
      rc == 1 and err.count("too many values to unpack (expected 2)") == 2 and
      lines_of(out) == ["rank 0: x = 5"] and "'a' is not defined" in err, out + err)

# lambda, key= of sorted, list.sort, max and min (a def, a lambda, a
# function's name), and the order of tuples and lists, as Python's
# (compared with the Python that runs this test).
SETUP = ("words = ['ccc', 'a', 'bb', 'dd']\npairs = [(1, 'b'), (0, 'z'), (1, 'a')]\n"
         "def neg(x):\n    return -x\nsq = lambda x, p=2: x ** p\n"
         "def ranks_by(scores):\n    return sorted(range(len(scores)), key=lambda i: scores[i])\n"
         "fact = lambda n: 1 if n < 2 else n * fact(n - 1)\n")
KEYS = ("sorted(words, key=len), sorted(words, key=lambda w: w[-1], reverse=True), "
        "max(words, key=len), min(words, key=len), max(3, -5, key=abs), min([4, 2], key=None), "
        "sorted(pairs), sorted(pairs, key=lambda p: (-p[0], p[1])), sorted([3, 1, 2], key=neg), "
        "ranks_by([30, 10, 20]), sq(3), sq(2, p=3), fact(5), sorted([[2, 1], [1, 2], [1]], key=sum), "
        "(1, 2) < (1, 3), [1, 2] < [1, 2, 0], (1, 2) <= (1, 2), [2] > [1, 5], "
        "(1, (2, 3)) < (1, (2, 4)), 'ab' < 'b', [float('nan')] < [1]")
env = {}
exec(SETUP, env)
want = " ".join(str(v) for v in eval(KEYS, env))
rc, out, err = shell(["-c", "set echo off\n" + SETUP + "l = [3, 1, 2]\nl.sort(key=neg)\n"
                      "pairs.sort(key=lambda p: p[1])\nprint(l, pairs)\nprint(%s)" % KEYS], np=1)
check("lambda, key= and the order of tuples and lists, as Python's",
      rc == 0 and lines_of(out) == ["rank 0: [3, 2, 1] [(1, 'a'), (1, 'b'), (0, 'z')]",
                                    "rank 0: " + want], out + err)
refused([("print(sorted([1, 2], key=3))", "'int' object is not callable"),
         ("print(sorted([1, 2], key=nope))", "'nope' is not defined"),
         ("print(sorted([1, 2], key=lambda a, b: a))",
          "<lambda>() missing 1 required positional argument: 'b'"),
         ("print(max([1, 2], key=len))", "object of type 'int' has no len()"),
         ("print(max([], key=len))", "max() arg is an empty sequence"),
         ("print([1] < (1,))", "'<' not supported between instances of 'list' and 'tuple'"),
         ("print(sorted([1, 'a']))", "'<' not supported between instances of 'str' and 'int'"),
         ("f = lambda x: y\nf(1)", "in <lambda>(), line 1 of its def, column 15: 'y' is not defined"),
         ("lambda = 3", "cannot assign to 'lambda'"),
         ("f = lambda x:", "expected a value after ':'"),
         ("f = lambda x x: 1", "expected ',' or ':', found 'x'"),
         ("f = lambda x, x: 1", "duplicate argument 'x' in function definition")])

# del of names and of items, as Python's (compared with the Python that
# runs this test); what it cannot delete is refused in Python's words.
DEL = ("x = 1\ny = 2\nl = [1, 2, 3, 4]\nd = {'a': 1, 'b': [5, 6]}\ndel x\ndel l[0], l[-1]\n"
       "del d['a'], d['b'][0]\nm = [[1, 2], [3]]\ndel m[0][1]\n"
       "def f(v):\n    w = [v]\n    del w[0]\n    return w\n")
env = {}
exec(DEL, env)
want = " ".join(str(v) for v in eval("'x' in globals(), y, l, d, m, f(3)", env))
rc, out, err = shell(["-c", "set echo off\n" + DEL + "print(%s)\nprint(x)" %
                      "False, y, l, d, m, f(3)"], np=1)
check("del of a name and of list and dict items, as Python's",
      rc == 1 and lines_of(out) == ["rank 0: " + want] and "'x' is not defined" in err, out + err)
refused([("del x", "'x' is not defined"),
         ("l = [1]\ndel l[5]", "list assignment index out of range"),
         ("l = [1]\ndel l['a']", "list indices must be integers or slices, not str"),
         ("d = {}\ndel d['k']", "KeyError: 'k'"),
         ("t = arange(2)\ndel t[0]", "'Tensor' object doesn't support item deletion"),
         ("s = (1, 2)\ndel s[0]", "'tuple' object doesn't support item deletion"),
         ("del 3", "expected a name to delete, found '3'"),
         ("x = 1\ndef g():\n    del x\ng()", "cannot access local variable 'x'"),
         ("d = {'a': 1}\nfor k in d:\n    del d[k]", "dictionary changed size during iteration")])

# l[i:j] = x and del l[i:j] of lists, with steps, negative steps, bounds
# past the end, op=, lists inside a dict or a list, and Python's errors
# (compared with the Python that runs this test).
SLICES = "l = [0, 1, 2, 3, 4, 5, 6, 7]\na = list(l); a[1:3] = [9]; print('a', a)\na = list(l); a[1:3] = [7, 8, 9, 10]; print('a', a)\na = list(l); a[5:2] = ['x']; print('a', a)\na = list(l); a[:] = []; print('a', a)\na = list(l); a[::2] = 'abcd'; print('a', a)\na = list(l); a[::-3] = [10, 20, 30]; print('a', a)\na = list(l); a[-2:] = (1, 2, 3); print('a', a)\na = list(l); a[100:] = [1]; print('a', a)\na = list(l); a[2:4] += [5]; print('a', a)\na = list(l); a[1:3] *= 2; print('a', a)\na = list(l); del a[1:3]; print('a', a)\na = list(l); del a[::2]; print('a', a)\na = list(l); del a[::-3]; print('a', a)\na = list(l); del a[:]; print('a', a)\na = list(l); del a[5:1]; print('a', a)\na = list(l); del a[-3::-2]; print('a', a)\nd = {'k': [1, 2, 3]}; d['k'][0:1] = [5, 6]; print('d', d)\nm = [[1, 2, 3], [4, 5]]; m[0][1:] = []; del m[1][:1]; print('m', m)\na = list(l); a[1:3] = list(range(3)); print('a', a)\ntry:\n    a = list(l); a[::2] = [1]\nexcept ValueError as e:\n    print('E', e)\ntry:\n    a = list(l); a[1:2] = 5\nexcept TypeError as e:\n    print('E', e)\ntry:\n    a = list(l); a[::2] = 5\nexcept TypeError as e:\n    print('E', e)\ntry:\n    t = (1, 2); t[0:1] = [3]\nexcept TypeError as e:\n    print('E', e)\ntry:\n    s = 'abc'; s[0:1] = 'x'\nexcept TypeError as e:\n    print('E', e)\ntry:\n    t = (1, 2); del t[0:1]\nexcept TypeError as e:\n    print('E', e)\ntry:\n    d = {1: 2}; d[0:1] = [3]\nexcept TypeError as e:\n    print('E', e)\ntry:\n    a = list(l); a[::0] = [3]\nexcept ValueError as e:\n    print('E', e)\ntry:\n    a = list(l); a['x':] = [3]\nexcept TypeError as e:\n    print('E', e)\ntry:\n    a = list(l); del a[::0]\nexcept ValueError as e:\n    print('E', e)\n"
rc, out, err = shell(["-c", "set echo off\n" + SLICES], np=1)
check("l[i:j] = x, l[i:j] op= x and del l[i:j], as Python's",
      rc == 0 and lines_of(out) == python_lines(SLICES), out + err)
# A step past the list's length, up to sys.maxsize (and below -maxsize,
# which Python reads as -maxsize), names one item: no sum of it overflows.
BIG = 9223372036854775807
HUGE_STEPS = ("l = [0, 1, 2, 3, 4, 5, 6, 7]\ns = 'abcdef'\n"
              "print(l[::%d], l[::-%d], l[3::%d], l[::-%d - 1], s[::%d], s[2::-%d])\n"
              "a = list(l); del a[::-%d]; print('a', a)\n"
              "a = list(l); del a[%d::-%d]; print('a', a)\n"
              "a = list(l); del a[3::%d]; print('a', a)\n"
              "a = list(l); del a[::-%d - 1]; print('a', a)\n"
              "a = list(l); a[-%d:%d:%d] = [5]; print('a', a)\n"
              "a = list(l); a[::-%d - 1] = [5]; print('a', a)\n" % ((BIG,) * 15))
rc, out, err = shell(["-c", "set echo off\n" + HUGE_STEPS], np=1)
check("a slice's step up to sys.maxsize, read, deleted and assigned, as Python's",
      rc == 0 and lines_of(out) == python_lines(HUGE_STEPS), out + err)
# l[i:j] op= x runs i and j once, as Python does: the read and the write
# are of the same slice.
ONCE = ("l = [0, 1, 2, 3]\nl[l.pop():] += [9]\nprint('l', l)\n"
        "def i():\n    print('i ran', 1)\n    return 1\nm = [0, 1, 2]\n"
        "m[i():] += [9]\nm[:i()] *= 2\nprint('m', m)\n")
rc, out, err = shell(["-c", "set echo off\n" + ONCE], np=1)
check("l[i:j] op= x evaluates i and j once",
      rc == 0 and lines_of(out) == python_lines(ONCE), out + err)
# A slice of a tensor that a list or a dict holds is written in place.
rc, out, err = shell(["-c", "set echo off\ntl = [torch.zeros(2), torch.ones(2)]\n"
                      "tl[0][0:1] = 5\nd = {'m': torch.zeros(2, 3)}\nd['m'][1, 1:] = 4\n"
                      "d['m'][..., 0] = 1\nd['m'][:, ::2] *= 3\nl = [[torch.zeros(2)]]\n"
                      "l[0][0][1:] = 8\nprint(tl[0].tolist(), d['m'].tolist(), l[0][0].tolist())"],
                     np=1)
check("a slice of a tensor in a list or a dict, written in place",
      rc == 0 and lines_of(out) == ["rank 0: [5.0, 0.0] [[3.0, 0.0, 0.0], [3.0, 4.0, 12.0]] "
                                    "[0.0, 8.0]"], out + err)
# A list a function is given takes l[i:j] = x of as many items as the
# slice names (the caller sees them), not one that changes its length.
PARAM = ("def norm(buf):\n    s = sum(buf)\n    buf[:] = [x / s for x in buf]\n"
         "def f(a, d):\n    a[::2] = [7, 7]\n    a[0:1] += []\n    d['k'][1:] = 'xy'\n"
         "l = [1, 1, 2]\nnorm(l)\nm = [0, 1, 2]\nd = {'k': [0, 1, 2]}\nf(m, d)\n"
         "print(l, m, d)\n")
rc, out, err = shell(["-c", "set echo off\n" + PARAM], np=1)
check("a function's list parameter takes a slice assignment that keeps its length",
      rc == 0 and lines_of(out) == python_lines(PARAM), out + err)
refused([("l = [1, 2]\ndef f(x):\n    x[0:1] = []\nf(l)",
          "a slice assignment that changes the length of a list a running function was given "
          "is not supported here"),
         ("l = [1]\nl[0:1].add_(1)", "'list' object has no attribute 'add_'")])

# Format specs as Python's: an empty spec is str(), widths and precisions
# count characters (not bytes), '_' groups digits (by four in hex), and
# Python's errors for None, lists, and specs that do not fit the value.
FORMATS = 'print(repr(f\'{None:}\'), 1)\nprint(repr(f\'{True:}\'), 1)\nprint(repr(f\'{[1, 2]:}\'), 1)\nprint(repr(f\'{"ñ":^7}\'), 1)\nprint(repr(\'%3s\' % \'ñ\'), 1)\nprint(repr(f\'{"ñé":.1}\'), 1)\nprint(repr(f\'{"ñéa":.2}\'), 1)\nprint(repr(f\'{"abc":.0}\'), 1)\nprint(repr(f\'{"ab":.5}\'), 1)\nprint(repr(f\'{"日本":>6}\'), 1)\nprint(repr(f\'{1234567:_}\'), 1)\nprint(repr(f\'{1234567.5:_}\'), 1)\nprint(repr(f\'{1048575:_x}\'), 1)\nprint(repr(f\'{1048575:#_x}\'), 1)\nprint(repr(f\'{1234567:_d}\'), 1)\nprint(repr(f\'{1234567:,}\'), 1)\nprint(repr(f\'{-1234567.25:,.1f}\'), 1)\nprint(repr(f\'{255:_b}\'), 1)\nprint(repr(f\'{3.5:}\'), 1)\nprint(repr(f\'{7:}\'), 1)\nprint(repr(f\'{"s":}\'), 1)\nprint(repr(f\'{(1, 2):}\'), 1)\nprint(repr(f\'{-0.0:}\'), 1)\nprint(repr(f\'{True:>5}\'), 1)\nprint(repr(f\'{0.1 + 0.2}\'), 1)\ntry:\n    x = f\'{None:>5}\'\n    print(\'no error\', 1)\nexcept ValueError as e:\n    print(\'ValueError\', e)\nexcept TypeError as e:\n    print(\'TypeError\', e)\ntry:\n    x = f\'{[1]:d}\'\n    print(\'no error\', 1)\nexcept ValueError as e:\n    print(\'ValueError\', e)\nexcept TypeError as e:\n    print(\'TypeError\', e)\ntry:\n    x = f\'{1.5:+.1d}\'\n    print(\'no error\', 1)\nexcept ValueError as e:\n    print(\'ValueError\', e)\nexcept TypeError as e:\n    print(\'TypeError\', e)\ntry:\n    x = f\'{1.5:x}\'\n    print(\'no error\', 1)\nexcept ValueError as e:\n    print(\'ValueError\', e)\nexcept TypeError as e:\n    print(\'TypeError\', e)\ntry:\n    x = f\'{5:.2}\'\n    print(\'no error\', 1)\nexcept ValueError as e:\n    print(\'ValueError\', e)\nexcept TypeError as e:\n    print(\'TypeError\', e)\ntry:\n    x = f\'{5:,x}\'\n    print(\'no error\', 1)\nexcept ValueError as e:\n    print(\'ValueError\', e)\nexcept TypeError as e:\n    print(\'TypeError\', e)\ntry:\n    x = f\'{"a":+}\'\n    print(\'no error\', 1)\nexcept ValueError as e:\n    print(\'ValueError\', e)\nexcept TypeError as e:\n    print(\'TypeError\', e)\ntry:\n    x = f\'{"a":,}\'\n    print(\'no error\', 1)\nexcept ValueError as e:\n    print(\'ValueError\', e)\nexcept TypeError as e:\n    print(\'TypeError\', e)\ntry:\n    x = f\'{"a":d}\'\n    print(\'no error\', 1)\nexcept ValueError as e:\n    print(\'ValueError\', e)\nexcept TypeError as e:\n    print(\'TypeError\', e)\ntry:\n    x = f\'{None:x}\'\n    print(\'no error\', 1)\nexcept ValueError as e:\n    print(\'ValueError\', e)\nexcept TypeError as e:\n    print(\'TypeError\', e)\n'
# '_' with a string is Python's ValueError too, caught as one
FORMATS += ("try:\n    x = f'{\"a\":_}'\n    print('no error', 1)\nexcept ValueError as e:\n"
            "    print('ValueError', e)\n")
rc, out, err = shell(["-c", "set echo off\n" + FORMATS], np=1)
check("format specs, empty, of characters, grouped by '_', and their errors, as Python's",
      rc == 0 and lines_of(out) == python_lines(FORMATS), out + err)
# A float's repr is the shortest that reads back, also where the nearest
# digits of that length do not (a power of two: 2**-24).
FLOATS = ("print(2.0 ** -24, 2.0 ** -1074, 2.0 ** 60, 2.0 ** -30 * 3, 1e16, 1e-05, 0.00015, "
          "123456789012345.6, 5e-324, 0.1 + 0.2, -2.0 ** -24)")
rc, out, err = shell(["-c", FLOATS], np=1)
check("a float's repr: the shortest digits that read back, as Python's",
      rc == 0 and lines_of(out) == python_lines(FLOATS), out + err)
# torch's integer division by zero is a RuntimeError whose text is
# "ZeroDivisionError", not Python's ZeroDivisionError.
rc, out, err = shell(["-c", "try:\n    x = torch.tensor([1]) // 0\nexcept ZeroDivisionError as e:\n"
                      "    print('Z', e)\nexcept RuntimeError as e:\n    print('R', e)"], np=1)
check("a tensor's integer division by zero: RuntimeError('ZeroDivisionError'), as torch's",
      rc == 0 and lines_of(out) == ["rank 0: R ZeroDivisionError"], out + err)

# A string's characters, not its bytes: len, indexing, slicing with steps,
# iteration, find and count of a string beyond ASCII, as Python's.
UNICODE = "s = 'héllo wörld ★'\nprint(len(s), s[1], s[-1], s[1:4], s[::-1], s[::2], list('aé'), s.find('l'), s.index('w'), s.count(''), s.count('l'))\nfor c in 'aé★':\n    print(c, len(c))\nprint([c for c in s if c != 'l'], ''.join(reversed('é★')), sorted('éa'), 'é' in s, s.split('ö'))\nprint(f'{s:>16}|', f'{s[:3]:^7}|', s.upper().lower() == s.lower(), s.replace('ö', 'o'), s.startswith('hé'))\na, *b = 'é★x'\nprint(a, b, list(enumerate('é★')), list(zip('é★', 'ab')))\nl = [1, 2, 3]\nl[1:3] = 'é€'\nprint(l, 'é'[0], 'aé'[-1:])\n"
rc, out, err = shell(["-c", "set echo off\n" + UNICODE], np=1)
check("strings beyond ASCII count, index and slice characters, as Python's",
      rc == 0 and lines_of(out) == python_lines(UNICODE), out + err)

# f(*args) and print(*l), as Python's (compared with the Python that runs
# this test): a list variable's tensors are the list's own in the call.
STAR = ("l = [1, 2, 3]\nm = [[1, 2], [3, 4]]\nshape = (2, 3)\n"
        "def f(a, b, c=0):\n    return a + b + c\n")
STARS = "list(zip(*m)), f(*[1, 2]), f(*(1, 2, 3)), f(1, *[2], c=5), max(*l), [*'ab']"
env = {}
exec(STAR, env)
want = " ".join(str(v) for v in eval(STARS.replace(", [*'ab']", ""), env))
rc, out, err = shell(["-c", "set echo off\n" + STAR + "print(*l)\nprint(*l, sep='-')\n"
                      "print('a', *'xy', *[4], 5)\nprint(*[])\n"
                      "print(%s, torch.zeros(*shape).shape)\n"
                      "ts = [torch.ones(2), torch.zeros(2)]\n"
                      "def inc(a, b):\n    a += 1\ninc(*ts)\nprint(ts[0], ts[1])" %
                      STARS.replace(", [*'ab']", "")], np=1)
check("f(*args) and print(*l), as Python's",
      rc == 0 and lines_of(out) == ["rank 0: 1 2 3", "rank 0: 1-2-3", "rank 0: a x y 4 5",
                                    "rank 0:", "rank 0: " + want + " torch.Size([2, 3])",
                                    "rank 0: tensor([2., 2.]) tensor([0., 0.])"], out + err)
refused([("print(*3)", "argument after * must be an iterable, not int"),
         ("print(*x)", "'x' is not defined"),
         ("t = ones(1)\nall_reduce(*[t])", "*ITERABLE is not taken by all_reduce here"),
         ("print(sep='', *[1])", "*ITERABLE goes before the keyword arguments here"),
         ("print(*)", "expected a value after '*'")])

# Classes as values: type(x) == int, type(x) is float, isinstance(x, C) of
# Python's classes (compared with the Python that runs this test), and of
# torch.Tensor (torch.Size and t.max(dim=0)'s pair are tuples, as in torch).
TYPES = ("type(3) == int, type(3.5) is float, type('a') is not str, int, "
         "isinstance(1, int), isinstance(True, int), isinstance(1, bool), "
         "isinstance(1.0, (int, float)), isinstance([1], list), isinstance((1,), tuple), "
         "isinstance('a', str), isinstance({}, dict), isinstance(None, int), "
         "isinstance(3, type(4)), isinstance([], (dict, str))")
want = " ".join(str(v) for v in eval(TYPES))
rc, out, err = shell(["-c", "set echo off\nt = torch.arange(2)\nprint(%s)\n"
                      "print(type(t) == torch.Tensor, torch.Tensor, isinstance(t, torch.Tensor), "
                      "isinstance(t.shape, tuple), isinstance(t.max(dim=0), tuple), "
                      "isinstance(t, (int, list)))" % TYPES], np=1)
check("classes as values and isinstance, as Python's and torch's",
      rc == 0 and lines_of(out) == ["rank 0: " + want,
                                    "rank 0: True <class 'torch.Tensor'> True True True False"],
      out + err)
refused([("print(isinstance(1, 2))", "isinstance() arg 2 must be a type, a tuple of types"),
         ("print(isinstance(1))", "isinstance expected 2 arguments, got 1"),
         ("print('a' is 'a')", "'is' compares with None, True, False or classes here")])

# try/except/else/finally and raise, as Python's (the same program run by
# the Python that runs this test); the class of a shell's error is read
# from its words, torch's errors are RuntimeError.
TRY = """def f():
    try:
        return 1
    finally:
        print('f', 'finally')
def g(d):
    try:
        return d['k']
    except KeyError as e:
        return 'missing ' + str(e)
try:
    x = 1 / 0
except ZeroDivisionError as e:
    print('caught', e)
try:
    y = [1][3]
except LookupError as e:
    print('lookup', 1)
try:
    z = 2
except Exception:
    print('never', 0)
else:
    print('else', z)
finally:
    print('finally', z)
try:
    raise ValueError('bad value')
except (TypeError, ValueError) as e:
    print('raised', e)
try:
    try:
        raise KeyError('k')
    except KeyError:
        raise
except Exception as e:
    print('again', e)
for i in range(3):
    try:
        if i == 1:
            continue
        if i == 2:
            break
        print('i', i)
    finally:
        print('fin', i)
try:
    a, b = [1, 2, 3]
except ValueError as e:
    print('unpack', e)
try:
    raise RuntimeError
except RuntimeError as e:
    print('empty', str(e) == '', len(str(e)))
print(f(), g({}), g({'k': 5}))
"""
rc, out, err = shell(["-c", "set echo off\n" + TRY + "t = torch.ones(2)\ntry:\n"
                      "    t + torch.ones(3)\nexcept RuntimeError as e:\n"
                      "    print('torch', 'size' in str(e))\n"
                      "try:\n    print(q)\nexcept NameError:\n    print('name', 1)\n"
                      "raise ValueError('stop')"], np=1)
want = python_lines(TRY) + ["rank 0: torch True", "rank 0: name 1"]
check("try/except/else/finally and raise, as Python's",
      rc == 1 and lines_of(out) == want and "column 1: ValueError: stop" in err, out + err)
refused([("except: pass", "'except' without a 'try' before it"),
         ("try:\n    x = 1\n", "expected 'except' or 'finally' block"),
         ("try:\n    x = 1\nexcept Foo:\n    pass", "unknown exception class 'Foo'"),
         ("try:\n    x = 1\nexcept:\n    pass\nexcept ValueError:\n    pass",
          "default 'except:' must be last"),
         ("raise", "RuntimeError: No active exception to reraise"),
         ("try:\n    x = 1 / 0\nexcept ValueError:\n    pass", "division by zero"),
         ("try = 3", "expected ':', found '='"),
         ("x = 1\ndef h():\n    try:\n        return x\n    finally:\n        raise\nh()",
          "No active exception to reraise")])

# Closures, defaults made where the def runs, a key that changes its list,
# del in a function, nested targets over live lists and dicts, list-style
# targets, max/min of tuples and strings, del of tuple and None keys: the
# same program run by the Python that runs this test.
MORE = """fs = []
for i in range(3):
    fs.append(lambda x, i=i: x + i)
print([f(10) for f in fs], 0)
x = 1
f = lambda a=x: a
x = 2
print(f(), 0)
n = 10
add = lambda v: v + n
def g(n):
    return add(1)
print(g(5), 0)
def h(v):
    return lambda: v
k = h(1)
v = 99
print(k(), 0)
def outer():
    fct = lambda m: 1 if m < 2 else m * fct(m - 1)
    return fct(5)
print(outer(), 0)
l = [[2, 1]]
l[0].sort(key=lambda e: l.append(0) or e)
print(l, 0)
l = [[1, 2]]
for i, (a, b) in enumerate(l):
    if i < 2:
        l.append([a + 1, b])
print(l, 0)
a, [b, c] = 1, [2, 3]
for (p, q), in [((4, 5),)]:
    print(a, b, c, p, q)
print(max([(1, 2), (1, 3)]), min('ab', 'b'), max('abc'), max(3, -5, key=abs))
d = {None: 1, (1, 2): 3, 'a': [4, 5]}
del d[None]
del d[1, 2]
del d['a'][0],
print(d, 0)
"""
rc, out, err = shell(["-c", "set echo off\n" + MORE +
                      "m = torch.tensor([[3, 1], [1, 2]])\n"
                      "print(sorted(m, key=lambda r: r[0])[0].tolist(), 0)\n"
                      "l = [3, 1, 2]\ntry:\n    l.sort(key=lambda e: l.append(0) or e)\n"
                      "except ValueError as e:\n    print(e, len(l))\n"
                      "x = 5\ndef u():\n    x = 1\n    del x\n    return x\n"
                      "try:\n    u()\nexcept NameError:\n    print('unbound', 1)\n"
                      "dd = {'a': (1, 2), 'b': (3, 4)}\ntry:\n    for kk, (s1, s2) in dd.items():\n"
                      "        del dd[kk]\nexcept RuntimeError as e:\n    print(e, 0)\n"
                      "w, (y, z) = 5, (6, nope)"], np=1)
want = python_lines(MORE) + [
    "rank 0: [1, 2] 0", "rank 0: list modified during sort 6", "rank 0: unbound 1",
    "rank 0: dictionary changed size during iteration 0"]
check("closures, defaults, a key that changes its list, nested live walks, as Python's",
      rc == 1 and lines_of(out) == want and "'nope' is not defined" in err, out + err)

# Lambdas read their function's names while it runs (a local lambda calls
# itself, appends to the function's list) and keep their values once it
# returns; never the caller's. A starred list's item replaced in the call,
# return inside try/finally, a bare raise in finally, except-as in a
# function, and errors classed by their words: the same program in Python.
SCOPES = """k = 1
def apply(x, fn):
    k = 100
    return fn(x)
def d1():
    return [apply(1, lambda v: v + k) for _ in range(1)], apply(*[1], lambda v: v + k)
print(d1(), 0)
def mk():
    f = lambda x: x + 1
    return lambda x: f(x) * 2
hm = mk()
print(hm(1), 0)
def counter():
    l = []
    add = lambda v: l.append(v)
    add(1)
    add(2)
    return l
print(counter(), 0)
fs = []
def loop():
    for i in range(20):
        fs.append(lambda: fs)
    return len(fs)
print(loop(), 0)
l = [[1, 2], [3]]
def f(x, y):
    l[0] = 5
    return x
print(f(*l), l)
def g():
    x = 5
    try:
        return x
    finally:
        print('fin', x)
print(g(), 0)
try:
    try:
        raise ValueError('v')
    finally:
        raise
except ValueError as e:
    print('again', e)
e = 'global'
def h():
    try:
        raise KeyError('k')
    except KeyError as e:
        pass
    try:
        return e
    except NameError:
        return 'unbound'
print(h(), 0)
"""
rc, out, err = shell(["-c", "set echo off\n" + SCOPES +
                      "try:\n    x = int('by zero')\nexcept ValueError:\n    print('value', 1)\n"
                      "try:\n    x = 1 + 'a'\nexcept TypeError:\n    print('type', 1)\n"
                      "try:\n    x = 0 ** -1\nexcept ZeroDivisionError:\n    print('zero', 1)\n"
                      "try:\n    x = [1].index('out of range')\nexcept ValueError:\n"
                      "    print('index', 1)\n"], np=1)
want = python_lines(SCOPES) + [
    "rank 0: value 1", "rank 0: type 1", "rank 0: zero 1", "rank 0: index 1"]
check("lambdas' scopes, starred items, try/finally and error classes, as Python's",
      rc == 0 and lines_of(out) == want, out + err)
rc, out, err = shell([], stdin="try: x = 1 / 0\nexcept ZeroDivisionError: print('c', 1)\n\n"
                               "print('after', 2)\n", np=1)
check("a one-line try waits for its except, as Python's prompt",
      rc == 0 and lines_of(out) == ["rank 0: c 1", "rank 0: after 2"], out + err)

# Calls of what an expression gives, and targets that start a line with a
# bracket; bare tuples after '='.
CALLS = """adder = lambda x: lambda y: x + y
fs = [lambda v: v + 1, lambda v: v * 10]
ops = {'add': lambda a, b: a + b}
def make(n):
    def g(a, b=2):
        return n + a + b
    return g
log = []
hooks = [lambda v: log.append(v)]
hooks[0](7)
cast = float
print(adder(1)(2), (lambda: 3)(), fs[1](4), [f(3) for f in fs], ops['add'](2, b=5))
print(make(10)(1), make(10)(*[1, 5]), (len)([1, 2]), cast('2.5'), log)
(a, b), c = (1, 2), 3
[x, y] = [5, 6]
(z) = 7
[w] = [8]
(p, q) = 1, 2
[k, (m, n)], o = [1, (2, 3)], 4
shape = 2, 3
one = 1,
l = [0, 0]
l[0] = 1, 2
print(a, b, c, x, y, z, w, p, q, k, m, n, o, shape, one, l)
print(tuple(range(3)), tuple('ab'), tuple(), tuple([1, [2]]))
def apply(f, *a):
    return f(*a)
def rest(a, b=2, *more):
    return a, b, more
nargs = lambda *xs: len(xs)
print(apply(lambda a, b: a - b, 5, 3), rest(1), rest(1, 3, 4, 5), nargs(), nargs(*'abc'))
first, *others = [1, 2, 3, 4]
*init, last = (1, 2, 3)
a, *mid, b = 'hello'
(p, *q), r = [1, 2, 3], 4
*w, = [5, 6]
print(first, others, init, last, a, mid, b, p, q, r, w)
try:
    m, *n, o = [1]
except ValueError as e:
    print('err', e)
keep_str = str
x = int
int = float
float = x
str = lambda v: 0
print(int('2'), float('3'), keep_str(5), x('7'))
try:
    (3)(1)
except TypeError as e:
    print('call', e)
"""
rc, out, err = shell(["-c", "set echo off\n" + CALLS], np=1)
check("calls of a call's result, a list item and a lambda; bracketed targets, as Python's",
      rc == 0 and lines_of(out) == python_lines(CALLS), out + err)
refused([("(1 + 2) = 3", "expected a name or '(' to unpack into"),
         ("(a, b) = 1, 2, 3", "too many values to unpack"),
         ("x = [1]\nx[0](2)", "'int' object is not callable"),
         ("(nope)(1)", "'nope' is not defined"),
         ("def f(*a, b): pass", "a parameter after *a is not taken here"),
         ("def f(*a=1): pass", "var-positional argument cannot have default value"),
         ("def f(**kw): pass", "**NAME (keyword arguments) is not taken here"),
         ("def f(*a):\n    return a\nf(a=1)", "f() got an unexpected keyword argument 'a'"),
         ("*a = [1]", "starred assignment target must be in a list or tuple"),
         ("(*a), b = [1, 2, 3]", "cannot use starred expression here"),
         ("(len)([1], foo=2)", "len() got an unexpected keyword argument 'foo'"),
         ("def f(*args, **kwargs): pass", "**NAME (keyword arguments) is not taken here"),
         ("def f(*a):\n    return len(a)\nf(1, nope)", "'nope' is not defined"),
         ("a, *b, *c = [1, 2]", "multiple starred expressions in assignment")])

# a = b = value binds both, left to right; a launcher's name among them is
# refused as alone.
rc, out, err = shell([], stdin="set echo off\ntotal = correct = 0\ntotal += 2\n"
                               "x = y = z = [1]\nprint(total, correct, x, y, z)\n", np=1)
check("chained assignment binds every name", rc == 0 and
      lines_of(out) == ["rank 0: 2 0 [1] [1] [1]"], out + err)
rc, out, err = shell([], stdin="q = rank = 5\n", np=2)
check("... but not the launcher's rank",
      rc == 1 and "cannot assign to 'rank': it is read-only" in err, out + err)

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

rc, out, err = script("t = zeros(1, dtype=int64) + rank\n"
                      "for k in range(world_size - 1):\n"
                      "    send_buf = t + 0\n"
                      "    if rank % 2 == 0:\n"
                      "        send send_buf dst=(rank+1)%world_size\n"
                      "        recv t src=(rank-1+world_size)%world_size\n"
                      "    else:\n"
                      "        recv t src=(rank-1+world_size)%world_size\n"
                      "        send send_buf dst=(rank+1)%world_size\n"
                      "print t\n")
check("a ring of sends in a loop, peers from the loop's arithmetic",
      rc == 0 and lines_of(out)[-4:] == ["rank %d: t = tensor([%d])" % (r, (r - 3) % 4)
                                         for r in range(4)], out + err)

# ---- operators and slices, compared with what torch prints ----

# Each case: the distlab lines (the last one prints), and the same in torch.
# EXPECTED holds torch 1.13's output for each (Debian's python3-torch); when
# a Python with torch is at hand, the test asks it again.
CASES = [
    ("t = arange(6); t += 1; t[0] = 100\nprint t[1:4]",
     "t = torch.arange(6); t += 1; t[0] = 100\nprint(t[1:4])"),
    ("t = arange(6); t[0] = 100\nprint t[::2]", "t = torch.arange(6); t[0] = 100\nprint(t[::2])"),
    ("t = arange(6)\nprint t[-2:]", "t = torch.arange(6)\nprint(t[-2:])"),
    ("m = tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])\nprint m[1]",
     "m = torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])\nprint(m[1])"),
    ("m = tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])\nprint m[1:3]",
     "m = torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])\nprint(m[1:3])"),
    ("m = tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]); m[1] = 0; m[0][1:] *= 10\nprint m",
     "m = torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]); m[1] = 0; m[0][1:] *= 10\nprint(m)"),
    ("t = arange(6) + 1\nprint t % 4", "t = torch.arange(6) + 1\nprint(t % 4)"),
    ("t = arange(6) + 1\nprint t ** 2", "t = torch.arange(6) + 1\nprint(t ** 2)"),
    ("t = arange(6)\nprint t == 5", "t = torch.arange(6)\nprint(t == 5)"),
    ("t = arange(6)\nprint t / 2", "t = torch.arange(6)\nprint(t / 2)"),
    ("f = tensor([1.5, -2.5])\nprint f % 2", "f = torch.tensor([1.5, -2.5])\nprint(f % 2)"),
    ("f = tensor([1.5, -2.5])\nprint f >= 0", "f = torch.tensor([1.5, -2.5])\nprint(f >= 0)"),
    ("i = tensor([5, -7], dtype=int32)\nprint i % 3",
     "i = torch.tensor([5, -7], dtype=torch.int32)\nprint(i % 3)"),
    ("i = tensor([5, -7], dtype=int32)\nprint i / 2",
     "i = torch.tensor([5, -7], dtype=torch.int32)\nprint(i / 2)"),
    ("i = tensor([5, -7], dtype=int32)\nprint i != 5",
     "i = torch.tensor([5, -7], dtype=torch.int32)\nprint(i != 5)"),
    ("i = tensor([5, -7], dtype=int32)\nprint i ** 2",
     "i = torch.tensor([5, -7], dtype=torch.int32)\nprint(i ** 2)"),
    ("t = arange(4, dtype=float32); t -= 1; t *= 2; t /= 4\nprint t",
     "t = torch.arange(4, dtype=torch.float32); t -= 1; t *= 2; t /= 4\nprint(t)"),
    ("t = arange(6)\nprint t[2:2]", "t = torch.arange(6)\nprint(t[2:2])"),
    ("b = tensor([True, False])\nprint b < 1", "b = torch.tensor([True, False])\nprint(b < 1)"),
    ("x = 7 % -3\nprint x", "x = 7 % -3\nprint(x)"),
    ("x = -2 ** 2\nprint x", "x = -2 ** 2\nprint(x)"),
    ("x = 2 ** -1\nprint x", "x = 2 ** -1\nprint(x)"),
    ("x = 1 < 2\nprint x", "x = 1 < 2\nprint(x)"),
]
EXPECTED = [
    "tensor([2, 3, 4])", "tensor([100,   2,   4])", "tensor([4, 5])", "tensor([4, 5, 6])",
    "tensor([[4, 5, 6],\n        [7, 8, 9]])",
    "tensor([[ 1, 20, 30],\n        [ 0,  0,  0],\n        [ 7,  8,  9]])",
    "tensor([1, 2, 3, 0, 1, 2])", "tensor([ 1,  4,  9, 16, 25, 36])",
    "tensor([False, False, False, False, False,  True])",
    "tensor([0.0000, 0.5000, 1.0000, 1.5000, 2.0000, 2.5000])", "tensor([1.5000, 1.5000])",
    "tensor([ True, False])", "tensor([2, 2], dtype=torch.int32)", "tensor([ 2.5000, -3.5000])",
    "tensor([False,  True])", "tensor([25, 49], dtype=torch.int32)",
    "tensor([-0.5000,  0.0000,  0.5000,  1.0000])", "tensor([], dtype=torch.int64)",
    "tensor([False,  True])", "-2", "-4", "0.5", "True",
]


live = torch_prints([t for _, t in CASES])
if live is not None:
    check("the stored torch output is what torch prints", live == EXPECTED,
          "\n".join("%r != %r" % (a, b) for a, b in zip(live, EXPECTED) if a != b))
for (dl, _), want in zip(CASES, EXPECTED):
    rc, out, err = shell(["-c", dl], np=1)
    # The last value printed; its continuation lines are indented under it,
    # so cutting the prefix's width gives torch's margin back.
    lines = out.rstrip("\n").split("\n")
    at = max(i for i, l in enumerate(lines) if l.startswith("  rank 0: "))
    prefix = lines[at].index(" = ") + 3
    got = "\n".join(l[prefix:] for l in lines[at:])
    check("%s  ->  %s" % (dl.split("\n")[-1], want.split("\n")[0]), rc == 0 and got == want,
          "got %r\n%s" % (got, err))

# In place keeps the dtype, as torch's add_ does; slices of a 0-d tensor fail.
rc, out, err = shell(["-c", "t = arange(3)\nt += 0.5"], np=1)
check("t += float on an integer tensor is refused as in torch",
      rc == 1 and "result type Float can't be cast to the desired output type Long" in err, err)
rc, out, err = shell(["-c", "t = arange(3)\nx = t[::-1]"], np=1)
check("a negative step is refused as in torch", rc == 1 and "step must be greater than zero" in err,
      err)
rc, out, err = shell(["-c", "x = 1 % 0"], np=1)
check("modulo by zero", rc == 1 and "integer modulo by zero" in err, err)

# Slices as views: send part of a tensor, receive into part of another.
rc, out, err = shell(["-c", "t = arange(6) * (rank + 1)\non 0: send t[2:4] dst=1\n"
                            "on 1: recv t[0:2] src=0\nprint t"], np=2)
check("send t[2:4] and recv t[0:2] work on parts of the tensors",
      rc == 0 and lines_of(out)[-2:] == ["rank 0: t = tensor([0, 1, 2, 3, 4, 5])",
                                         "rank 1: t = tensor([ 2,  3,  4,  6,  8, 10])"],
      out + err)
rc, out, err = shell(["-c", "m = ones(3, 2) * (rank + 1)\nall_reduce m[1]\nprint m"], np=2)
check("all_reduce on a row of a 2-D tensor",
      rc == 0 and lines_of(out)[-3:] == ["rank 1: m = tensor([[2., 2.],", "[3., 3.],",
                                         "[2., 2.]])"], out + err)
rc, out, err = shell(["-c", "t = arange(4)\non 0: send t[::2] dst=1\non 1: recv t src=0"], np=2)
check("a slice with a step is not contiguous",
      rc == 1 and "tensors must be contiguous" in err, err)

# A ring all-reduce by hand, with slices, against the built-in all_reduce.
RING = """t = arange(8) + 10*rank
ref = t + 0
all_reduce ref
buf = zeros(2, dtype=int64)
for k in range(world_size - 1):
    s = (rank - k) % world_size
    r = (rank - k - 1) % world_size
    h = isend t[2*s:2*s+2] dst=(rank+1)%world_size
    recv buf src=(rank-1)%world_size
    wait h
    t[2*r:2*r+2] += buf
for k in range(world_size - 1):
    s = (rank + 1 - k) % world_size
    r = (rank - k) % world_size
    h = isend t[2*s:2*s+2] dst=(rank+1)%world_size
    recv t[2*r:2*r+2] src=(rank-1)%world_size
    wait h
same = t == ref
print t
print ref
"""
rc, out, err = script(RING, np=4)
want_t = "tensor([60, 64, 68, 72, 76, 80, 84, 88])"
got = lines_of(out)
check("a hand-written ring all-reduce matches all_reduce at np=4",
      rc == 0 and all("rank %d: t = %s" % (r, want_t) in got for r in range(4))
      and all("rank %d: ref = %s" % (r, want_t) in got for r in range(4)), out + err)

# Python's builtins fail with Python's classes, so that `except ValueError:`
# catches what Python's catches (a message the shell writes in Python's
# words is read for its class); lists and tuples name themselves when out
# of range; a class is a key= (key=str, key=int); float % keeps Python's
# signed zero. Each case in its own try, printed with its class.
ERRS = [("l = [1, 2]", "l.remove(5)", "ValueError", True),
        ("e = []", "e.pop()", "IndexError", True),
        ("", "x = 'a,b'.split('')", "ValueError", True),
        ("", "x = '%d %d' % (1,)", "TypeError", True),
        ("", "x = '%d' % (1, 2)", "TypeError", True),
        ("", "x = '%x' % 2.5", "TypeError", True),
        ("", "x = '{:d}'.format('a')", "ValueError", True),
        ("", "x = int(float('nan'))", "ValueError", True),
        ("", "x = int(float('inf'))", "OverflowError", True),
        ("t = (1, 2)", "t[0] = 5", "TypeError", True),
        ("s = 'ab'", "s[0] = 'x'", "TypeError", True),
        ("", "a, b = 1", "TypeError", False),
        ("", "x = 1 in 'abc'", "TypeError", True),
        ("", "for i in range(1, 5, 0):\n        pass", "ValueError", True),
        ("import math", "x = math.exp(1000)", "ArithmeticError", True),
        ("import random", "x = random.choice([])", "IndexError", True),
        ("def down(n):\n    return down(n + 1)", "down(0)", "RecursionError", False),
        ("", "x = [1, 2][5]", "IndexError", True),
        ("", "x = (1, 2)[-3]", "LookupError", True)]
ERRS_PROG = ""
for setup, stmt, cls, with_message in ERRS:
    ERRS_PROG += (setup + "\n" if setup else "") + "try:\n    " + stmt + "\nexcept " + cls + \
        " as e:\n    print(%r, %s)\n" % (cls, "e" if with_message else "1")
ERRS_PROG += """w = ['b', 'a', 'C']
w.sort(key=str, reverse=True)
print(sorted(['10', '9', '100'], key=int), max(['1', '22'], key=float), w)
print(0 % -2.5, 2 % -0.5, -98765 % 5e-324, 3.5 % -2, -4.0 % 2)
"""
rc, out, err = shell(["-c", "set echo off\n" + ERRS_PROG], np=1)
check("Python's builtins' errors by Python's classes, classes as key=, float % signed zero",
      rc == 0 and lines_of(out) == python_lines(ERRS_PROG), out + err)

# bool(x) and repr(x) of plain values, and sum(l, start), as Python's.
BUILTINS = """cast = bool
print(bool(0), bool(-3), bool(''), bool('a'), bool([]), bool([0]), bool(None), bool(), cast(2))
print(repr('a'), repr("it's"), repr('l\\nb'), repr(1.5), repr([1, 'x']), repr(None), len(repr('ab')))
print(bool(1) + 1, isinstance(bool(1), int), type(bool(0)))
print(sum([1, 2], 10), sum([0.5], 1), sum([], 5), sum((1, 2), 0.5), sum([0.1] * 3, 0.2))
"""
rc, out, err = shell(["-c", "set echo off\n" + BUILTINS], np=1)
check("bool(x), repr(x) and sum(l, start) as Python's",
      rc == 0 and lines_of(out) == python_lines(BUILTINS), out + err)

print("lang: %d failed" % len(failures))
sys.exit(1 if failures else 0)
