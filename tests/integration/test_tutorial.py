#!/usr/bin/env python3
"""The snippets of pytorch.org's "Writing Distributed Applications with
PyTorch" typed into the real `distlab shell` on live ranks, as written, its
imports too, but for its launcher (init_process and __main__): the ring all-reduce as a def, the blocking and
non-blocking point-to-point examples, all_reduce on a group; print with
strings and several values, f-strings, list comprehensions handed to the
collectives, dim= of the reductions (max's pair of values and indices),
what functions keep to themselves, and the one-line errors of misuse.

What torch prints is stored in EXPECTED (torch 1.13, Debian's
python3-torch); when a Python with torch is at hand the test asks it
again, one process computing what each rank holds.

usage: test_tutorial.py DISTLAB
"""
import os
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures, lines_of, torch_prints  # noqa: E402

EXE = sys.argv[1]


def run(text, np, args=()):
    """Runs text as a script on standard input, as `distlab shell < file`."""
    p = subprocess.run([EXE, "shell", "--np", str(np), "--timeout", "10"] + list(args),
                       input=text, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def rank_text(out, r):
    """What rank r printed, its prefix cut from every line; a value of
    several lines keeps its continuation lines, whose indent under the
    prefix is the prefix's width."""
    prefix = "  rank %d: " % r
    got, inside = [], False
    for l in out.splitlines():
        if l.startswith(prefix):
            got.append(l[len(prefix):])
            inside = True
        elif inside and l.startswith(" " * len(prefix)):
            got.append(l[len(prefix):])
        else:
            inside = False
    return got


# ---- what torch prints ----

# Each: the torch code whose printed text a case compares with (one
# process; what a rank holds after the collectives), and the text itself.
TORCH = [
    ("print(torch.ones(3) * 10)", "tensor([10., 10., 10.])"),
    ("print(torch.ones(3) * 3)", "tensor([3., 3., 3.])"),
    ("print('Rank ', 0, ' has data ', (torch.zeros(1) + 1)[0])",
     "Rank  0  has data  tensor(1.)"),
    ("print('Rank ', 1, ' has data ', torch.ones(1)[0] * 2)", "Rank  1  has data  tensor(2.)"),
    ("print('Rank ', 2, ' has data ', torch.ones(1)[0])", "Rank  2  has data  tensor(1.)"),
    ("print('gathered', [torch.ones(2) * r for r in range(4)])",
     "gathered [tensor([0., 0.]), tensor([1., 1.]), tensor([2., 2.]), tensor([3., 3.])]"),
    ("print('gather', [torch.arange(2) + r for r in range(4)])",
     "gather [tensor([0, 1]), tensor([1, 2]), tensor([2, 3]), tensor([3, 4])]"),
    ("print('gather', [torch.zeros(2, dtype=torch.int64) for _ in range(4)])",
     "gather [tensor([0, 0]), tensor([0, 0]), tensor([0, 0]), tensor([0, 0])]"),
    ("print('scatter', torch.ones(2) * 3)", "scatter tensor([3., 3.])"),
    ("m = torch.tensor([[1., 5., 2.], [7., 0., 7.]])\nprint(m.max(dim=0))",
     "torch.return_types.max(\nvalues=tensor([7., 5., 7.]),\nindices=tensor([1, 0, 1]))"),
    ("m = torch.tensor([[1., 5., 2.], [7., 0., 7.]])\nv, i = torch.max(m, 1)\nprint(v, i)",
     "tensor([5., 7.]) tensor([1, 0])"),
    ("m = torch.tensor([[1., 5., 2.], [7., 0., 7.]])\n"
     "print(m.mean(dim=0), m.sum(dim=1), m.argmax(), m.argmin(dim=1), m.min(0).indices, "
     "m.max(dim=1).values)",
     "tensor([4.0000, 2.5000, 4.5000]) tensor([ 8., 14.]) tensor(3) tensor([0, 1]) "
     "tensor([0, 1, 0]) tensor([5., 7.])"),
    ("x = torch.tensor([[1., 2.], [3., 5.]])\nprint('mean', x.mean(0), x.sum(dim=1))",
     "mean tensor([2.0000, 3.5000]) tensor([3., 8.])"),
    ("m = torch.tensor([[1., 5., 2.], [7., 0., 7.]])\nprint('m is', m)",
     "m is tensor([[1., 5., 2.],\n        [7., 0., 7.]])"),
    ("t = torch.ones(2)\nprint(f\"rank {1}: {t}\")", "rank 1: tensor([1., 1.])"),
    ("print(None, True, 1.5, 2, [1, 'a', \"b'c\"])", "None True 1.5 2 [1, 'a', \"b'c\"]"),
]


live = torch_prints([code for code, _ in TORCH])
if live is not None:
    check("the stored torch output is what torch prints", live == [t for _, t in TORCH],
          "\n".join("%r != %r" % (a, b) for a, (_, b) in zip(live, TORCH) if a != b))
want = [t for _, t in TORCH]
# print('Rank ', r, ' has data ', x) for any rank, as Python joins it.
HAS = "Rank  %d  has data  %s"
check("the tutorial's print, as Python joins its arguments",
      [HAS % (0, "tensor(1.)"), HAS % (1, "tensor(2.)"), HAS % (2, "tensor(1.)")] == want[2:5])


def set_echo_off(text):
    return "set echo off\n" + text


def printed(out, r, word):
    """The values rank r printed on lines that start with word."""
    return [l for l in rank_text(out, r) if l.startswith(word)]


# ---- the ring all-reduce, as the tutorial writes it ----

RING = """def allreduce(send, recv):
    rank = dist.get_rank()
    size = dist.get_world_size()
    send_buff = send.clone()
    recv_buff = send.clone()
    accum = send.clone()
    left = ((rank - 1) + size) % size
    right = (rank + 1) % size
    for i in range(size - 1):
        if i % 2 == 0:
            # Send send_buff
            send_req = dist.isend(send_buff, right)
            dist.recv(recv_buff, left)
            accum[:] += recv_buff[:]
        else:
            # Send recv_buff
            send_req = dist.isend(recv_buff, right)
            dist.recv(send_buff, left)
            accum[:] += send_buff[:]
        send_req.wait()
    recv[:] = accum[:]
"""

for np, total in ((4, want[0]), (2, want[1])):
    rc, out, err = run(RING + "t = torch.ones(3) * (rank + 1); out = torch.zeros(3); "
                              "allreduce(t, out); print(out)\n", np)
    got = lines_of(out)
    check("the tutorial's ring all-reduce at np=%d gives %s" % (np, total),
          rc == 0 and all("rank %d: out = %s" % (r, total) in got for r in range(np))
          and got[-np:] == ["rank %d: out = %s" % (r, total) for r in range(np)], out + err)
    # A function prints nothing of its own: no echo of its assignments, of
    # its recv or of its wait.
    check("the function's statements echo nothing (np=%d)" % np,
          not any(w in out for w in ("send_buff", "accum", "received", "done", "left")),
          out)

# Keyword arguments; rank assigned in the function is its own: the rank's
# rank is untouched, and the function's locals stay inside it.
rc, out, err = run(RING + "t = torch.ones(3) * (rank + 1); out = torch.zeros(3)\n"
                          "allreduce(recv=out, send=t)\nprint('rank', rank, out)\n", 4)
check("keyword arguments, and rank after a function assigned its own",
      rc == 0 and lines_of(out)[-4:] == ["rank %d: rank %d %s" % (r, r, want[0])
                                         for r in range(4)], out + err)
rc, out, err = run(RING + "t = torch.ones(3); out = torch.zeros(3); allreduce(t, out)\n"
                          "print(accum)\n", 2)
check("a function's variables do not leak into the rank's",
      rc == 1 and "'accum' is not defined" in err, out + err)

# ---- the point-to-point examples ----

BLOCKING = '''"""Blocking point-to-point communication."""
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

def run(rank, size):
    tensor = torch.zeros(1)
    if rank == 0:
        tensor += 1
        # Send the tensor to process 1
        dist.send(tensor=tensor, dst=1)
    else:
        # Receive tensor from process 0
        dist.recv(tensor=tensor, src=0)
    print('Rank ', rank, ' has data ', tensor[0])

run(dist.get_rank(), dist.get_world_size())
'''
rc, out, err = run(BLOCKING, 2)
check("the blocking point-to-point example",
      rc == 0 and lines_of(out) == ["rank %d: " % r + HAS % (r, "tensor(1.)") for r in range(2)],
      out + err)

NONBLOCKING = '''"""Non-blocking point-to-point communication."""

def run(rank, size):
    tensor = torch.zeros(1)
    req = None
    if rank == 0:
        tensor += 1
        # Send the tensor to process 1
        req = dist.isend(tensor=tensor, dst=1)
        print('Rank 0 started sending')
    else:
        # Receive tensor from process 0
        req = dist.irecv(tensor=tensor, src=0)
        print('Rank 1 started receiving')
    req.wait()
    print('Rank ', rank, ' has data ', tensor[0])

run(rank, world_size)
'''
rc, out, err = run(NONBLOCKING, 2)
check("the non-blocking point-to-point example",
      rc == 0 and lines_of(out) == ["rank 0: Rank 0 started sending",
                                    "rank 0: " + HAS % (0, "tensor(1.)"),
                                    "rank 1: Rank 1 started receiving",
                                    "rank 1: " + HAS % (1, "tensor(1.)")], out + err)

GROUP = '''""" All-Reduce example."""
def run(rank, size):
    """ Simple collective communication. """
    group = dist.new_group([0, 1])
    tensor = torch.ones(1)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=group)
    print('Rank ', rank, ' has data ', tensor[0])

run(rank, world_size)
'''
rc, out, err = run(GROUP, 4)
check("the all_reduce example on a group of ranks 0 and 1, at np=4",
      rc == 0 and lines_of(out) == ["rank %d: " % r + HAS % (r, "tensor(2.)" if r < 2 else
                                                               "tensor(1.)") for r in range(4)],
      out + err)

# ---- lists from comprehensions, where the collectives take lists ----

LISTS = """tensor = torch.ones(2) * rank
tensor_list = [torch.zeros(2) for _ in range(world_size)]
dist.all_gather(tensor_list, tensor)
print('gathered', tensor_list)
gather_list = [torch.zeros(2, dtype=torch.int64) for _ in range(world_size)]
x = torch.arange(2) + rank
if rank == 0:
    dist.gather(x, gather_list=gather_list, dst=0)
else:
    dist.gather(x, dst=0)
print('gather', gather_list)
y = torch.zeros(2)
if rank == 0:
    dist.scatter(y, scatter_list=[torch.ones(2) * i for i in range(world_size)], src=0)
else:
    dist.scatter(y, src=0)
print('scatter', y)
"""
rc, out, err = run(LISTS, 4)
check("all_gather, gather and scatter take lists made by comprehensions (np=4)",
      rc == 0 and all(printed(out, r, "gathered ") == [want[5]] for r in range(4))
      and printed(out, 0, "gather ") == [want[6]]
      and all(printed(out, r, "gather ") == [want[7]] for r in (1, 2, 3))
      and printed(out, 3, "scatter ") == [want[8]]
      and all(printed(out, r, "scatter ") == ["scatter tensor([%d., %d.])" % (r, r)]
              for r in range(3)), out + err)

# ---- dim= and print as Python prints ----

for code, text in TORCH[9:]:
    rc, out, err = run(set_echo_off(code) + "\n", 1)
    got = "\n".join(rank_text(out, 0))
    check("%s  ->  %s" % (code.split("\n")[-1], text.split("\n")[0]), rc == 0 and got == text,
          "got %r\n%s" % (got, err))

# ---- a torchrun script's first lines: its environment and its rank ----

TORCHRUN = """import os
rank = int(os.environ["RANK"])
world_size = int(os.environ["WORLD_SIZE"])
local_rank = int(os.environ.get("LOCAL_RANK", "0"))
os.environ["MY_TAG"] = f"r{rank}"
assert rank == dist.get_rank()
print(rank, world_size, local_rank, os.getenv("MY_TAG"), os.getenv("NOPE", default="-"),
      "RANK" in os.environ)
"""
rc, out, err = run(set_echo_off(TORCHRUN), 2)
check("os.environ gives torchrun's RANK, WORLD_SIZE and LOCAL_RANK, and takes a variable",
      rc == 0 and rank_text(out, 0) == ["0 2 0 r0 - True"] and
      rank_text(out, 1) == ["1 2 1 r1 - True"], out + err)

# ---- functions: by reference, defaults, keywords, return, recursion ----

FUNCS = """def scale(t, k=2):
    t *= k
    return t.sum()
a = torch.ones(2)
s = scale(a)
print('after', a, s)
s = scale(k=3, t=a)
print('after', a, s)
def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)
def pair():
    return 1, 'two'
one, two = pair()
print(fact(10), one, two, [fact(i) for i in range(1, 5)])
"""
rc, out, err = run(set_echo_off(FUNCS), 1)
check("tensors pass by reference, defaults, keywords, return, recursion and unpacking",
      rc == 0 and rank_text(out, 0) == ["after tensor([2., 2.]) tensor(4.)",
                                        "after tensor([6., 6.]) tensor(12.)",
                                        "3628800 1 two [1, 2, 6, 24]"], out + err)

# ---- torch.distributed as its docstrings and a learner type it ----

# Each: what it shows, the world size, the code every rank runs, and what
# each rank printed in torch 1.13 (gloo, one process per rank).
DIST = [
    ("r = dist.all_reduce(t) and the other calls bind None, as torch's return it",
     2,
     "t = torch.ones(2)\nr = dist.all_reduce(t)\nprint('r', r, t)\nr = dist.broadcast(t, src=0)\nprint('r', r)\nr = dist.barrier()\nprint('r', r)\nif rank == 0:\n    r = dist.send(t, dst=1)\nelse:\n    r = dist.recv(t, src=0)\nprint('r', r)\nl = [torch.zeros(2) for _ in range(2)]\nr = dist.all_gather(l, t)\nprint('r', r, l)\n",
     [['r None tensor([2., 2.])', 'r None', 'r None', 'r None', 'r None [tensor([2., 2.]), tensor([2., 2.])]'], ['r None tensor([2., 2.])', 'r None', 'r None', 'r 0', 'r None [tensor([2., 2.]), tensor([2., 2.])]']]),
    ("w.is_completed() after a wait, of a collective's and of a p2p handle; print(w.wait()) prints True alone",
     2,
     "t = torch.ones(2) * (rank + 1)\nw = dist.all_reduce(t, async_op=True)\nw.wait()\nprint('c', w.is_completed(), t)\nif rank == 0:\n    w = dist.isend(t * 2, dst=1)\nelse:\n    w = dist.irecv(t, src=0)\nw.wait()\nprint('p2p', w.is_completed(), t)\nx = torch.ones(1)\nreqs = []\nreqs.append(dist.all_reduce(x, async_op=True))\nprint('wait', reqs[0].wait(), reqs[0].is_completed(), x)\n",
     [['c True tensor([3., 3.])', 'p2p True tensor([3., 3.])', 'wait True True tensor([2.])'], ['c True tensor([3., 3.])', 'p2p True tensor([6., 6.])', 'wait True True tensor([2.])']]),
    ('wait() and is_completed() of a tensor are AttributeError, as in torch',
     2,
     "t = torch.ones(2)\nfor m in ['wait', 'is_completed']:\n    try:\n        if m == 'wait':\n            t.wait()\n        else:\n            t.is_completed()\n    except AttributeError as e:\n        print('AttributeError', m)\n",
     [['AttributeError wait', 'AttributeError is_completed'], ['AttributeError wait', 'AttributeError is_completed']]),
    ('dist.group.WORLD (and torch.distributed.group.WORLD) as group= of collectives, get_rank, object collectives and a batch of P2POp',
     3,
     "g = dist.group.WORLD\nt = torch.ones(2) * rank\ndist.all_reduce(t, group=dist.group.WORLD)\nprint('t', t, dist.get_world_size(group=dist.group.WORLD), dist.get_rank(dist.group.WORLD), dist.get_rank(g))\ndist.barrier(group=g)\nout = [None] * 3\ndist.all_gather_object(out, {'r': rank}, group=torch.distributed.group.WORLD)\ngs = [g, dist.group.WORLD]\nx = torch.arange(2) + rank\ndist.broadcast(x, src=2, group=gs[1])\nr = torch.zeros(2, dtype=torch.int64)\nops = [dist.P2POp(dist.isend, x * rank, (rank + 1) % 3, group=g), dist.P2POp(dist.irecv, r, (rank + 2) % 3, group=g)]\nreqs = dist.batch_isend_irecv(ops)\nfor q in reqs:\n    q.wait()\nprint('o', out, x, r)\ndel g\ngs = None\nfor i in range(3):\n    dist.all_reduce(x, group=dist.group.WORLD)\nprint('x', x)\n",
     [['t tensor([3., 3.]) 3 0 0', "o [{'r': 0}, {'r': 1}, {'r': 2}] tensor([2, 3]) tensor([4, 6])", 'x tensor([54, 81])'], ['t tensor([3., 3.]) 3 1 1', "o [{'r': 0}, {'r': 1}, {'r': 2}] tensor([2, 3]) tensor([0, 0])", 'x tensor([54, 81])'], ['t tensor([3., 3.]) 3 2 2', "o [{'r': 0}, {'r': 1}, {'r': 2}] tensor([2, 3]) tensor([2, 3])", 'x tensor([54, 81])']]),
    ('dist.is_available() and torch.distributed.NAME of the set-up functions',
     2,
     "import torch.distributed\nprint('a', dist.is_available(), torch.distributed.is_available(), torch.distributed.is_initialized())\ntorch.distributed.barrier()\nprint('b', torch.distributed.get_rank(), torch.distributed.get_world_size())\n",
     [['a True True True', 'b 0 2'], ['a True True True', 'b 1 2']]),
    ('P2POps of one group, written apart (group=g, group=groups[0]), batch together',
     2,
     "g = dist.new_group([0, 1])\nx = torch.ones(2) * (rank + 1)\nr = torch.zeros(2)\nops = [dist.P2POp(dist.isend, x, 1 - rank, group=g), dist.P2POp(dist.irecv, r, 1 - rank, group=g)]\nreqs = dist.batch_isend_irecv(ops)\nfor q in reqs:\n    q.wait()\nprint('r', r)\ngroups = [g]\nsend_op = dist.P2POp(dist.isend, x * 10, 1 - rank, group=groups[0])\nrecv_op = dist.P2POp(dist.irecv, r, 1 - rank, group=g)\nreqs = dist.batch_isend_irecv([send_op, recv_op])\nfor q in reqs:\n    q.wait()\nprint('r', r)\n",
     [['r tensor([2., 2.])', 'r tensor([20., 20.])'], ['r tensor([1., 1.])', 'r tensor([10., 10.])']]),
    # torch compares the ops' group objects: None (no group=) is not
    # dist.group.WORLD, though both are the world
    ('P2POps of no group and of dist.group.WORLD do not batch together',
     2,
     "W = dist.group.WORLD\nx = torch.zeros(2)\npairs = [[dist.P2POp(dist.isend, x * 0 + rank, 1 - rank, group=W), dist.P2POp(dist.irecv, x, 1 - rank)], [dist.P2POp(dist.isend, x * 0 + rank, 1 - rank, group=None), dist.P2POp(dist.irecv, x, 1 - rank, group=dist.group.WORLD)], [dist.P2POp(dist.isend, x * 0 + rank, 1 - rank), dist.P2POp(dist.irecv, x, 1 - rank, group=None)]]\nfor ops in pairs:\n    try:\n        reqs = dist.batch_isend_irecv(ops)\n        for q in reqs:\n            q.wait()\n        print('ok', x)\n    except RuntimeError:\n        print('RuntimeError')\n",
     [['RuntimeError', 'RuntimeError', 'ok tensor([1., 1.])'], ['RuntimeError', 'RuntimeError', 'ok tensor([0., 0.])']]),
    ('print(w.wait()) and done = w.wait() with `set echo print` print only what print prints',
     2,
     "x = torch.ones(1)\nw = dist.all_reduce(x, async_op=True)\nprint('wait', w.wait())\nw = dist.all_reduce(x, async_op=True)\ndone = w.wait()\nprint('done', done, x)\n",
     [['wait True', 'done True tensor([4.])'], ['wait True', 'done True tensor([4.])']]),
    ("BAND, BOR and BXOR of a float tensor are torch's RuntimeError, in its words",
     2,
     "t = torch.ones(3) * (rank + 1)\nfor op in [dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR]:\n    try:\n        dist.all_reduce(t, op=op)\n    except RuntimeError as e:\n        print('RuntimeError', e)\ntry:\n    d = t.double()\n    dist.reduce(d, dst=0, op=dist.ReduceOp.BAND)\nexcept RuntimeError as e:\n    print('RuntimeError', e)\ni = torch.tensor([6, 3]) + rank\ndist.all_reduce(i, op=dist.ReduceOp.BXOR)\nprint('t', t, i)\n",
     [['RuntimeError Cannot use ReduceOp.BAND with non-integral dtype', 'RuntimeError Cannot use ReduceOp.BOR with non-integral dtype', 'RuntimeError Cannot use ReduceOp.BXOR with non-integral dtype', 'RuntimeError Cannot use ReduceOp.BAND with non-integral dtype', 't tensor([1., 1., 1.]) tensor([1, 7])'], ['RuntimeError Cannot use ReduceOp.BAND with non-integral dtype', 'RuntimeError Cannot use ReduceOp.BOR with non-integral dtype', 'RuntimeError Cannot use ReduceOp.BXOR with non-integral dtype', 'RuntimeError Cannot use ReduceOp.BAND with non-integral dtype', 't tensor([2., 2., 2.]) tensor([1, 7])']]),
]
for what, np, code, want in DIST:
    rc, out, err = run("set echo print\n" + code, np)
    check(what, rc == 0 and [rank_text(out, r) for r in range(np)] == want,
          "want %r\n%s%s" % (want, out, err))

# ---- errors: one line that says what is wrong ----

# Refused before it runs: the line with a caret under the column.
rc, out, err = run("def f(x):\n    return x\nreturn 1\n", 2)
check("error: return outside a def is refused with a caret",
      rc == 1 and "  return 1\n  ^ 'return' outside function" in err
      and "stdin: line 3 failed" in err, err)

# Failed on the ranks: one line naming the ranks and the problem, then the
# script's line that failed.
ERRORS = [
    ("x = nosuch(1)", "unknown function 'nosuch' (`help` lists the shell's functions)"),
    ("x = nosuch[0]", "'nosuch' is not defined"),
    ("nosuch.wait()", "'nosuch' is not defined"),
    ("assert 1 + 1 == 3, f'{1 + 1} is not 3'", "AssertionError: 2 is not 3"),
    ("x = os.environ['DISTLAB_NO_SUCH_VARIABLE']", "KeyError: 'DISTLAB_NO_SUCH_VARIABLE'"),
    ("os.environ['A'] = 1", "str expected, not int"),
    ("x = os.environ['DISTLAB_TOKEN']", "KeyError: 'DISTLAB_TOKEN'"),
    ("os.environ['DISTLAB_TIMEOUT'] = '1'",
     "DISTLAB_TIMEOUT is the rank's own: a script cannot set it"),
    ("def f(a, b):\n    return a + b\nx = f(1, 2, 3)",
     "f() takes 2 positional arguments but 3 were given"),
    ("def f(a, b):\n    return a + b\nx = f(1)",
     "f() missing 1 required positional argument: 'b'"),
    ("def f(a):\n    return a\nx = f(1, b=2)", "f() got an unexpected keyword argument 'b'"),
    ("x = [i for i in 5]", "cannot iterate over an int"),
    ("def f(n):\n    return f(n + 1)\nx = f(0)", "maximum recursion depth exceeded"),
    ("def f(n):\n    y = 1\n    return y + nope\nx = f(0)",
     "in f(), line 3 of its def, column 16: 'nope' is not defined"),
    ("x = 1\ndef g():\n    x += 1\ng()", "local variable 'x' referenced before assignment"),
    ("t = torch.ones(2)\nt.wait()", "wait() is a method of the handle"),
    ("t = torch.ones(2)\nx = t.values", "'values' is an attribute of the pair"),
    ("x = 'a' + 1", 'can only concatenate str (not "int") to str'),
]
for text, msg in ERRORS:
    rc, out, err = run(text + "\n", 2)
    errs = [l for l in err.splitlines() if l.startswith("distlab: ")]
    check("error: %s" % msg, rc == 1 and len(errs) == 2 and msg in errs[0]
          and "line" in errs[1] and "failed" in errs[1], err)

print("tutorial: %d failed" % len(failures))
sys.exit(1 if failures else 0)
