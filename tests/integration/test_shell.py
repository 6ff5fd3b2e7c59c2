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
import time as _time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures, lines_of  # noqa: E402

EXE = sys.argv[1]


def shell(args, stdin=None, np=3):
    p = subprocess.run([EXE, "shell", "--np", str(np), "--timeout", "10"] + args, input=stdin,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


# Tensors, rank/world_size arithmetic and all_reduce, as in torch's tutorial.
rc, out, err = shell(["-c", "t = arange(2) + 1 + 2*rank; all_reduce t op=sum"], np=4)
want = ["rank %d: t = tensor([%d, %d])" % (r, 1 + 2 * r, 2 + 2 * r) for r in range(4)]
want += ["rank %d: t = tensor([16, 20])" % r for r in range(4)]
check("all_reduce as in torch's example", rc == 0 and lines_of(out) == want, out + err)

# A float sum gives every rank the same bits, whatever the algorithm: the
# largest and the smallest of each element over the ranks are equal. (The
# linear all_reduce, the default here, folds the vectors in gloo's order on
# every rank; rd and the ring reduce the same pairs on both sides.)
for algo in ("", "set algo all_reduce rd; ", "set algo all_reduce ring; "):
    for np_ in (3, 4):
        rc, out, err = shell(["-c", algo + "torch.manual_seed(rank); t = torch.rand(500); "
                              "all_reduce t; m = t * 1; all_reduce m op=max; n = t * 1; "
                              "all_reduce n op=min; print((m - n).abs().max())"], np=np_)
        check("a float all_reduce gives every rank the same bits (%snp %d)" % (algo, np_),
              rc == 0 and out.count("value = tensor(0.)") == np_, out + err)

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

# Work in flight keeps its tensor alive, as torch's handle does: a tensor
# the script drops before wait() is not freed under the irecv, so that a
# new tensor in the same memory is not written into.
rc, out, err = shell(["-c", "t = ones(4) * 7; on 0: h = irecv t src=1; on 0: t = None; "
                            "u = zeros(4); v = zeros(4); on 1: send t dst=0; on 0: wait h; "
                            "on 0: print u; on 0: print v"], np=2)
check("a tensor dropped under an irecv stays the irecv's",
      rc == 0 and lines_of(out)[-2:] == ["rank 0: u = tensor([0., 0., 0., 0.])",
                                         "rank 0: v = tensor([0., 0., 0., 0.])"], out + err)
rc, out, err = shell(["-c", "t = ones(3) * (rank + 1)\nh = dist.all_reduce(t, async_op=True)\n"
                            "t = None\nu = zeros(3)\nv = zeros(3)\nh.wait()\nprint(u + v)"],
                     np=2)
check("a tensor dropped under an async all_reduce stays the collective's",
      rc == 0 and lines_of(out)[-2:] == ["rank 0: value = tensor([0., 0., 0.])",
                                         "rank 1: value = tensor([0., 0., 0.])"], out + err)
rc, out, err = shell(["-c", "bufs = [ones(2) * 5, ones(2)]\nreqs = []\nif rank == 0:\n"
                            "    reqs.append(dist.irecv(bufs[0], src=1))\n    bufs = None\n"
                            "    v = zeros(2)\n    w = zeros(2)\nelse:\n"
                            "    dist.send(bufs[0], dst=0)\nfor r in reqs:\n    r.wait()\n"
                            "if rank == 0:\n    print(v + w)"], np=2)
check("a list dropped under an irecv into its item stays the irecv's",
      rc == 0 and lines_of(out)[-1:] == ["rank 0: value = tensor([0., 0.])"], out + err)

# A loop's variable is the list's own tensor, as in Python: async work on
# it lands in the list, whether it ends before or after the iteration and
# whether the variable is bound anew; a later loop sees what landed; an
# item the body replaces keeps the new value while the work fills the old.
rc, out, err = shell(["-c", "grads = [ones(2) * (rank + 1), ones(3)]\nreqs = []\n"
                            "for g in grads:\n    reqs.append(dist.all_reduce(g, async_op=True))\n"
                            "for r in reqs:\n    r.wait()\nprint(grads)"], np=2)
check("async all_reduce of a loop's variable lands in the list",
      rc == 0 and lines_of(out)[-2:] == [
          "rank %d: grads = [tensor([3., 3.]), tensor([2., 2., 2.])]" % r for r in range(2)],
      out + err)
rc, out, err = shell(["-c", "grads = [ones(2) * (rank + 1), ones(3)]\nfor g in grads:\n"
                            "    h = dist.all_reduce(g, async_op=True)\n    g = None\n"
                            "h.wait()\nprint(grads)"], np=2)
check("async all_reduce of a loop's variable bound anew lands in the list",
      rc == 0 and lines_of(out)[-2:] == [
          "rank %d: grads = [tensor([3., 3.]), tensor([2., 2., 2.])]" % r for r in range(2)],
      out + err)
rc, out, err = shell(["-c", "grads = [ones(2) * (rank + 1)]\nu = ones(1)\nreqs = []\n"
                            "for g in grads:\n    reqs.append(dist.all_reduce(g, async_op=True))\n"
                            "dist.all_reduce(u)\ngrads[0] += 100\nfor r in reqs:\n    r.wait()\n"
                            "print(grads)"], np=2)
check("a write after async work on a loop's variable is not undone by it",
      rc == 0 and lines_of(out)[-2:] == ["rank %d: grads = [tensor([103., 103.])]" % r
                                         for r in range(2)], out + err)
rc, out, err = shell(["-c", "bufs = [zeros(2), zeros(3)]\nreqs = []\nif rank == 0:\n"
                            "    for b in bufs:\n        reqs.append(dist.irecv(b, src=1))\n"
                            "dist.barrier()\nif rank == 0:\n    i = 0\n    for b in bufs:\n"
                            "        reqs[i].wait()\n        b *= 10\n        i += 1\n"
                            "    print(bufs)\nelse:\n    dist.send(ones(2) * 5, dst=0)\n"
                            "    dist.send(ones(3) * 6, dst=0)"], np=2)
check("irecv into a loop's variable lands in the list, and a later loop sees it",
      rc == 0 and lines_of(out)[-1] == "rank 0: bufs = [tensor([50., 50.]), tensor([60., 60., 60.])]",
      out + err)
rc, out, err = shell(["-c", "bufs = [zeros(2)]\nreqs = []\nif rank == 0:\n    for b in bufs:\n"
                            "        reqs.append(dist.irecv(b, src=1))\n        bufs[0] = ones(2) * 9\n"
                            "dist.barrier()\nif rank == 1:\n    dist.send(ones(2) * 5, dst=0)\n"
                            "for r in reqs:\n    r.wait()\nif rank == 0:\n    print(bufs, b)"], np=2)
check("an item replaced under an irecv into the loop's variable keeps its new value",
      rc == 0 and lines_of(out)[-1] == "rank 0: [tensor([9., 9.])] tensor([5., 5.])", out + err)
rc, out, err = shell(["-c", "set echo print\ngrads = [ones(2), 7, ones(1)]\n"
                            "for i, g in enumerate(grads, 1):\n    if i != 2:\n        g *= i + 1\n"
                            "print(grads)"], np=1)
check("for i, g in enumerate(grads) gives the list's tensors too",
      rc == 0 and lines_of(out) == ["rank 0: [tensor([2., 2.]), 7, tensor([4.])]"],
      out + err)
rc, out, err = shell(["-c", "grads = []\ngrads += [ones(2) * (rank + 1)]\nfor g in grads:\n"
                            "    dist.all_reduce(g)\n    g /= 2\nprint(grads)"], np=2)
check("a list grown with += is walked as the list it is",
      rc == 0 and lines_of(out)[-2:] == ["rank %d: grads = [tensor([1.5000, 1.5000])]" % r
                                         for r in range(2)], out + err)
rc, out, err = shell(["-c", "set echo print\ngrads = [zeros(1)]\ndef f(n):\n"
                            "    for g in grads:\n        if n > 0:\n            f(n - 1)\n"
                            "        g += 1\n    return 0\nf(70)\nprint(grads)"], np=1)
check("loops nested 71 deep each give the list's tensor",
      rc == 0 and lines_of(out) == ["rank 0: grads = [tensor([71.])]"], out + err)
rc, out, err = shell(["-c", "grads = [ones(2), ones(3)]\nfor g in grads:\n    g += 1\n"
                            "    grads = None\n    g *= 2\nprint(g)"], np=1)
check("a loop's variable outlives the list the body dropped",
      rc == 0 and lines_of(out)[-1] == "rank 0: g = tensor([4., 4., 4.])", out + err)
rc, out, err = shell(["-c", "grads = [ones(2) * (rank + 1), ones(3)]\nreqs = []\n"
                            "for i in range(len(grads)):\n"
                            "    reqs.append(dist.all_reduce(grads[i], async_op=True))\n"
                            "for r in reqs:\n    r.wait()\nprint(grads)"], np=2)
check("async all_reduce of the list's items lands in the list",
      rc == 0 and lines_of(out)[-2:] == [
          "rank %d: grads = [tensor([3., 3.]), tensor([2., 2., 2.])]" % r for r in range(2)],
      out + err)
# The isend's tensor is small enough to be copied as it is posted (eager):
# a larger one is read in place, and changing it before the wait would race
# with the receiver, as in torch ("undefined behavior").
rc, out, err = shell(["-c", "grads = [ones(200), ones(3)]\nreqs = []\nif rank == 0:\n"
                            "    for g in grads:\n        reqs.append(dist.isend(g, dst=1))\n"
                            "    grads[0] += 100\n    for r in reqs:\n        r.wait()\n"
                            "    print(grads[0].sum())\nelse:\n    a = zeros(200)\n"
                            "    b = zeros(3)\n    dist.recv(a, src=0)\n    dist.recv(b, src=0)\n"
                            "    print(a.sum())"], np=2)
check("isend of a loop's variable sends it and leaves the list alone",
      rc == 0 and "rank 0: value = tensor(20200.)" in lines_of(out)
      and "rank 1: value = tensor(200.)" in lines_of(out), out + err)
rc, out, err = shell(["-c", "grads = [ones(2), ones(3)]\nfor g in grads:\n    g += 1\n"
                            "    g = None\nprint(grads)"], np=1)
check("a loop's variable changed in place, then bound anew, changed the list",
      rc == 0 and lines_of(out)[-1] == "rank 0: grads = [tensor([2., 2.]), tensor([2., 2., 2.])]",
      out + err)

# A tensor a call only reads may be computed where it stands; one it
# writes must be a variable.
rc, out, err = shell(["-c", "if rank == 0:\n    dist.send(torch.ones(2) * 3, dst=1)\n"
                            "    h = dist.isend(torch.arange(3) + 1, dst=1)\n    h.wait()\n"
                            "else:\n    t = zeros(2)\n    u = zeros(3, dtype=torch.int64)\n"
                            "    dist.recv(t, src=0)\n    dist.recv(u, src=0)\n    print(t, u)\n"
                            "out = [zeros(1), zeros(1)]\ndist.all_gather(out, ones(1) * rank)\n"
                            "print(out)"], np=2)
check("send, isend and all_gather of a computed tensor",
      rc == 0 and "rank 1: tensor([3., 3.]) tensor([1, 2, 3])" in lines_of(out)
      and lines_of(out)[-2:] == ["rank %d: out = [tensor([0.]), tensor([1.])]" % r
                                 for r in range(2)], out + err)
rc, out, err = shell(["-c", "dist.all_reduce(ones(1))"], np=2)
check("all_reduce of a computed tensor is refused: nothing could read its result",
      rc == 1 and "all_reduce: the tensor must be a variable or a slice of one, not a computed "
      "value" in err, out + err)
rc, out, err = shell(["-c", "dist.send(5, dst=1)"], np=2)
check("send of a number is refused", rc == 1 and
      "column 11: send: the tensor is an int, not a tensor" in err, out + err)

# torch's object collectives: numbers, strings, None, tensors, lists and
# tuples move between ranks as torch pickles them.
rc, out, err = shell(["-c", "objs = [None] * world_size\n"
                            "dist.all_gather_object(objs, [rank, 'r%d' % rank, (0.5, True)])\n"
                            "out = [None] * 3\n"
                            "dist.gather_object(ones(2) * rank, out if rank == 0 else None, dst=0)\n"
                            "b = ['a', None, arange(2)] if rank == 1 else [0, 0, 0]\n"
                            "dist.broadcast_object_list(b, src=1)\no = [None]\n"
                            "dist.scatter_object_list(o, [1.5, 'x', [7]] if rank == 2 else None, "
                            "src=2)\nprint(objs[2], out, b, o)"], np=3)
check("all_gather_object, gather_object, broadcast_object_list, scatter_object_list",
      rc == 0 and lines_of(out)[-3:] == [
          "rank 0: [2, 'r2', (0.5, True)] [tensor([0., 0.]), tensor([1., 1.]), tensor([2., 2.])] "
          "['a', None, tensor([0, 1])] [1.5]",
          "rank 1: [2, 'r2', (0.5, True)] [None, None, None] ['a', None, tensor([0, 1])] ['x']",
          "rank 2: [2, 'r2', (0.5, True)] [None, None, None] ['a', None, tensor([0, 1])] [[7]]"],
      out + err)
# The object collectives' examples in torch's documentation, as written
# there (np=3); a dict among the objects.
rc, out, err = shell(["-c", "gather_objects = ['foo', 12, {1: 2}]\n"
                            "output = [None for _ in gather_objects]\n"
                            "dist.all_gather_object(output, gather_objects[dist.get_rank()])\n"
                            "if dist.get_rank() == 0:\n    objects = ['foo', 12, {1: 2}]\n"
                            "else:\n    objects = [None, None, None]\n"
                            "device = torch.device('cpu')\n"
                            "dist.broadcast_object_list(objects, src=0, device=device)\n"
                            "output_list = [None]\n"
                            "dist.scatter_object_list(output_list, objects, src=0)\n"
                            "print(output, objects, output_list)"], np=3)
check("torch's object collective examples, a dict among the objects",
      rc == 0 and lines_of(out)[-3:] == [
          "rank %d: ['foo', 12, {1: 2}] ['foo', 12, {1: 2}] [%s]" % (r, x)
          for r, x in enumerate(["'foo'", "12", "{1: 2}"])], out + err)

# Dicts, as Python gives them (the values printed by Python 3.11 and
# torch 1.13 running the same code, the collectives' sums written in): a
# collective writes into a dict's tensor, and a loop over d.items() gives
# the dict's own tensors.
rc, out, err = shell(["-c", "stats = {'loss': torch.tensor([float(rank + 1)]), "
                            "'n': torch.tensor([2])}\n"
                            "dist.all_reduce(stats['loss'])\n"
                            "for k, v in stats.items():\n"
                            "    dist.all_reduce(v, op=dist.ReduceOp.MAX)\n    v *= 2\n"
                            "hist = {'loss': []}\n"
                            "for i in range(3):\n    hist['loss'].append(i * 10 + rank)\n"
                            "hist['steps'] = len(hist['loss'])\nhist['steps'] += 1\n"
                            "e = dict(zip(['a', 'b'], [1, 2]), c=3)\ne.update({'a': 0})\n"
                            "x = e.pop('b')\n"
                            "print(stats, hist, e, x, 'a' in e, len(e), sorted(e), "
                            "{1: 1} == {1.0: 1, True: 1}, {k: v for k, v in e.items() if v})"],
                     np=2)
check("dicts: displays, d[k] written by a collective and a loop, methods, comprehension",
      rc == 0 and lines_of(out)[-2:] == [
          "rank %d: {'loss': tensor([6.]), 'n': tensor([4])} {'loss': [%d, %d, %d], 'steps': 4} "
          "{'a': 0, 'c': 3} 2 True 2 ['a', 'c'] True {'c': 3}" % (r, r, 10 + r, 20 + r)
          for r in range(2)], out + err)
# Deeper: entries of entries written in place, tuple and None keys, a
# dict unpacked and handed to a def (the caller's, as in Python), update
# inside a loop over items (the loop's tensor stays the dict's), views
# compared as sets. Python 3.11 with torch 1.13 printed the line.
rc, out, err = shell(["-c", "set echo off\n"
                            "d = {'n': {'a': 1, 't': torch.zeros(3)}, "
                            "'l': [torch.ones(2), [1, 2]], None: 0, (1, 2): 5}\n"
                            "d['n']['b'] = 2\n"
                            "d['n']['a'] += 5\n"
                            "d['n']['t'][0] = 7\n"
                            "d['l'][1][0] = 9\n"
                            "d['l'][1].append(3)\n"
                            "d[None] += 1\n"
                            "d[1, 2] += 1\n"
                            "a, b = {'p': 1, 'q': 2}\n"
                            "def f(dd):\n"
                            "    for k in dd:\n"
                            "        dd[k] = 0 if k == 'q' else dd[k]\n"
                            "    dd['p'] += 10\n"
                            "s = {'p': 1, 'q': 2}\n"
                            "f(s)\n"
                            "e = {'x': torch.zeros(2), 'lr': 1}\n"
                            "for k, v in e.items():\n"
                            "    e.update(lr=0.5)\n"
                            "    v += 100\n"
                            "print(d, a, b, s, e, e.keys() == {'lr': 0, 'x': 1}.keys(), "
                            "d == d.copy())"], np=1)
check("dicts: nested entries written, tuple and None keys, a dict given to a def, views",
      rc == 0 and lines_of(out) == [
          "rank 0: {'n': {'a': 6, 't': tensor([7., 0., 0.]), 'b': 2}, 'l': [tensor([1., 1.]), "
          "[9, 2, 3]], None: 1, (1, 2): 6} p q {'p': 11, 'q': 0} {'x': tensor([100., 100.]), "
          "'lr': 0.5} True True"], out + err)
# A subscript that calls a function which grows the list: the entry is
# found after the call, in the list's new memory (Python's values); a
# None inside a tuple key; an integral float near 2**63 is its int's key.
rc, out, err = shell(["-c", "set echo off\nl = [[0, 0], 1]\ndef f():\n    l.append(5)\n"
                            "    l.append(6)\n    l.append(7)\n    return 0\nl[0][f()] = 7\n"
                            "d = {None: torch.arange(6).reshape(2, 3), (None, 1): 'key'}\n"
                            "h = {9210000000000000000: 1}\n"
                            "print(l, d[None, 1], 9.21e18 in h)"], np=1)
check("an entry found after its subscript's call; (None, 1) a key; 9.21e18 in h",
      rc == 0 and lines_of(out) == ["rank 0: [[7, 0], 1, 5, 6, 7] key True"], out + err)
# A loop over a list or dict inside one (d["l"], d["n"].values(), l[0])
# gives its own tensors too, as Python does (Python's line).
rc, out, err = shell(["-c", "set echo off\n"
                            "d = {'n': {'a': torch.ones(2), 'b': torch.zeros(2)}, "
                            "'l': [torch.ones(2), torch.ones(2) * 2]}\n"
                            "for v in d['n'].values():\n"
                            "    v += 1\n"
                            "for g in d['l']:\n"
                            "    g *= 10\n"
                            "for i, g in enumerate(d['l']):\n"
                            "    g += i\n"
                            "l = [[torch.ones(1), torch.ones(1)]]\n"
                            "for g in l[0]:\n"
                            "    g.mul_(3)\n"
                            "for k, v in d['n'].items():\n"
                            "    v -= 0.5\n"
                            "print(d, l)"], np=1)
check("a loop over a list or dict inside one gives its own tensors",
      rc == 0 and lines_of(out) == [
          "rank 0: {'n': {'a': tensor([1.5000, 1.5000]), 'b': tensor([0.5000, 0.5000])}, "
          "'l': [tensor([10., 10.]), tensor([21., 21.])]} [[tensor([3.]), tensor([3.])]]"],
      out + err)
# The loop's subscripts are read once, when it begins, as Python reads
# them: l[i] stays the list it named when the body changes i, l[-1] when
# the body appends; a list that moves within its container stops the loop.
rc, out, err = shell(["-c", "set echo off\n"
                            "l = [[torch.ones(1), torch.ones(1)], [torch.zeros(1), torch.zeros(1)]]\n"
                            "i = 0\nfor g in l[i]:\n    g += 1\n    i = 1\n"
                            "m = [[torch.ones(1)], [torch.ones(1), torch.ones(1)]]\n"
                            "for g in m[-1]:\n    g += 1\n    m.append([torch.zeros(1)])\n"
                            "print(l, len(m), m[1])\n"
                            "for g in l[0]:\n    l.insert(0, [])"], np=1)
check("a loop's subscripts are read once; a list that moves in its container stops it",
      rc == 1 and lines_of(out) == [
          "rank 0: [[tensor([2.]), tensor([2.])], [tensor([0.]), tensor([0.])]] 4 "
          "[tensor([2.]), tensor([2.])]"]
      and "the list this loop walks left its place in 'l'" in err, out + err)
# List methods through None and tuple keys; a tensor compared with what is
# no number or tensor is unequal, as torch 1.13's == gives it.
rc, out, err = shell(["-c", "set echo off\nd = {None: [1], (1, 2): [4], 'n': {('a', 1): [[0]]}}\n"
                            "d[None].append(5)\nd[1, 2].append(5)\n"
                            "d['n']['a', 1][0].insert(0, 5)\nt = torch.ones(2)\n"
                            "print(d, [t] == [None], t == None, t != 'a', t == [1., 1.])"], np=1)
check("list methods through None and tuple keys; a tensor == None is False",
      rc == 0 and lines_of(out) == ["rank 0: {None: [1, 5], (1, 2): [4, 5], 'n': {('a', 1): "
                                    "[[5, 0]]}} False False True False"], out + err)
rc, out, err = shell(["-c", "l = [0, torch.zeros(3)]\ndef f():\n    l.pop()\n    return 0\n"
                            "l[1][f()] = 5"], np=1)
check("a call in a subscript below an entry is refused in one line",
      rc == 1 and "a subscript that calls a function, below an entry of a list or dict, is "
      "not supported here" in err, out + err)
# A receive into a dict's tensor lands there though the dict is updated
# meanwhile (update sets keys in place).
rc, out, err = shell(["-c", "d = {'x': torch.zeros(2), 'lr': 1}\n"
                            "if rank == 0:\n    w = dist.irecv(d['x'], src=1)\n"
                            "d.update(lr=0.5)\n"
                            "if rank == 1:\n    dist.send(torch.ones(2), dst=0)\n"
                            "if rank == 0:\n    w.wait()\n"
                            "print(d)"], np=2)
check("an irecv into a dict's tensor lands there across d.update()",
      rc == 0 and "rank 0: {'x': tensor([1., 1.]), 'lr': 0.5}" in lines_of(out), out + err)
for code, msg in [("d = {1: 2}\nd['x']", "column 2: KeyError: 'x'"),
                  ("d = {}\nd[[1]] = 2", "column 2: unhashable type: 'list'"),
                  ("d = {1: 2}\nfor k, v in d.items():\n    d.pop(k)",
                   "column 1: dictionary changed size during iteration"),
                  ("d = {1: 2}\nx = d[0:1]", "column 6: unhashable type: 'slice'")]:
    rc, out, err = shell(["-c", code], np=1)
    check("dict error: %s" % msg, rc == 1 and "rank 0: " + msg in err, out + err)
# A torch.device prints as torch's repr writes it, and as its string in
# print and f-strings (the values torch 1.13 prints for the same lines).
rc, out, err = shell(["-c", "d = torch.ones(2).device\nc = torch.device('cuda', 1)\n"
                            "print(d, [d, c], {'d': torch.device('cuda')}, f'{c}', "
                            "d == torch.device('cpu'), d == 'cpu')"], np=1)
check("a torch.device prints as torch's", rc == 0 and lines_of(out) == [
    "rank 0: d = device(type='cpu')", "rank 0: c = device(type='cuda', index=1)",
    "rank 0: cpu [device(type='cpu'), device(type='cuda', index=1)] "
    "{'d': device(type='cuda')} cuda:1 True False"], out + err)
rc, out, err = shell(["-c", "s = {1, 2}"], np=1)
check("a set is refused in one line", rc == 1 and
      "sets are not supported here: a dict is {key: value, ...}" in out + err, out + err)

rc, out, err = shell(["-c", "h = dist.barrier(async_op=True)\nobjs = [None, None]\n"
                            "dist.all_gather_object(objs, [1, h])"], np=2)
check("an object collective refuses a work handle before anything moves",
      rc == 1 and "ranks 0, 1: column 30: all_gather_object: cannot send a work handle" in err,
      out + err)
rc, out, err = shell(["-c", "b = [1, 2] if rank == 0 else [None]\n"
                            "dist.broadcast_object_list(b, src=0)"], np=2)
check("broadcast_object_list into a list of another length is refused on that rank",
      rc == 1 and "rank 1: column 28: broadcast_object_list: rank 0 sent 2 objects; this rank's "
      "object_list holds 1" in err, out + err)

# A collective that makes its output variable while the table of
# variables is full reads its input where it still is (the table grows
# before the input is looked up).
many = "; ".join("v%d = 1" % i for i in range(1, 16))
for line in ("dist.reduce_scatter_tensor(out, x)", "dist.all_gather(out, x)",
             "dist.gather(x, gather_list=out, dst=0)\non 1: out = 0"):
    rc, out, err = shell(["-c", "x = ones(4)\n" + many + "\n" + line + "\nprint(out)"], np=2)
    check("%s making its output at a full table" % line.split("(")[0],
          rc == 0 and "rank 0: out = " in out and "ERROR" not in err, out + err)

# A group dropped while work on it is pending: the work is waited for when
# the group goes, its handle stays valid and finished.
rc, out, err = shell(["-c", "t = ones(2) * (rank + 1)\ng = dist.new_group([0, 1])\n"
                            "h = dist.all_reduce(t, group=g, async_op=True)\ng = None\n"
                            "h.wait()\nu = ones(1)\n"
                            "h2 = dist.all_reduce(u, group=dist.new_group([0, 1]), async_op=True)\n"
                            "h2.wait()\nprint(t, u)"], np=2)
check("a group dropped under pending work", rc == 0 and lines_of(out)[-2:] == [
    "rank %d: tensor([3., 3.]) tensor([2.])" % r for r in range(2)] and "ERROR" not in err,
      out + err)

# batch_isend_irecv with P2POp, as torch's ring examples write it: a ring
# all_reduce by hand over slices of t gives torch's sums (asked of torch
# 1.13 on gloo with the same script).
RING = "t = torch.arange(6.) + rank * 10\nn = world_size\nfor s in range(n - 1):\n    i = (rank - s) % n\n    j = (rank - s - 1) % n\n    buf = torch.zeros(2)\n    ops = [dist.P2POp(dist.isend, t[2*i:2*i+2], (rank + 1) % n), dist.P2POp(dist.irecv, buf, (rank - 1) % n)]\n    reqs = dist.batch_isend_irecv(ops)\n    for r in reqs:\n        r.wait()\n    t[2*j:2*j+2] += buf\nfor s in range(n - 1):\n    i = (rank - s + 1) % n\n    j = (rank - s) % n\n    ops = [dist.P2POp(dist.isend, t[2*i:2*i+2], (rank + 1) % n), dist.P2POp(dist.irecv, t[2*j:2*j+2], (rank - 1) % n)]\n    reqs = dist.batch_isend_irecv(ops)\n    for r in reqs:\n        r.wait()\nprint(t)\n"
rc, out, err = shell(["-c", "set echo print\n" + RING], np=3)
check("a ring all_reduce by hand with batch_isend_irecv",
      rc == 0 and lines_of(out) == ["rank %d: t = tensor([30., 33., 36., 39., 42., 45.])" % r
                                    for r in range(3)], out + err)
rc, out, err = shell(["-c", "set echo print\nr = [torch.zeros(2) for _ in range(world_size)]\n"
                            "if rank == 0:\n    ops = [dist.P2POp(dist.irecv, r[p], p) "
                            "for p in range(1, world_size)]\nelse:\n"
                            "    ops = [dist.P2POp(dist.isend, torch.ones(2) * rank, 0)]\n"
                            "reqs = dist.batch_isend_irecv(ops)\nfor q in reqs:\n    q.wait()\n"
                            "print(r)"], np=3)
check("P2POps made in a comprehension: r[p] and a computed tensor, taken when made",
      rc == 0 and lines_of(out)[0] == "rank 0: r = [tensor([0., 0.]), tensor([1., 1.]), "
      "tensor([2., 2.])]", out + err)
rc, out, err = shell(["-c", "t = ones(2)\nops = [dist.P2POp(dist.isend, t, 1 - rank), "
                            "dist.P2POp(dist.irecv, t, 5)]\nreqs = dist.batch_isend_irecv(ops)"],
                     np=2)
check("batch_isend_irecv refuses a peer that does not exist before posting anything",
      rc == 1 and "ranks 0, 1: column 31: batch_isend_irecv: P2POp 1's peer 5 does not exist "
      "(world size 2)" in err, out + err)
for line, msg in [("op = dist.P2POp(dist.send, t, 1)",
                   "column 22: P2POp's op must be dist.isend or dist.irecv"),
                  ("reqs = dist.batch_isend_irecv([1, 2])",
                   "column 31: batch_isend_irecv takes a list of P2POp, not a list")]:
    rc, out, err = shell(["-c", "t = ones(2)\n" + line], np=2)
    check("refused: " + line, rc == 1 and msg in err, out + err)

# t.data is t, as in torch's SGD by hand: p.data -= lr * g writes into
# the list's tensor, and a collective of t.data is one of t.
rc, out, err = shell(["-c", "set echo print\nt = ones(2) * (rank + 1)\ndist.all_reduce(t.data)\n"
                            "grads = [ones(2) * 4]\nfor p in grads:\n    p.data -= 0.5 * p.data\n"
                            "t.data[0] = 7\nprint(t, grads, t.data.sum())"], np=2)
check("t.data is the tensor itself", rc == 0 and lines_of(out) == [
    "rank %d: tensor([7., 3.]) [tensor([2., 2.])] tensor(10.)" % r for r in range(2)], out + err)

# An object collective of a tensor with no elements.
rc, out, err = shell(["-c", "set echo print\nout = [None] * world_size\n"
                            "dist.all_gather_object(out, torch.zeros(0, 3))\nprint(out[1])"], np=2)
check("all_gather_object of a tensor with no elements",
      rc == 0 and "rank 1: value = tensor([], size=(0, 3))" in lines_of(out), out + err)

# Python's sum of a list of tensors, as all_gather's outputs are summed.
rc, out, err = shell(["-c", "set echo print\nout = [ones(2), ones(2) * 2, 3]\n"
                            "print(sum(out), sum([ones(2, dtype=torch.int32)]), sum([1, 2]))"],
                     np=1)
check("sum() of a list of tensors", rc == 0 and lines_of(out) == [
    "rank 0: tensor([6., 6.]) tensor([1, 1], dtype=torch.int32) 3"], out + err)

# A computed tensor indexed where it stands is an input too.
rc, out, err = shell(["-c", "set echo print\nt = torch.arange(4.) + rank\n"
                            "out = [torch.zeros(2) for _ in range(world_size)]\n"
                            "dist.all_gather(out, t.reshape(2, 2)[1])\nprint(out)"], np=2)
check("all_gather of t.reshape(2, 2)[1]", rc == 0 and lines_of(out) == [
    "rank %d: out = [tensor([2., 3.]), tensor([3., 4.])]" % r for r in range(2)], out + err)
# One batch, one group, as torch requires.
rc, out, err = shell(["-c", "t = ones(2)\nr = zeros(2)\ng = dist.new_group([0, 1])\n"
                            "ops = [dist.P2POp(dist.isend, t, 1 - rank, group=g), "
                            "dist.P2POp(dist.irecv, r, 1 - rank)]\n"
                            "reqs = dist.batch_isend_irecv(ops)"], np=2)
check("batch_isend_irecv refuses ops of two groups", rc == 1 and
      "batch_isend_irecv: all ops need to use the same group (P2POp 1's is not P2POp 0's)" in err,
      out + err)
# What print(..., end=' ') leaves open shows under set echo print too.
rc, out, err = shell(["-c", "set echo print\nfor i in range(3):\n    print(i, end=' ')\nprint()"],
                     np=1)
check("set echo print shows a line print left open", rc == 0 and lines_of(out) == [
    "rank 0: 0 1 2"], out + err)

# gather_list= chosen on the root, as torch scripts write it; l *= n in
# place, so that a loop walking l goes on over it.
rc, out, err = shell(["-c", "set echo print\nt = ones(2) * rank\n"
                            "out = [zeros(2), zeros(2)] if rank == 0 else None\n"
                            "dist.gather(t, gather_list=out if rank == 0 else None, dst=0)\n"
                            "print(out)\ngrads = [ones(2), ones(3)]\nfor g in grads:\n"
                            "    grads *= 1\n    g += 1\nprint(grads[1])"], np=2)
check("gather_list=out if rank == 0 else None, and l *= n in a loop",
      rc == 0 and lines_of(out) == ["rank 0: out = [tensor([0., 0.]), tensor([1., 1.])]",
                                    "rank 1: None", "rank 0: value = tensor([2., 2., 2.])",
                                    "rank 1: value = tensor([2., 2., 2.])"], out + err)

# A ReduceOp equals only the same op, never the string of its name.
rc, out, err = shell(["-c", "set echo print\nop = dist.ReduceOp.MAX\n"
                            "print(op == 'ReduceOp.MAX', op == dist.ReduceOp.MAX, "
                            "op in [dist.ReduceOp.SUM])\nx = op + 's'"], np=1)
check("a ReduceOp is no string", rc == 1 and lines_of(out) == ["rank 0: False True False"]
      and "unsupported operand type(s) for +: 'ReduceOp' and 'str'" in err, out + err)

# with torch.no_grad(): runs its block, as a training loop's update.
rc, out, err = shell(["-c", "set echo print\ngrads = [ones(2) * (rank + 1)]\n"
                            "with torch.no_grad():\n    for p in grads:\n"
                            "        dist.all_reduce(p)\n        p /= world_size\nprint(grads[0])"],
                     np=2)
check("with torch.no_grad(): runs its block", rc == 0 and lines_of(out) == [
    "rank %d: value = tensor([1.5000, 1.5000])" % r for r in range(2)], out + err)

# Groups: only members reduce, numbered within the group.
rc, out, err = shell(["-c", "g = new_group([0, 2]); t = ones(1) * rank; all_reduce t group=g; "
                            "print t"], np=3)
check("new_group and group=", rc == 0 and lines_of(out)[-3:] == [
    "rank 0: t = tensor([2.])", "rank 1: t = tensor([1.])", "rank 2: t = tensor([2.])"],
      out + err)

# torch sorts new_group's ranks: new_group([3, 1]) numbers rank 1 as 0, and
# its all_gather lists rank 1's tensor first (as gloo's does); new_group()
# is the whole world.
rc, out, err = shell(["-c", "set echo print\ng = dist.new_group([3, 1])\nt = torch.tensor([rank])\n"
                            "out = [torch.zeros(1, dtype=torch.int64) for _ in range(2)]\n"
                            "if rank in [1, 3]:\n    dist.all_gather(out, t, group=g)\n"
                            "    print(dist.get_rank(g), out)\na = dist.new_group()\n"
                            "print(dist.get_world_size(a), dist.get_rank(a))"], np=4)
check("new_group sorts its ranks as torch's; new_group() is the world",
      rc == 0 and lines_of(out) == ["rank 1: 0 [tensor([1]), tensor([3])]",
                                    "rank 3: 1 [tensor([1]), tensor([3])]"] +
      ["rank %d: 4 %d" % (r, r) for r in range(4)], out + err)
rc, out, err = shell(["-c", "g = new_group(['x'])"], np=2)
check("new_group of a string is refused in one line",
      rc == 1 and "new_group: a rank is a number, not a string" in err, out + err)

# scatter's src= and gather's dst= are 0 where not given, as torch's.
rc, out, err = shell(["-c", "set echo print\nx = torch.tensor([rank])\n"
                            "gl = [torch.zeros(1, dtype=torch.int64) for _ in range(2)] "
                            "if rank == 0 else None\ndist.gather(x, gl)\n"
                            "y = torch.zeros(1, dtype=torch.int64)\n"
                            "sl = [torch.tensor([5]), torch.tensor([6])] if rank == 0 else None\n"
                            "dist.scatter(y, sl)\nprint(gl, y)"], np=2)
check("gather's dst and scatter's src are 0 where not given, as torch's",
      rc == 0 and lines_of(out) == ["rank 0: [tensor([0]), tensor([1])] tensor([5])",
                                    "rank 1: None tensor([6])"], out + err)

# Lists: gather and all_gather make the list on the fly.
rc, out, err = shell(["-c", "t = arange(2) + 10*rank; gather t dst=0 gather_list=out; "
                            "all_gather lst t"], np=2)
check("gather_list and all_gather lists",
      rc == 0 and "rank 0: out = [tensor([0, 1]), tensor([10, 11])]" in out
      and "rank 1: lst = [tensor([0, 1]), tensor([10, 11])]" in out, out + err)

# A list given is filled, and must fit as torch requires; each mismatch is
# refused with what differs.
for setup, msg in [
        ("tl = [zeros(2) for _ in range(2)]; x = ones(2, dtype=int32)",
         "all_gather: tl[0] is float32 and the tensor int32: they must match"),
        ("tl = [zeros(3), zeros(3)]; x = ones(2)",
         "all_gather: tl[0] holds 3 elements and the tensor 2: they must match"),
        ("tl = [zeros(2)]; x = ones(2)",
         "all_gather: tl holds 1 tensor, one for each of the 2 ranks needed")]:
    rc, out, err = shell(["-c", setup + "\ndist.all_gather(tl, x)"], np=2)
    check("all_gather into a list that does not fit: " + msg, rc == 1 and msg in err, out + err)
rc, out, err = shell(["-c", "tl = [zeros(2) for _ in range(2)]; x = ones(2) * rank\n"
                            "dist.all_gather(tl, x)\nprint tl"], np=2)
check("all_gather into a list that fits fills it",
      rc == 0 and "rank 1: tl = [tensor([0., 0.]), tensor([1., 1.])]" in out, out + err)

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
check("unknown name: the ranks say so once, naming them",
      rc == 1 and err.count("'nope' is not defined") == 1
      and "distlab: ranks 0-2: column 7: 'nope' is not defined" in err, err)
rc, out, err = shell(["-c", "on 0,2: x = nope + 1; on 1: y = 2 + 2 + nope"])
check("different errors print apart, each naming its ranks",
      rc == 1 and "distlab: ranks 0, 2: column 13: 'nope' is not defined" in err
      and "distlab: rank 1: column 41: 'nope' is not defined" in err, err)
for line, col in (("y = nope * 2", 5), ("y = 2 * nope", 9), ("y = [nope]", 6),
                  ("y = {1: nope}", 9), ("y = torch.zeros(2) + nope", 22)):
    rc, out, err = shell(["-c", line], np=1)
    check("an undefined name's column is its own (%s)" % line,
          rc == 1 and "distlab: rank 0: column %d: 'nope' is not defined\n" % col in err, err)
rc, out, err = shell(["-c", "on 7: t = ones(1)"])
check("a rank that does not exist", rc == 1 and "rank 7 does not exist (world size 3)" in err, err)

# A script on standard input stops at its first error, naming the line.
rc, out, err = shell([], stdin="t = ones(2)\n\n# a comment\nbogus t\nprint t\n", np=2)
check("stdin script stops at line 4", rc == 1 and "stdin: line 4 failed" in err
      and "print" not in out.split("tensor([1., 1.])")[-1], out + err)

# Negative numbers and unary minus, printed as torch prints them.
rc, out, err = shell(["-c", "a = tensor([-1, 2]); b = tensor([0 - 1, 2]); c = tensor([-1.5]); "
                            "d = -tensor([0., 1.]); e = -(1+2); f = 2*-1; g = tensor([[-1.5, 2], "
                            "[3, -0.0]]); h = -tensor([1, 2], dtype=uint8)"], np=1)
check("negative numbers", rc == 0 and out.splitlines() == [
    "  rank 0: a = tensor([-1,  2])",
    "  rank 0: b = tensor([-1,  2])",
    "  rank 0: c = tensor([-1.5000])",
    "  rank 0: d = tensor([-0., -1.])",
    "  rank 0: e = -3",
    "  rank 0: f = -2",
    "  rank 0: g = tensor([[-1.5000,  2.0000],",
    "                      [ 3.0000, -0.0000]])",
    "  rank 0: h = tensor([255, 254], dtype=torch.uint8)"], out + err)
rc, out, err = shell(["-c", "b = -tensor([True])"], np=1)
check("negating a bool tensor is refused", rc == 1 and out == "" and
      "column 5: Negation, the `-` operator, on a bool tensor is not supported" in err, out + err)

# rank and world_size are the launcher's: a torch script's rank =
# dist.get_rank() binds the value they hold, any other value is refused on
# the rank, and any other binding of them (+=, a loop's variable) on the
# controller.
rc, out, err = shell(["-c", "rank = dist.get_rank()\nworld_size = dist.get_world_size()"], np=2)
check("rank = dist.get_rank() and world_size = dist.get_world_size() run",
      rc == 0 and "rank 1: rank = 1" in out and "rank 0: world_size = 2" in out, out + err)
rc, out, err = shell(["-c", "rank, world_size = dist.get_rank(), dist.get_world_size()\n"
                            "print(rank + 10 * world_size)"], np=2)
check("rank, world_size = dist.get_rank(), dist.get_world_size() runs",
      rc == 0 and "rank 1: rank = 1" in out and "rank 0: world_size = 2" in out
      and lines_of(out)[-2:] == ["rank 0: value = 20", "rank 1: value = 21"], out + err)
rc, out, err = shell(["-c", "x = 1\nrank, x = 0, 5\nprint(x)"], np=2)
check("unpacking another value into rank is refused on the rank, binding nothing",
      rc == 1 and "rank 0: x = 5" in out and "rank 1: x = 5" not in out and
      "rank 1: column 11: cannot assign to 'rank': it is 1 here, set by the launcher" in err,
      out + err)
rc, out, err = shell(["-c", "t = ones(1)\nrank = isend t dst=0"], np=2)
check("a handle named rank is refused", rc == 1 and
      "ranks 0, 1: column 1: cannot assign to 'rank': it is read-only" in err, out + err)
rc, out, err = shell(["-c", "rank = 5"], np=2)
check("assigning rank another value is refused on each rank", rc == 1 and
      "rank 1: column 1: cannot assign to 'rank': it is 1 here, set by the launcher" in err,
      out + err)
for line in ("rank += 1", "on 0: world_size += 2"):
    rc, out, err = shell(["-c", line], np=2)
    name = line.split()[-3]
    check("changing %s is refused" % name, rc == 1 and out == "" and
          ("^ cannot assign to '%s': it is read-only, set by the launcher" % name) in err,
          out + err)
rc, out, err = shell(["-c", "t = ones(1); all_gather rank t"], np=2)
check("a list named rank is refused", rc == 1 and
      "ranks 0, 1: column 25: cannot assign to 'rank': it is read-only" in err, out + err)

# A long run of operators is not nesting.
rc, out, err = shell(["-c", "t = " + "+".join(["1"] * 500) + "; u = " +
                      "-".join(["1.5"] * 3000)], np=1)
check("a sum of 500 terms", rc == 0 and lines_of(out) == ["rank 0: t = 500", "rank 0: u = -4497.0"],
      out + err[:300])

# A tensor too large to print in full is printed summarised, as torch does,
# also one larger than a control frame (256 MiB) holds.
rc, out, err = shell(["-c", "t = zeros(10, 200) - 1; u = zeros(70000000); tensors"], np=1)
pad = " " * len("  rank 0: t = tensor([")
check("large tensors are summarised", rc == 0 and out.splitlines() == [
    "  rank 0: t = tensor([[-1., -1., -1.,  ..., -1., -1., -1.],"] +
    [pad + "[-1., -1., -1.,  ..., -1., -1., -1.],"] * 2 + [pad + "...,"] +
    [pad + "[-1., -1., -1.,  ..., -1., -1., -1.],"] * 2 + [
    pad + "[-1., -1., -1.,  ..., -1., -1., -1.]])",
    "  rank 0: u = tensor([0., 0., 0.,  ..., 0., 0., 0.])",
    "  rank 0: t: float32 [10, 200]",
    "  rank 0: u: float32 [70000000]"], out + err)
rc, out, err = shell(["-c", "t = arange(2000) + 10*rank; all_gather lst t"], np=2)
check("a list of large tensors is summarised",
      rc == 0 and "rank 1: lst = [tensor([   0,    1,    2,  ..., 1997, 1998, 1999]), "
      "tensor([  10,   11,   12,  ..., 2007, 2008, 2009])]" in out, out + err)

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
# A rank killed in a plain loop, after a collective of the line before
# ended: it was busy, but in no collective.
def cpu_ticks(pid):
    """The user time pid has run, in clock ticks (0 once it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[11])
    except (OSError, IndexError, ValueError):
        return 0


p = subprocess.Popen([EXE, "shell", "--np", "2", "--timeout", "10"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
p.stdin.write("t = ones(2)\nall_reduce t\nranks\n")
p.stdin.flush()
row = ["x"]
while row and not (len(row) > 1 and row[0] == "1" and row[1].isdigit()):
    row = p.stdout.readline().split()
victim = int(row[1]) if row else None
idle = cpu_ticks(victim) if victim is not None else 0
p.stdin.write("on 1: while True: pass\nranks\n")
p.stdin.flush()
# Killed once it spins in the loop (an idle rank uses no CPU).
deadline = _time.time() + 20
while victim is not None and cpu_ticks(victim) < idle + 20 and _time.time() < deadline:
    _time.sleep(0.05)
if victim is not None:
    os.kill(victim, 9)
out, err = p.communicate(timeout=60)
check("a rank killed after a collective ended is not said to be in it",
      victim is not None and "SIGKILL) while busy;" in err and "all_reduce" not in err, out + err)

# A send small enough to complete when posted, to a rank that died: the
# others took the world down when it died, so it is refused, not lost.
rc, out, err = shell(["-k"], stdin="t = ones(2)\nkill 1\non 0: send t dst=1\non 0: print(t)\n",
                     np=3)
check("a small send to a dead rank is refused, and the live ranks still compute",
      rc == 1 and "rank 0: send to rank 1 (tag 0) refused: the world was taken down: rank 1" in err
      and "`respawn` restarts the ranks" in err and "tensor([1., 1.])" in lines_of(out)[-1],
      out + err)

# Empty tensors of any shape print as torch prints them.
rc, out, err = shell(["-c", "v = zeros(0, 3); w = zeros(2, 0, dtype=int64); print(v)"], np=1)
check("empty tensors of two dimensions print with their size",
      rc == 0 and lines_of(out) == ["rank 0: v = tensor([], size=(0, 3))",
                                    "rank 0: w = tensor([], size=(2, 0), dtype=torch.int64)",
                                    "rank 0: v = tensor([], size=(0, 3))"], out + err)

# `set` alone shows every setting, defaults first.
rc, out, err = shell(["-c", "set"], np=1)
got = lines_of(out)
check("set alone shows the defaults",
      rc == 0 and got[:4] == ["timeout                10 s", "check                  on",
                              "echo                   on", "step                   off"]
      and "algo all_reduce        default" in got and len(got) == 4 + 9, out + err)

# `set echo off`: assignments print nothing, print and collectives' own
# output still do, and errors still name their ranks.
rc, out, err = shell(["-c", "set echo off; t = arange(2) + rank; print t; u = t + nope"], np=2)
check("set echo off: assignments are quiet, print is not",
      rc == 1 and lines_of(out) == ["rank 0: t = tensor([0, 1])", "rank 1: t = tensor([1, 2])"]
      and "ranks 0, 1: column 54: 'nope' is not defined" in err, out + err)
# ... also inside a block: a loop's assignments are quiet, its print and
# its collective's output are not.
rc, out, err = shell([], stdin="set echo off\nfor i in range(2):\n    t = ones(1) * i\n"
                               "    n = i\n    all_reduce t\n    print t\n\n", np=2)
check("set echo off: assignments inside a loop are quiet too",
      rc == 0 and lines_of(out) == ["rank 0: t = tensor([0.])", "rank 0: t = tensor([0.])",
                                    "rank 0: t = tensor([2.])", "rank 0: t = tensor([2.])",
                                    "rank 1: t = tensor([0.])", "rank 1: t = tensor([0.])",
                                    "rank 1: t = tensor([2.])", "rank 1: t = tensor([2.])"],
      out + err)
rc, out, err = shell([], stdin="set echo print\nfor i in range(2):\n    t = ones(1) * i\n"
                               "    all_reduce t\n    if rank == 0:\n        print t\n\n"
                               "set echo loud\n", np=2)
check("set echo print: only print prints, as in a torch script; a bad word is named",
      rc == 1 and lines_of(out) == ["rank 0: t = tensor([0.])", "rank 0: t = tensor([2.])"]
      and "set echo on|off|print" in err, out + err)

# Settings are the session's: respawn keeps them and the new ranks follow
# them (the stepped all_reduce runs the ring, paused before its first step).
rc, out, err = shell([], stdin="set algo all_reduce ring\nset timeout 7\nset check off\nstep on\n"
                               "respawn\nset\nt = ones(2)\nall_reduce t\ncontinue\n", np=2)
got = lines_of(out)
check("respawn keeps set algo, timeout, check and step mode",
      rc == 0 and "algo all_reduce        ring" in got and "timeout                7 s" in got
      and "check                  off" in got and "step                   on" in got
      and "all_reduce with ring: 2 steps; before step 1" in out
      and got[-1] == "rank 1: t = tensor([2., 2.])", out + err)
rc, out, err = shell([], stdin="set algo broadcast direct\nspawn 3\nset\n", np=2)
check("spawn keeps the settings too", rc == 0 and "algo broadcast         direct" in lines_of(out),
      out + err)

# Scalar integers are 64 bits: a result that does not fit is refused, never wrapped.
rc, out, err = shell(["-c", "x = 9223372036854775807 + 1"], np=1)
check("integer overflow is refused", rc == 1 and "integer overflow" in err
      and "does not fit in 64 bits" in err and "x =" not in out, out + err)

# explain in the shell shows what would really run: the tensor's size and
# dtype choose the default algorithm, and `set algo` is honoured.
rc, out, err = shell(["-c", "t = ones(100000); explain all_reduce t"], np=4)
check("explain TENSOR: a large tensor runs share",
      rc == 0 and "(for t: 100000 elements of float32)" in out
      and "all_reduce with share (reduce and write back): np 4, count 100000 float32" in out,
      out + err)
rc, out, err = shell(["-c", "t = ones(10, dtype=float64); explain all_reduce t"], np=4)
check("explain TENSOR: a small one linear, in its dtype",
      rc == 0 and "all_reduce with linear exchange: np 4, count 10 float64" in out, out + err)
rc, out, err = shell(["-c", "set algo all_reduce ring; t = ones(10); explain all_reduce t"], np=4)
check("explain TENSOR: the algorithm set", rc == 0 and "all_reduce with ring: np 4" in out,
      out + err)
# A name rebound to something else than a tensor no longer has its old
# tensor in the shell (explain's sizes, the terminal view's panels): by an
# assignment, a loop's variable, unpacking, or past a statement's echoes.
for how, code in [("t = 5", "t = 5"),
                  ("t = None", "t = None"),
                  ("a loop's variable", "for t in range(3):\n    pass"),
                  ("unpacking", "t, u = 1, 2"),
                  ("a loop's unpacking", "for t, u in [(1, 2)]:\n    pass"),
                  ("past the echoes", "for i in range(300):\n    t = 5 if i == 299 else ones(2)")]:
    rc, out, err = shell(["-c", "t = ones(100)\n" + code + "\nexplain all_reduce t"], np=2)
    check("explain after %s: t is not the old tensor" % how,
          rc == 1 and "'t' is neither a tensor" in err, out + err)
rc, out, err = shell(["-c", "l = [ones(3), ones(3)]\nl = 7\nexplain all_reduce l"], np=2)
check("explain after a list of tensors rebound: l is not one", rc == 1
      and "'l' is neither a tensor" in err, out + err)
rc, out, err = shell(["-c", "t = 5\nt = ones(100)\nexplain all_reduce t"], np=2)
check("explain after a number rebound to a tensor: the tensor",
      rc == 0 and "(for t: 100 elements of float32)" in out, out + err)
rc, out, err = shell(["-c", "explain all_reduce np=2,,4"], np=2)
check("explain: an empty world size is refused",
      rc == 1 and "'np=2,,4' is not a list of world sizes from 1 to 256" in err, err)
rc, out, err = shell(["-c", "explain all_reduce nope"], np=2)
check("explain: an unknown word is named", rc == 1 and "'nope' is neither a tensor" in err, err)

# A recv that no rank will ever match is reported at once, not at the timeout,
# and the world stays usable.
t0 = _time.time()
p = subprocess.run([EXE, "shell", "--np", "2", "--timeout", "30", "-k", "-c",
                    "t = ones(2); on 0: recv t src=1\nt = zeros(2) + rank; all_reduce t"],
                   capture_output=True, text=True, timeout=60)
dt = _time.time() - t0
check("a recv nothing will match is reported at once",
      p.returncode == 1 and dt < 10 and p.stderr.count("can never complete") == 1
      and "rank 0: recv from rank 1 (tag 0) can never complete: rank 1 has no statement left"
      in p.stderr and "rank 1: t = tensor([1., 1.])" in p.stdout.split("\n")[-2], p.stdout + p.stderr)
rc, out, err = shell(["-k", "-c", "t = ones(2); on 0: recv t"], np=3)
check("a recv from any source nothing will match",
      rc == 1 and "recv from any rank (tag 0) can never complete" in err, err)
rc, out, err = shell(["-c", "t = ones(2) * (rank + 5); on 1: send t dst=0\non 0: recv t src=1"],
                     np=2)
check("a message sent on one line is received on the next",
      rc == 0 and "rank 0: t = tensor([6., 6.])" in out, out + err)
rc, out, err = shell(["-c", "t = ones(2) * rank; on 0: recv t src=1 tag=3; on 1: send t dst=0 tag=3"],
                     np=2)
check("recv posted before its send on one line", rc == 0 and "rank 0: t = tensor([1., 1.])" in out,
      out + err)

# A wait on an irecv holds its rank as a recv does: one that nothing will
# ever match is refused at once too; one whose send comes completes.
t0 = _time.time()
p = subprocess.run([EXE, "shell", "--np", "2", "--timeout", "30", "-k", "-c",
                    "t = ones(2); on 0: h = irecv t src=1\non 0: wait h\n"
                    "on 0: h = irecv t src=1 tag=2; on 1: send t dst=0 tag=2; on 0: wait h"],
                   capture_output=True, text=True, timeout=60)
dt = _time.time() - t0
check("a wait on an irecv nothing will match is refused at once; a matched one completes",
      p.returncode == 1 and dt < 10
      and "rank 0: recv from rank 1 (tag 0) can never complete: rank 1 has no statement left"
      in p.stderr and "h: done, received from rank 1" in p.stdout, p.stdout + p.stderr)

# Blocking recvs that wait on each other round a cycle can never complete:
# every one of them is reported at once (not at the timeout), and the world
# stays usable.
for np_, line, n, back in ((2, "on 0: recv t src=1; on 1: recv t src=0", 2, 0),
                           (3, "on 0: recv t src=1; on 1: recv t src=2; on 2: recv t src=0", 3, 2)):
    t0 = _time.time()
    p = subprocess.run([EXE, "shell", "--np", str(np_), "--timeout", "30", "-k", "-c",
                        "t = ones(2); " + line + "\nt = zeros(2) + 1; all_reduce t"],
                       capture_output=True, text=True, timeout=60)
    dt = _time.time() - t0
    want = "rank %d: t = tensor([%d., %d.])" % (np_ - 1, np_, np_)
    check("a cycle of %d blocking recvs is a deadlock, reported on every rank at once" % n,
          p.returncode == 1 and dt < 10
          and p.stderr.count("a cycle of blocking recvs that no send can break") == n
          and "rank 0: recv from rank 1 (tag 0) can never complete: rank 1 waits in a recv "
          "itself (from rank %d)" % back in p.stderr
          and "Ctrl-C" not in p.stderr and want in p.stdout, p.stdout + p.stderr)

# Refusing a deadlocked recv lets go of its rank alone: a message another
# rank sent before is still there to receive (an interrupt, as at Ctrl-C,
# would have dropped it), and receives on a group stay out of the ledger
# (src= and dst= name world ranks there too, as in torch).
p = subprocess.run([EXE, "shell", "--np", "4", "--timeout", "20", "-k", "-c",
                    "t = ones(2); u = ones(2) * rank; on 3: send u dst=2\n"
                    "on 0: recv t src=1; on 1: recv t src=0\non 2: recv u src=3\n"
                    "g = new_group([1, 2]); on 1: send u dst=2 group=g; "
                    "on 2: recv t src=1 group=g; on 2: send t dst=0; on 0: recv t src=2"],
                   capture_output=True, text=True, timeout=90)
check("a refused deadlock fails its ranks only; group receives are not misread",
      p.returncode == 1 and p.stderr.count("a cycle of blocking recvs") == 2
      and "rank 2: u = tensor([3., 3.])" in p.stdout
      and "rank 0: t = tensor([1., 1.])" in p.stdout.split("\n")[-2]
      and "Ctrl-C" not in p.stderr and "timed out" not in p.stderr, p.stdout + p.stderr)

# A wait that times out takes the world down: every later call is refused on
# every rank before it sends anything (none completes on one rank while the
# others fail), and says that `respawn` brings the world back.
# `set check off`: the shell does not see that the recv can never be
# matched (rank 1 is idle), so the recv waits out `set timeout 1`, as a
# wait on a rank that computes for longer than the timeout would (a loop
# that outlasts 1 s here would also outlast the shell's own watchdog
# under the sanitizers, which run it several times slower).
p = subprocess.run([EXE, "shell", "--np", "3", "-k", "-c",
                    "set echo off; t = ones(2)\nset timeout 1\nset check off\n"
                    "on 0: recv t src=1\n"
                    "all_reduce t\nall_reduce t\nset echo on; print(t)\nrespawn\n"
                    "t = ones(2); all_reduce t"],
                   capture_output=True, text=True, timeout=120)
check("a timeout takes the world down: later calls refused on every rank, respawn mends it",
      p.returncode == 1
      and "rank 0: recv from rank 1 (tag 0) aborted: rank 0 timed out after 1 s" in p.stderr
      and p.stderr.count("ranks 0-2: all_reduce refused: the world was taken down: rank 0 "
                         "timed out after 1 s; `respawn` restarts the ranks") == 2
      and p.stdout.count("tensor([1., 1.])") == 6
      and "rank 2: t = tensor([3., 3.])" in p.stdout, p.stdout + p.stderr)

# A rank that stops at an error before a collective: the others' calls are
# released at once, in one line that points at it, then its own error.
rc, out, err = shell(["-c", "set echo off; x = zeros(2); dist.scatter(x, src=0)"], np=4)
check("a root's missing scatter_list: one line for the others' scatter, then its error",
      rc == 1 and err == "distlab: scatter #1 on the world group can never complete: rank 0 "
      "stopped at an error before calling it; nothing was sent\n"
      "distlab: rank 0: column 34: scatter needs scatter_list=[...] on the source rank\n"
      "distlab: -c: line 1 failed: set echo off; x = zeros(2); dist.scatter(x, src=0)\n", err)
rc, out, err = shell(["-c", "out = [None]\ndist.scatter_object_list(out, [1], src=0)"], np=2)
check("... an object collective's report names the call written, not its broadcast",
      rc == 1 and err.startswith("distlab: scatter_object_list #1 on the world group can never "
                                 "complete: rank 0 stopped at an error"), err)
rc, out, err = shell(["-c", "set echo off; l = [0, 0]; t = ones(2); dist.all_gather_object(l, rank); "
                      "dist.broadcast_object_list(l, src=0); on 0: all_reduce t; "
                      "on 1: broadcast t src=0"], np=2)
check("... and numbers the calls written: two object collectives (four broadcasts and gathers "
      "inside), then the third call",
      rc == 1 and err.startswith("distlab: collective #3 on the world group does not match"), err)

# Recvs from any rank that only other recvs could answer: refused at once
# (they waited out the timeout), as a cycle of recvs from given ranks is.
rc, out, err = shell(["-c", "t = torch.ones(2); dist.recv(t)"], np=2)
check("every rank in a recv from any rank: a deadlock, said at once, no timeout",
      rc == 1 and "recv from any rank (tag 0) can never complete: every other rank "
      "waits in a recv itself" in err and "timed out" not in err
      and err.count("recv from any rank (tag 0) can never complete") == 2, err)
rc, out, err = shell(["-c", "t = torch.ones(2)\nif rank == 0:\n    dist.recv(t, src=1)\n"
                      "elif rank == 1:\n    dist.recv(t)\nelse:\n    dist.recv(t, src=0)"])
check("... and a recv from a rank that waits in a recv from any rank",
      rc == 1 and all("rank %d: recv from" % r in err for r in range(3))
      and "waits in a recv itself" in err and "timed out" not in err
      and err.count("can never complete") == 3, err)
rc, out, err = shell(["-c", "t = torch.ones(2)\nif rank < 2:\n    dist.recv(t)\n"
                      "else:\n    dist.send(t, dst=0)"])
check("... while a rank that may still send runs, a recv from any rank waits for it",
      rc == 1 and "rank 0: received from rank 2" in out and "rank 0:" not in err
      and "rank 1: recv from any rank (tag 0) can never complete" in err, out + err)

# Ranks that cannot start: the cause in one line, not a second line that
# blames the script or repeats it.
env = dict(os.environ, DISTLAB_EXE="/nonexistent")
for argv in (["shell", "--np", "2", "-c", "print(1)"], ["run", "all_reduce", "--np", "2"]):
    p = subprocess.run([EXE] + argv, capture_output=True, text=True, timeout=60, env=env)
    check("%s: ranks that cannot start are one line" % argv[0],
          p.returncode == 1 and p.stderr.count("\n") == 1
          and "cannot start rank 0 (/nonexistent rank)" in p.stderr, p.stderr)
p = subprocess.run([EXE, "shell", "--listen", "192.0.2.1:0", "-c", "print(1)"],
                   capture_output=True, text=True, timeout=60)
check("a --listen address that is not this machine's is one line",
      p.returncode == 1 and p.stderr.count("\n") == 1
      and "cannot listen on 192.0.2.1:0" in p.stderr, p.stderr)

# help takes a name as torch spells it: dist.all_reduce, torch.distributed.isend.
for name, first in (("dist.all_reduce", "all_reduce TENSOR"),
                    ("torch.distributed.isend", "H = isend TENSOR")):
    rc, out, err = shell([], stdin="help %s\n" % name, np=1)
    check("help %s is the help of its command" % name,
          rc == 0 and out.startswith(first) and err == "", out + err)
rc, out, err = shell([], stdin="help dist.foo\n", np=1)
check("help of an unknown dist. name names it",
      rc == 1 and "no help for 'dist.foo'" in err, out + err)

print("shell: %d failed" % len(failures))
sys.exit(1 if failures else 0)
