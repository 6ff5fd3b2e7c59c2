#!/usr/bin/env python3
"""The shell language's tensor maths and torch's spellings, through the
real `distlab shell`: every case prints what torch prints for the same
code (EXPECTED holds torch 1.13's output, Debian's python3-torch; when a
Python with torch is at hand the test asks it again), torch's errors, the
tutorial's `dist.` spellings at np=4, and reduce_scatter and all_to_all
making their outputs.

usage: test_math.py DISTLAB
"""
import concurrent.futures
import json
import os
import subprocess
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures, lines_of, torch_prints  # noqa: E402

EXE = sys.argv[1]


def shell(args, np=1):
    p = subprocess.run([EXE, "shell", "--np", str(np), "--timeout", "10"] + args,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def shells(codes):
    """shell(["-c", code]) of each, two at a time (a shell of one rank is
    mostly start-up and waiting), in order."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda code: shell(["-c", code]), codes))


# Each case: the distlab lines (the last one prints), and the same in torch.
# exp is computed correctly rounded; torch's vectorised float32 exp may be
# one bit off (exp(4) prints 54.5982 there, 54.5981 here), so the cases
# keep to values where the two agree.
SETUP = ("t = torch.arange(6); f = torch.arange(6, dtype=torch.float32); "
         "m = t.reshape(2, 3); b = torch.tensor([True, False, True]); "
         "i = torch.tensor([1, -2], dtype=torch.int32)")
CASES = [
    ("print t.sum()", "print(t.sum())"),
    ("print sum(t)", "print(torch.sum(t))"),
    ("print torch.sum(b)", "print(torch.sum(b))"),
    ("print i.sum()", "print(i.sum())"),
    ("print f.mean()", "print(f.mean())"),
    ("print (f / 7).mean()", "print((f / 7).mean())"),
    ("print t.max()", "print(t.max())"),
    ("print min(f - 2.5)", "print(torch.min(f - 2.5))"),
    ("print b.max()", "print(b.max())"),
    ("print m.sum(dim=0)", "print(m.sum(dim=0))"),
    ("print m.sum(1, keepdim=True)", "print(m.sum(1, keepdim=True))"),
    ("print m.sum(-1)", "print(m.sum(-1))"),
    ("print (m * 1.0).mean(dim=1)", "print((m * 1.0).mean(dim=1))"),
    ("print sqrt(t)", "print(torch.sqrt(t))"),
    ("print (f / 4).exp()", "print((f / 4).exp())"),
    ("print torch.exp(i)", "print(torch.exp(i))"),
    ("print sqrt(b)", "print(torch.sqrt(b))"),
    ("print abs(t - 3)", "print(torch.abs(t - 3))"),
    ("print i.abs()", "print(i.abs())"),
    ("print (f - 2.5).relu()", "print((f - 2.5).relu())"),
    ("print torch.relu(i)", "print(torch.relu(i))"),
    ("print t @ t", "print(t @ t)"),
    ("print m @ t[:3]", "print(m @ t[:3])"),
    ("print t[:2] @ m", "print(t[:2] @ m)"),
    ("print m @ m.T", "print(m @ m.T)"),
    ("print matmul(m.T, m)", "print(torch.matmul(m.T, m))"),
    ("print (f.reshape(3, 2) / 3) @ (f.reshape(2, 3) + 0.5)",
     "print((f.reshape(3, 2) / 3) @ (f.reshape(2, 3) + 0.5))"),
    ("print m.T", "print(m.T)"),
    ("print t.reshape(-1, 2)", "print(t.reshape(-1, 2))"),
    ("print torch.reshape(f, (3, 2))", "print(torch.reshape(f, (3, 2)))"),
    ("c = t.clone(); c[0] = 9\nprint t", "c = t.clone(); c[0] = 9\nprint(t)"),
    ("print t[2].item()", "print(t[2].item())"),
    ("print f[1].item()", "print(f[1].item())"),
    ("print (f / 4)[3].item()", "print((f / 4)[3].item())"),
    ("print b[0].item()", "print(b[0].item())"),
    ("print t.sum().item()", "print(t.sum().item())"),
    ("print cat([t, f])", "print(torch.cat([t, f]))"),
    ("print cat([t, b])", "print(torch.cat([t, b]))"),
    ("print torch.cat((m, m), dim=1)", "print(torch.cat((m, m), dim=1))"),
    ("print cat([m, m])", "print(torch.cat([m, m]))"),
    ("print stack([t, t])", "print(torch.stack([t, t]))"),
    ("print stack([t, f], dim=1)", "print(torch.stack([t, f], dim=1))"),
    ("print stack([t, t], dim=-1)", "print(torch.stack([t, t], dim=-1))"),
    ("p = t.chunk(4)\nprint p[2]", "p = t.chunk(4)\nprint(p[2])"),
    ("p = torch.chunk(m, 2, dim=1)\nprint p[1]", "p = torch.chunk(m, 2, dim=1)\nprint(p[1])"),
    ("p = split(t, 4)\nprint p[1]", "p = torch.split(t, 4)\nprint(p[1])"),
    ("p = t.split([1, 5])\nprint p[1]", "p = t.split([1, 5])\nprint(p[1])"),
    ("p = torch.split(m, [2, 1], dim=1)\nprint p[0]",
     "p = torch.split(m, [2, 1], dim=1)\nprint(p[0])"),
    # broadcasting: a row, a column, both, a 0-d tensor, comparisons
    ("print m + torch.tensor([10, 20, 30])", "print(m + torch.tensor([10, 20, 30]))"),
    ("print m * torch.tensor([[1], [2]])", "print(m * torch.tensor([[1], [2]]))"),
    ("print torch.tensor([[1], [2]]) + torch.tensor([10, 20, 30])",
     "print(torch.tensor([[1], [2]]) + torch.tensor([10, 20, 30]))"),
    ("print (m - (m * 1.0).mean(dim=0)) / 2", "print((m - (m * 1.0).mean(dim=0)) / 2)"),
    ("print m > torch.tensor([1, 1, 4])", "print(m > torch.tensor([1, 1, 4]))"),
    ("x = m * 1.0\nx -= torch.tensor([1.0, 2.0, 3.0])\nprint x",
     "x = m * 1.0\nx -= torch.tensor([1.0, 2.0, 3.0])\nprint(x)"),
    # floor division rounds towards minus infinity; shape and size
    ("print (t - 3) // 2", "print((t - 3) // 2)"),
    ("print (f - 2.5) // 2", "print((f - 2.5) // 2)"),
    ("print m.shape", "print(m.shape)"),
    ("print m.size(1)", "print(m.size(1))"),
    ("print t.reshape(3, 2).shape[0] // 2", "print(t.reshape(3, 2).shape[0] // 2)"),
    # tensors of no dimensions, made from a number
    ("print torch.tensor(3.5)", "print(torch.tensor(3.5))"),
    ("print tensor(2, dtype=torch.float64)", "print(torch.tensor(2, dtype=torch.float64))"),
    ("x = tensor(t.size(0)) + t\nprint x", "x = torch.tensor(t.size(0)) + t\nprint(x)"),
    ("print torch.tensor(True).shape", "print(torch.tensor(True).shape)"),
    # Python's int and float as dtypes are 64-bit; torch.int and torch.float 32-bit
    ("print zeros(2, dtype=int)", "print(torch.zeros(2, dtype=int))"),
    ("print zeros(2, dtype=float)", "print(torch.zeros(2, dtype=float))"),
    ("print torch.zeros(2, dtype=torch.int)", "print(torch.zeros(2, dtype=torch.int))"),
    ("print torch.ones(2, dtype=torch.float)", "print(torch.ones(2, dtype=torch.float))"),
    # Python's float(), int() and len(), as the tutorials use them
    ("print(float(t.size(0)), int(-2.7), int(f[3]), len(m), float('1.5'), int(b[0]))",
     "print(float(t.size(0)), int(-2.7), int(f[3]), len(m), float('1.5'), int(b[0]))"),
    ("x = f / float(len(t))\nprint x", "x = f / float(len(t))\nprint(x)"),
    # a tensor of no dimensions promotes as a Python number does
    ("print i + i.sum()", "print(i + i.sum())"),
    ("print torch.tensor([1, 2], dtype=torch.uint8) + torch.tensor(-3)",
     "print(torch.tensor([1, 2], dtype=torch.uint8) + torch.tensor(-3))"),
    ("print i + torch.tensor(1.5, dtype=torch.float64)",
     "print(i + torch.tensor(1.5, dtype=torch.float64))"),
    ("print b + torch.tensor(2)", "print(b + torch.tensor(2))"),
    # in an f-string a tensor of no dimensions is its number
    ('print(f"{f[1]} {t.sum()} {b[0]} {(f / 3).mean()}")',
     'print(f"{f[1]} {t.sum()} {b[0]} {(f / 3).mean()}")'),
    # assigning into a slice broadcasts
    ("x = m * 1\nx[0:2] = torch.tensor([7, 8, 9])\nprint x",
     "x = m * 1\nx[0:2] = torch.tensor([7, 8, 9])\nprint(x)"),
    # //=, %= and **=, on tensors and on numbers
    ("x = t - 2\nx //= 2\nx %= 3\nx **= 2\nprint x",
     "x = t - 2\nx //= 2\nx %= 3\nx **= 2\nprint(x)"),
    ("n = 7\nn //= 2\nn **= 3\nn %= 5\nprint(n)", "n = 7\nn //= 2\nn **= 3\nn %= 5\nprint(n)"),
    # and, or, not: Python's, the deciding operand's value
    ("print(not (t.sum() > 3) or b[1])", "print(not (t.sum() > 3) or b[1])"),
    ("print((t.sum() > 3) and f[2])", "print((t.sum() > 3) and f[2])"),
    ("x = [k for k in range(6) if k % 2 == 0 and not k == 4]\nprint(x)",
     "x = [k for k in range(6) if k % 2 == 0 and not k == 4]\nprint(x)"),
    # a tensor's negative integer exponents are computed; a number's refused
    ("print((t - 2) ** torch.tensor([-1, -1, -1, -3, -1, -2]))",
     "print((t - 2) ** torch.tensor([-1, -1, -1, -3, -1, -2]))"),
    # a tensor's attributes and conversions
    ("print(f.dtype, t.dtype, b.dtype, i.dtype, m.ndim, m.dim(), m.numel(), f.is_cuda, f.device)",
     "print(f.dtype, t.dtype, b.dtype, i.dtype, m.ndim, m.dim(), m.numel(), f.is_cuda, f.device)"),
    ("print((f - 2.5).long(), (f - 2.5).int(), (f - 2.5).bool(), t.float(), i.double())",
     "print((f - 2.5).long(), (f - 2.5).int(), (f - 2.5).bool(), t.float(), i.double())"),
    ("print((f / 3).half(), (f / 3).bfloat16(), i.to(torch.float64))",
     "print((f / 3).half(), (f / 3).bfloat16(), i.to(torch.float64))"),
    ("print(t.to('cpu'), (f * 50).to(dtype=torch.int8), t.to(torch.bool).cpu())",
     "print(t.to('cpu'), (f * 50).to(dtype=torch.int8), t.to(torch.bool).cpu())"),
    ("print(m.tolist(), (m * 0.5).tolist(), f[2].tolist(), b.tolist())",
     "print(m.tolist(), (m * 0.5).tolist(), f[2].tolist(), b.tolist())"),
    ("d = i.dtype\nx = zeros(2, dtype=d, device=f.device)\n"
     "print(x, d, x.dtype == torch.int32, f.dtype != torch.float32)",
     "d = i.dtype\nx = torch.zeros(2, dtype=d, device=f.device)\n"
     "print(x, d, x.dtype == torch.int32, f.dtype != torch.float32)"),
    ("dev = 'cpu'\ndtype = torch.float64\nx = ones(2, dtype=dtype, device=dev)\nprint(x)",
     "dev = 'cpu'\ndtype = torch.float64\nx = torch.ones(2, dtype=dtype, device=dev)\nprint(x)"),
    ("print(torch.tensor([float('nan'), 3.7, -3.7, 300.5]).long())",
     "print(torch.tensor([float('nan'), 3.7, -3.7, 300.5]).long())"),
    # m[i, j] indexes one dimension after the other, as m[i][j]
    ("print(m[1, 2], m[0, 1:], m[-1, ::2])", "print(m[1, 2], m[0, 1:], m[-1, ::2])"),
    ("x = m * 1\nx[1, 2] = 50\nx[0, 0:2] += 7\nprint(x)",
     "x = m * 1\nx[1, 2] = 50\nx[0, 0:2] += 7\nprint(x)"),
    # torch's in-place methods, as statements
    ('x = f * 1\nx.add_(1)\nx.mul_(2)\nx[0:2].sub_(1)\nx.div_(2)\nprint(x)',
     'x = f * 1\nx.add_(1)\nx.mul_(2)\nx[0:2].sub_(1)\nx.div_(2)\nprint(x)'),
    ('x = m * 1\nx[1].fill_(7)\nx[0, 1:].zero_()\nprint(x)',
     'x = m * 1\nx[1].fill_(7)\nx[0, 1:].zero_()\nprint(x)'),
    ('x = torch.tensor(3.)\nx.fill_(1)\ny = f * 0\ny.copy_(t)\nz = t * 1\nz.fill_(2.7)\nprint(x, y, z)',
     'x = torch.tensor(3.)\nx.fill_(1)\ny = f * 0\ny.copy_(t)\nz = t * 1\nz.fill_(2.7)\nprint(x, y, z)'),
    # new shapes: view as reshape, flatten, squeeze and unsqueeze
    ("print(t.view(2, 3), m.flatten(), t.view(1, 2, 1, 3).squeeze().shape, m.unsqueeze(1).shape, "
     "torch.flatten(t.view(2, 1, 3), 1), t.sum().unsqueeze(0))",
     "print(t.view(2, 3), m.flatten(), t.view(1, 2, 1, 3).squeeze().shape, m.unsqueeze(1).shape, "
     "torch.flatten(t.view(2, 1, 3), 1), t.sum().unsqueeze(0))"),
    # A if C else B, a tensor's truth as its condition
    ("x = t if t.sum() > 100 else m * 2 if m.sum() > 10 else m\nprint(x)",
     "x = t if t.sum() > 100 else m * 2 if m.sum() > 10 else m\nprint(x)"),
    # a list's items changed in place: a tensor item as a tensor, a number rebound
    ("l = [1, 2.5, f * 1, t * 1]\nl[0] += 5\nl[1] *= 2\nl[2] += 1\nl[-1].mul_(3)\n"
     "l[2].add_(torch.tensor([1., 2., 3., 4., 5., 6.]))\nl[3].zero_()\nprint(l)",
     "l = [1, 2.5, f * 1, t * 1]\nl[0] += 5\nl[1] *= 2\nl[2] += 1\nl[-1].mul_(3)\n"
     "l[2].add_(torch.tensor([1., 2., 3., 4., 5., 6.]))\nl[3].zero_()\nprint(l)"),
    # alpha= of add_ and sub_, as an SGD step writes it
    ("x = f * 1\nx.add_(f, alpha=-0.5)\nx.sub_(t, alpha=3)\ny = t * 1\ny.add_(t, alpha=2)\n"
     "print(x, y)",
     "x = f * 1\nx.add_(f, alpha=-0.5)\nx.sub_(t, alpha=3)\ny = t * 1\ny.add_(t, alpha=2)\n"
     "print(x, y)"),
    # an index past a slice: m[:, j] is a column, read and written
    ("x = torch.arange(24).reshape(2, 3, 4)\ny = m * 1\ny[:, 0] = 100\ny[1:, 2] += 7\n"
     "y[:, 1].mul_(-1)\nprint(m[:, 1], m[::1, -1], x[:, 0, :], x[1, :, 2], x[:, 1:, 0], y)",
     "x = torch.arange(24).reshape(2, 3, 4)\ny = m * 1\ny[:, 0] = 100\ny[1:, 2] += 7\n"
     "y[:, 1].mul_(-1)\nprint(m[:, 1], m[::1, -1], x[:, 0, :], x[1, :, 2], x[:, 1:, 0], y)"),
    # tuples, as Python prints them; chunk and split give one
    ("x = (1, 2.5)\nprint(x, (3,), t.chunk(2), t.split(4), x[0:1], t.chunk(4)[1:])",
     "x = (1, 2.5)\nprint(x, (3,), t.chunk(2), t.split(4), x[0:1], t.chunk(4)[1:])"),
    ("c = f.chunk(3)\nc[1].mul_(2)\nprint(c)", "c = f.chunk(3)\nc[1].mul_(2)\nprint(c)"),
    # Python's own sum, max and min of a list of numbers
    ("print(sum([1, 2, 3]), sum([1, 2.5]), sum([]), max([3, 7, 7.0]), min([2.0, 2, 5]), "
     "sum([True, True]), max([True, False]), min([1, True]), max([2**53, 2**53 + 1]))",
     "print(sum([1, 2, 3]), sum([1, 2.5]), sum([]), max([3, 7, 7.0]), min([2.0, 2, 5]), "
     "sum([True, True]), max([True, False]), min([1, True]), max([2**53, 2**53 + 1]))"),
    # torch.tensor of a list, a tuple or a shape held in a variable
    ("l = [1, 2, 3]\nn = [[1.5, 2], [3, 4]]\nprint(torch.tensor(l), torch.tensor(n), "
     "torch.tensor(m.shape), torch.tensor((True, False)), torch.tensor(l, dtype=torch.float64))",
     "l = [1, 2, 3]\nn = [[1.5, 2], [3, 4]]\nprint(torch.tensor(l), torch.tensor(n), "
     "torch.tensor(m.shape), torch.tensor((True, False)), torch.tensor(l, dtype=torch.float64))"),
    # torch.device and torch.cuda's questions
    ("d = torch.device('cpu')\nx = torch.ones(2, device=d)\nprint(x, d, torch.device('cuda', 1), torch.device('cuda:0'), torch.cuda.device_count(), torch.cuda.is_available())",
     "d = torch.device('cpu')\nx = torch.ones(2, device=d)\nprint(x, d, torch.device('cuda', 1), torch.device('cuda:0'), torch.cuda.device_count(), torch.cuda.is_available())"),
    ('print(torch.tensor([0.1, 0.2, 0.3]) == 0.1, torch.tensor([3.0, 2.7, 12345.]) % 0.3, torch.tensor([3.0, 2.7, 12345.]) // 0.3, torch.tensor([311.]) * 3.3, torch.tensor([311.], dtype=torch.float16) * 3.3, torch.tensor([16777217]) == 16777217.0)',
     'print(torch.tensor([0.1, 0.2, 0.3]) == 0.1, torch.tensor([3.0, 2.7, 12345.]) % 0.3, torch.tensor([3.0, 2.7, 12345.]) // 0.3, torch.tensor([311.]) * 3.3, torch.tensor([311.], dtype=torch.float16) * 3.3, torch.tensor([16777217]) == 16777217.0)'),
    ('x = torch.tensor([311.])\nx *= 3.3\nprint(x, torch.tensor([1, 2]) / 3, torch.tensor([0.1], dtype=torch.float64) == 0.1)',
     'x = torch.tensor([311.])\nx *= 3.3\nprint(x, torch.tensor([1, 2]) / 3, torch.tensor([0.1], dtype=torch.float64) == 0.1)'),
    ('tl = [torch.ones(2) * k for k in range(3)]\ns = []\nfor i, x in enumerate(tl, start=1):\n    s = s + [float(x.sum()) * i]\nfor a, b in zip(m, [10, 20, 30]):\n    s = s + [int(a.sum()) + b]\nprint(s, [a * b for a, b in zip([1, 2], [3, 4])], enumerate([5]), zip([1, 2], m))',
     'tl = [torch.ones(2) * k for k in range(3)]\ns = []\nfor i, x in enumerate(tl, start=1):\n    s = s + [float(x.sum()) * i]\nfor a, b in zip(m, [10, 20, 30]):\n    s = s + [int(a.sum()) + b]\nprint(s, [a * b for a, b in zip([1, 2], [3, 4])], list(enumerate([5])), list(zip([1, 2], m)))'),
    ("print([1, 2] + [3], [0] * 3, 2 * [1, 'a'], (1, 2) + (3,), [] * 5, [1] * -1)",
     "print([1, 2] + [3], [0] * 3, 2 * [1, 'a'], (1, 2) + (3,), [] * 5, [1] * -1)"),
    ("x = 3.14159\nn = 1234567\ns = 'ab'\nprint(f'{x:.2f}|{x:8.3f}|{x:<8.1f}|{n:,}|{n:>10}|{n:03d}|{x:e}|{0.25:.1%}|{f.sum():.3f}|{255:x}|{255:#x}|{-42:+d}|{42: d}|{s:>5}|{s:^6}|{s:*<4}|{x:.3}|{1.0:.3}|{n:.2e}|{-3.5:08.2f}|{x:=+10.2f}|{True:>5}|{x:g}|{1e20:g}|{x:,.2f}|{-1234:,}|{7:b}|{8:o}|{n:_<12}')",
     "x = 3.14159\nn = 1234567\ns = 'ab'\nprint(f'{x:.2f}|{x:8.3f}|{x:<8.1f}|{n:,}|{n:>10}|{n:03d}|{x:e}|{0.25:.1%}|{f.sum():.3f}|{255:x}|{255:#x}|{-42:+d}|{42: d}|{s:>5}|{s:^6}|{s:*<4}|{x:.3}|{1.0:.3}|{n:.2e}|{-3.5:08.2f}|{x:=+10.2f}|{True:>5}|{x:g}|{1e20:g}|{x:,.2f}|{-1234:,}|{7:b}|{8:o}|{n:_<12}')"),
    ('print(torch.arange(0, 5, 1.5, dtype=torch.int64), torch.arange(0.5, 3.7, 1.5, dtype=torch.int32))',
     'print(torch.arange(0, 5, 1.5, dtype=torch.int64), torch.arange(0.5, 3.7, 1.5, dtype=torch.int32))'),
    ('print(torch.arange(2.9, dtype=torch.int32), torch.arange(2.9, dtype=torch.int64), torch.arange(5, 0, -1))',
     'print(torch.arange(2.9, dtype=torch.int32), torch.arange(2.9, dtype=torch.int64), torch.arange(5, 0, -1))'),
    ('print(torch.arange(0).chunk(3), torch.zeros(3, 0).chunk(2))',
     'print(torch.arange(0).chunk(3), torch.zeros(3, 0).chunk(2))'),
    ("print(torch.tensor([1e10, -1e10, float('nan'), 300.7, -1.5, 70000.2, 1e19]).int())",
     "print(torch.tensor([1e10, -1e10, float('nan'), 300.7, -1.5, 70000.2, 1e19]).int())"),
    ("print(torch.tensor([1e19, float('inf'), -2.5e9]).long())",
     "print(torch.tensor([1e19, float('inf'), -2.5e9]).long())"),
    ('x = torch.tensor([3000000007., -3000000007., 300.5], dtype=torch.float64)\nprint(x.to(torch.uint8), x.to(torch.int8))',
     'x = torch.tensor([3000000007., -3000000007., 300.5], dtype=torch.float64)\nprint(x.to(torch.uint8), x.to(torch.int8))'),
    ('x = t * 1\nx[0:2] = x[3:5]\nx[2:4] = x[2:4]\nx[1:3] = x[5]\nx[1:] += x[0]\nprint(x)',
     'x = t * 1\nx[0:2] = x[3:5]\nx[2:4] = x[2:4]\nx[1:3] = x[5]\nx[1:] += x[0]\nprint(x)'),
    ('print(f.var(), f.std(), m.float().var(dim=0), m.float().var(1, unbiased=False), m.float().std(dim=1, keepdim=True))',
     'print(f.var(), f.std(), m.float().var(dim=0), m.float().var(1, unbiased=False), m.float().std(dim=1, keepdim=True))'),
    ('print(m.float().var(dim=0, correction=0), m.float().var(0, True, True), f.var(False), torch.ones(1).var())',
     'print(m.float().var(dim=0, correction=0), m.float().var(0, True, True), f.var(False), torch.ones(1).var())'),
    ('print((t + 1).prod(), m.prod(dim=1), b.prod(), (f + 1).prod(0, True), i.prod())',
     'print((t + 1).prod(), m.prod(dim=1), b.prod(), (f + 1).prod(0, True), i.prod())'),
    ('print(m.t(), m.transpose(0, 1), torch.transpose(m, 1, 0), t.t())',
     'print(m.t(), m.transpose(0, 1), torch.transpose(m, 1, 0), t.t())'),
    ('x = torch.arange(24).reshape(2, 3, 4)\nprint(x.permute(2, 0, 1), x.permute((1, 2, 0))[1], x.transpose(0, 2).shape)',
     'x = torch.arange(24).reshape(2, 3, 4)\nprint(x.permute(2, 0, 1), x.permute((1, 2, 0))[1], x.transpose(0, 2).shape)'),
    ("print(torch.arange(2**31, 2**31 + 3, dtype=torch.int32), torch.arange(2**53 + 1, 2**53 + 4), torch.arange(True), torch.arange(0, 10, float('inf')))",
     "print(torch.arange(2**31, 2**31 + 3, dtype=torch.int32), torch.arange(2**53 + 1, 2**53 + 4), torch.arange(True), torch.arange(0, 10, float('inf')))"),
    ('print(torch.round(torch.tensor([1.5, 2.5, -0.5, 2.675])), torch.round(torch.tensor([1.2345, 2.675]), decimals=2), torch.round(torch.tensor([1234.5]), decimals=-2), torch.tensor([0.5]).round(), torch.round(t))',
     'print(torch.round(torch.tensor([1.5, 2.5, -0.5, 2.675])), torch.round(torch.tensor([1.2345, 2.675]), decimals=2), torch.round(torch.tensor([1234.5]), decimals=-2), torch.tensor([0.5]).round(), torch.round(t))'),
    ('x = f * 1\nx.fill_(x[1])\ny = f * 1\ny[0] = y[0:1]\nprint(x, y)',
     'x = f * 1\nx.fill_(x[1])\ny = f * 1\ny[0] = y[0:1]\nprint(x, y)'),
    ('print((t > 1) & (t < 4), (t < 1) | (t > 4), (t > 1) ^ (t > 3), ~(t > 2), ~t, t & 3, 6 | t, t ^ 1)',
     'print((t > 1) & (t < 4), (t < 1) | (t > 4), (t > 1) ^ (t > 3), ~(t > 2), ~t, t & 3, 6 | t, t ^ 1)'),
    ('x = t * 1\nx &= 6\ny = t > 2\ny |= t == 0\nprint(x, y, 1 | 2 & 3 ^ 4, 1 < 2 & 3, 5 & 3, 5 | 3, 5 ^ 3, ~5, True & False, True | 0)',
     'x = t * 1\nx &= 6\ny = t > 2\ny |= t == 0\nprint(x, y, 1 | 2 & 3 ^ 4, 1 < 2 & 3, 5 & 3, 5 | 3, 5 ^ 3, ~5, True & False, True | 0)'),
    ('print(torch.tensor([5], dtype=torch.uint8) & 3, ~torch.tensor([5], dtype=torch.uint8), b & torch.tensor([1, 3, 0]), i | 1)',
     'print(torch.tensor([5], dtype=torch.uint8) & 3, ~torch.tensor([5], dtype=torch.uint8), b & torch.tensor([1, 3, 0]), i | 1)'),
    ('print(t[t > 2], t[[0, 2, 2]], m[m > 1], m[torch.tensor([True, False])], m[[1, 0]], m[torch.tensor([[0, 1], [1, 1]])], t[torch.tensor([-1, 0])])',
     'print(t[t > 2], t[[0, 2, 2]], m[m > 1], m[torch.tensor([True, False])], m[[1, 0]], m[torch.tensor([[0, 1], [1, 1]])], t[torch.tensor([-1, 0])])'),
    ('x = t * 1\nx[x > 2] = 0\ny = t * 1\ny[[0, 1]] += 10\nz = m * 1\nz[z % 2 == 0] = -1\nw = m * 1.0\nw[torch.tensor([True, False])] = torch.tensor([7., 8., 9.])\nprint(x, y, z, w)',
     'x = t * 1\nx[x > 2] = 0\ny = t * 1\ny[[0, 1]] += 10\nz = m * 1\nz[z % 2 == 0] = -1\nw = m * 1.0\nw[torch.tensor([True, False])] = torch.tensor([7., 8., 9.])\nprint(x, y, z, w)'),
    ('print(torch.linspace(-1, 1, 11, dtype=torch.float64), torch.linspace(0, 1, 7).tolist(), torch.linspace(-3.3, 7.1, 13).tolist())',
     'print(torch.linspace(-1, 1, 11, dtype=torch.float64), torch.linspace(0, 1, 7).tolist(), torch.linspace(-3.3, 7.1, 13).tolist())'),
    ('print(torch.linspace(0.1, 0.9, 30).tolist(), torch.linspace(0, 10, 5, dtype=torch.int64), torch.linspace(1, 2, 1), torch.linspace(0, 1, 0))',
     'print(torch.linspace(0.1, 0.9, 30).tolist(), torch.linspace(0, 10, 5, dtype=torch.int64), torch.linspace(1, 2, 1), torch.linspace(0, 1, 0))'),
    ('print(torch.eye(3), torch.eye(2, 3), torch.eye(2, dtype=torch.int64))',
     'print(torch.eye(3), torch.eye(2, 3), torch.eye(2, dtype=torch.int64))'),
    ('x = t * 1\nx[x.abs() > 2] = 0\ny = t * 1\ny[torch.tensor([1, 0, 1, 0, 1, 0], dtype=torch.uint8)] = -1\nprint(x, y, m[1, 2], m[:, 1])',
     'x = t * 1\nx[x.abs() > 2] = 0\ny = t * 1\ny[torch.tensor([1, 0, 1, 0, 1, 0], dtype=torch.uint8)] = -1\nprint(x, y, m[1, 2], m[:, 1])'),
    ('print(m[None], m[:, None], m[..., 0], m[..., None, 1], m[None, ..., None].shape, m[1, None, ..., None].shape, m[...], t[None:2], t[::None])',
     'print(m[None], m[:, None], m[..., 0], m[..., None, 1], m[None, ..., None].shape, m[1, None, ..., None].shape, m[...], t[None:2], t[::None])'),
    ('x = m * 1\nx[..., 1] = 7\nx[:, None] += 1\ny = torch.tensor(5)\nprint(x, x[0, ..., 1:], y[None], y[...], f[None][0, 1:3], (m[:, None] * t[None, :3]).shape)',
     'x = m * 1\nx[..., 1] = 7\nx[:, None] += 1\ny = torch.tensor(5)\nprint(x, x[0, ..., 1:], y[None], y[...], f[None][0, 1:3], (m[:, None] * t[None, :3]).shape)'),
    ('x = torch.arange(24).reshape(2, 3, 4)\nprint(x[..., ...].shape, x[..., 0, ...], x[0, ..., 0, ...], x[..., None, ...].shape, x[:, ..., 1], x[..., 1:3, ::2])',
     'x = torch.arange(24).reshape(2, 3, 4)\nprint(x[..., ...].shape, x[..., 0, ...], x[0, ..., 0, ...], x[..., None, ...].shape, x[:, ..., 1], x[..., 1:3, ::2])'),
    ('print(+t, +f, +True, +2.5, -(+3), +-+1, 1 + +2, +m[None])',
     'print(+t, +f, +True, +2.5, -(+3), +-+1, 1 + +2, +m[None])'),
    ('x = torch.arange(64).reshape(2, 2, 2, 2, 4)\nprint(x, x.shape, x.sum(dim=4), x[..., 0].shape, x[None].shape, x.permute(4, 3, 2, 1, 0)[1, 0], x.transpose(0, 4).shape, x.float().mean(dim=1))',
     'x = torch.arange(64).reshape(2, 2, 2, 2, 4)\nprint(x, x.shape, x.sum(dim=4), x[..., 0].shape, x[None].shape, x.permute(4, 3, 2, 1, 0)[1, 0], x.transpose(0, 4).shape, x.float().mean(dim=1))'),
    ('y = torch.arange(64, dtype=torch.float32).reshape(1, 2, 1, 2, 2, 1, 4, 2)\nz = torch.ones(2, 1, 2, 2, 1, 1, 4, 1)\nprint(y.mean(), y.squeeze().shape, y.flatten(2, 5).shape, (y + z).shape, (y * z)[0, 1, 0, 1, 1, 0], torch.stack([y[0], y[0]]).shape, torch.cat([y, y], dim=7).shape, y.sum(dim=-1).shape, y.max(), y[0, 1, 0, 1, 1, 0, 3, 1], torch.zeros(1, 2, 1, 1, 1, 1, 1, 3))',
     'y = torch.arange(64, dtype=torch.float32).reshape(1, 2, 1, 2, 2, 1, 4, 2)\nz = torch.ones(2, 1, 2, 2, 1, 1, 4, 1)\nprint(y.mean(), y.squeeze().shape, y.flatten(2, 5).shape, (y + z).shape, (y * z)[0, 1, 0, 1, 1, 0], torch.stack([y[0], y[0]]).shape, torch.cat([y, y], dim=7).shape, y.sum(dim=-1).shape, y.max(), y[0, 1, 0, 1, 1, 0, 3, 1], torch.zeros(1, 2, 1, 1, 1, 1, 1, 3))'),
    ('g = [[] for _ in range(3)]\nfor r in range(5):\n    g[r % 3].append(r)\nn = [[[1]]]\nn[0][0].insert(0, 7)\ntp = ([],)\ntp[0].append(1)\ng[1].extend([8, 9])\nx = g[-1].pop()\ng[0].remove(3)\nprint(g, n, tp, x)',
     'g = [[] for _ in range(3)]\nfor r in range(5):\n    g[r % 3].append(r)\nn = [[[1]]]\nn[0][0].insert(0, 7)\ntp = ([],)\ntp[0].append(1)\ng[1].extend([8, 9])\nx = g[-1].pop()\ng[0].remove(3)\nprint(g, n, tp, x)'),
    ('def f(v):\n    return v[None]\nif True:\n    y = t[:, None]\nz = (t +\n     t)[None, ..., None]\nx = m * 1\nx[None] = x\nx[0:1] = x[0]\nx[0] = x[0:1]\nw = m * 1\nw[None] = w[1]\nprint(f(t).shape, y.shape, z.shape, x, w)',
     'def f(v):\n    return v[None]\nif True:\n    y = t[:, None]\nz = (t +\n     t)[None, ..., None]\nx = m * 1\nx[None] = x\nx[0:1] = x[0]\nx[0] = x[0:1]\nw = m * 1\nw[None] = w[1]\nprint(f(t).shape, y.shape, z.shape, x, w)'),
    ('v = torch.tensor([-2.5, -1.0, -0.5, 0.0, 0.25, 1.0, 3.0, 10.0])\nprint(v.log(), v.log2(), torch.log10(v), v.sin(), torch.cos(v), v.tanh(), torch.sigmoid(v), v.rsqrt(), v.reciprocal())',
     'v = torch.tensor([-2.5, -1.0, -0.5, 0.0, 0.25, 1.0, 3.0, 10.0])\nprint(v.log(), v.log2(), torch.log10(v), v.sin(), torch.cos(v), v.tanh(), torch.sigmoid(v), v.rsqrt(), v.reciprocal())'),
    ('v = torch.tensor([-2.5, -1.0, -0.5, 0.0, 0.25, 1.0, 3.0, 10.0])\nprint(v.floor(), torch.ceil(v), v.trunc(), v.sign(), v.square(), t.floor(), i.sign(), b.square(), t.sin(), m.log(), f.double().tanh())',
     'v = torch.tensor([-2.5, -1.0, -0.5, 0.0, 0.25, 1.0, 3.0, 10.0])\nprint(v.floor(), torch.ceil(v), v.trunc(), v.sign(), v.square(), t.floor(), i.sign(), b.square(), t.sin(), m.log(), f.double().tanh())'),
    ('x = torch.zeros_like(m)\ny = torch.ones_like(f, dtype=torch.int32)\nz = torch.full_like(m, 2.7)\ne = torch.empty_like(b)\nout = [torch.zeros_like(t) for _ in range(2)]\nprint(x, y, z, e.shape, torch.full_like(f, 7), torch.ones_like(m[0]), out)',
     'x = torch.zeros_like(m)\ny = torch.ones_like(f, dtype=torch.int32)\nz = torch.full_like(m, 2.7)\ne = torch.empty_like(b)\nout = [torch.zeros_like(t) for _ in range(2)]\nprint(x, y, z, e.shape, torch.full_like(f, 7), torch.ones_like(m[0]), out)'),
    ('x = torch.arange(4.)\nj = torch.tensor([-2, 0, 3])\nprint(torch.where(x > 1, x, -x), torch.where(j > 0, j, 0), torch.where(j > 0, j, 0.5), torch.where(b, 1, 0), torch.where(torch.tensor([True, False]), torch.tensor([1, 2]), torch.tensor([1.5, 2.5])), torch.where(m > 2, m, t[:3]))',
     'x = torch.arange(4.)\nj = torch.tensor([-2, 0, 3])\nprint(torch.where(x > 1, x, -x), torch.where(j > 0, j, 0), torch.where(j > 0, j, 0.5), torch.where(b, 1, 0), torch.where(torch.tensor([True, False]), torch.tensor([1, 2]), torch.tensor([1.5, 2.5])), torch.where(m > 2, m, t[:3]))'),
    ("x = torch.arange(4.)\nj = torch.tensor([-2, 0, 3])\nprint(x.clamp(0, 2), j.clamp(min=0), j.clamp(min=0.5), torch.clamp(j, max=1), x.clamp(max=torch.tensor(1.)), x.clip(-1, 1), x.clamp(min=2, max=1), torch.tensor([float('nan'), 5.]).clamp(0, 1))",
     "x = torch.arange(4.)\nj = torch.tensor([-2, 0, 3])\nprint(x.clamp(0, 2), j.clamp(min=0), j.clamp(min=0.5), torch.clamp(j, max=1), x.clamp(max=torch.tensor(1.)), x.clip(-1, 1), x.clamp(min=2, max=1), torch.tensor([float('nan'), 5.]).clamp(0, 1))"),
    ("x = torch.arange(4.)\nj = torch.tensor([-2, 0, 3])\nprint(torch.maximum(x, 3 - x), torch.minimum(j, torch.tensor(1)), torch.maximum(b, b), torch.minimum(b, ~b), torch.pow(x, 2), x.pow(0.5), torch.pow(2, j.float()), j.pow(2), torch.maximum(torch.tensor([float('nan'), 1.]), torch.tensor([0., 2.])))",
     "x = torch.arange(4.)\nj = torch.tensor([-2, 0, 3])\nprint(torch.maximum(x, 3 - x), torch.minimum(j, torch.tensor(1)), torch.maximum(b, b), torch.minimum(b, ~b), torch.pow(x, 2), x.pow(0.5), torch.pow(2, j.float()), j.pow(2), torch.maximum(torch.tensor([float('nan'), 1.]), torch.tensor([0., 2.])))"),
    ('l = [3, 1.5, 2, True, -1, 2.0]\nprint(sorted(l), sorted(l, reverse=True), sorted(["b", "a", "c"]), sorted((3, 1)), sorted([0, 1, 2], reverse=True), any([0, 0.0, 1]), all([1, 2, 0]), any([]), all([]), all(t > -1), any([x > 4 for x in [1, 5]]))',
     'l = [3, 1.5, 2, True, -1, 2.0]\nprint(sorted(l), sorted(l, reverse=True), sorted(["b", "a", "c"]), sorted((3, 1)), sorted([0, 1, 2], reverse=True), any([0, 0.0, 1]), all([1, 2, 0]), any([]), all([]), all(t > -1), any([x > 4 for x in [1, 5]]))'),
    ("a = torch.tensor([1., 2., float('nan')])\nc = torch.tensor([1., 2.000001, float('nan')])\nprint(torch.allclose(a, c), torch.allclose(a, c, equal_nan=True), torch.equal(a[:2], c[:2]), torch.equal(t, t), torch.equal(torch.tensor([1, 2]), torch.tensor([1., 2.])), torch.equal(t, t[:3]), torch.isclose(a, c), a.allclose(c), torch.allclose(a, c, rtol=0, atol=1e-7), torch.allclose(torch.tensor([1.]), torch.ones(3, 1, 1)), torch.isclose(t, t + 1, atol=1), torch.allclose(f, f + 1e-6))",
     "a = torch.tensor([1., 2., float('nan')])\nc = torch.tensor([1., 2.000001, float('nan')])\nprint(torch.allclose(a, c), torch.allclose(a, c, equal_nan=True), torch.equal(a[:2], c[:2]), torch.equal(t, t), torch.equal(torch.tensor([1, 2]), torch.tensor([1., 2.])), torch.equal(t, t[:3]), torch.isclose(a, c), a.allclose(c), torch.allclose(a, c, rtol=0, atol=1e-7), torch.allclose(torch.tensor([1.]), torch.ones(3, 1, 1)), torch.isclose(t, t + 1, atol=1), torch.allclose(f, f + 1e-6))"),
    ("z = torch.tensor([1., -2., float('nan'), -0., 0., float('inf')])\nprint(torch.clamp(z, min=0), torch.clamp(torch.tensor([0.0]), min=-0.0), torch.clamp(z, min=float('nan')), z.clip(max=0), torch.equal(torch.tensor([4611686018427387905]), torch.tensor([4611686018427387904])), torch.maximum(torch.tensor([1, 3], dtype=torch.int32), torch.tensor(2**40)), torch.maximum(torch.tensor([1, 2, 3], dtype=torch.uint8), torch.tensor(-1)), torch.sigmoid(torch.tensor([-100.0, 100.0, 0.0])), torch.isclose(torch.tensor([3e38]), torch.tensor([-3e38]), rtol=10))",
     "z = torch.tensor([1., -2., float('nan'), -0., 0., float('inf')])\nprint(torch.clamp(z, min=0), torch.clamp(torch.tensor([0.0]), min=-0.0), torch.clamp(z, min=float('nan')), z.clip(max=0), torch.equal(torch.tensor([4611686018427387905]), torch.tensor([4611686018427387904])), torch.maximum(torch.tensor([1, 3], dtype=torch.int32), torch.tensor(2**40)), torch.maximum(torch.tensor([1, 2, 3], dtype=torch.uint8), torch.tensor(-1)), torch.sigmoid(torch.tensor([-100.0, 100.0, 0.0])), torch.isclose(torch.tensor([3e38]), torch.tensor([-3e38]), rtol=10))"),
    ('n = [[1], [2]]\nn[0].append(n.pop(0))\nk = [[1], [2], [3]]\nk[0].extend(k.pop(0))\nl = [[1], [2]]\nl[1].append(l.pop())\nq = [1]\nq.append(q.extend([5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]))\nprint(n, k, l, q)',
     'n = [[1], [2]]\nn[0].append(n.pop(0))\nk = [[1], [2], [3]]\nk[0].extend(k.pop(0))\nl = [[1], [2]]\nl[1].append(l.pop())\nq = [1]\nq.append(q.extend([5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]))\nprint(n, k, l, q)'),
    ('i8 = t.to(torch.int8)\nu8 = t.to(torch.uint8)\nprint(torch.pow(1000, i8), torch.where(u8 > 2, u8, -1), u8.clamp(min=-255), f.pow(1e40), torch.where(t > 2, i8, 2.5), 1e6 ** f.half(), i8.pow(torch.tensor(1000)))',
     'i8 = t.to(torch.int8)\nu8 = t.to(torch.uint8)\nprint(torch.pow(1000, i8), torch.where(u8 > 2, u8, -1), u8.clamp(min=-255), f.pow(1e40), torch.where(t > 2, i8, 2.5), 1e6 ** f.half(), i8.pow(torch.tensor(1000)))'),
    ('i8 = t.to(torch.int8)\nu8 = t.to(torch.uint8)\nprint(i8 // 1000, i8 % 1000, (i8 - 24) == 1000, i8 < 1000, u8 > -1, 1000 // i8[1:], 1000 % i8[1:], u8 // -1, u8 % -1, i8 // torch.tensor(1000), torch.tensor(1000) ** i8)',
     'i8 = t.to(torch.int8)\nu8 = t.to(torch.uint8)\nprint(i8 // 1000, i8 % 1000, (i8 - 24) == 1000, i8 < 1000, u8 > -1, 1000 // i8[1:], 1000 % i8[1:], u8 // -1, u8 % -1, i8 // torch.tensor(1000), torch.tensor(1000) ** i8)'),
    ('x = m * 1\nx[0,] = 5\nx[:, 1,] += 1\nx[t[:2] > 0,] += 10\nprint(m[0,], m[:, 1,], m[1:,], m[..., 0,], m[None,].shape, m[[1, 0],], m[t[:2] > 0,], x)',
     'x = m * 1\nx[0,] = 5\nx[:, 1,] += 1\nx[t[:2] > 0,] += 10\nprint(m[0,], m[:, 1,], m[1:,], m[..., 0,], m[None,].shape, m[[1, 0],], m[t[:2] > 0,], x)'),
    ('ix = torch.tensor([2, 0, -1])\nz = t * 1\nz[ix[1:]] = 0\nprint(t[ix[1:]], t[[3, 1, 4][1:]], t[(ix[1:])], m[1][ix[:2]], z)',
     'ix = torch.tensor([2, 0, -1])\nz = t * 1\nz[ix[1:]] = 0\nprint(t[ix[1:]], t[[3, 1, 4][1:]], t[(ix[1:])], m[1][ix[:2]], z)'),
    ('s = torch.tensor(2.5)\nl = [1, 2, 3]\nz = t * 1\nz[z.argmax()] += 100\nz[torch.tensor(0)] = -1\nz[torch.tensor(1):torch.tensor(3)] = 7\nw = torch.tensor(3)\nw[w > 0] += 1\ny = m * 1\ny[1, torch.tensor(2)] = 9\ny[[]] = 5\nprint(t[t.argmax()], m[torch.tensor(1)], m[1, torch.tensor(1)], m[:, torch.tensor(2)], t[torch.tensor([2]):], l[torch.tensor(1)], l[True], t[torch.tensor(True)].shape, s[s > 0], s[s < 0], m[[]], z, w, y)',
     's = torch.tensor(2.5)\nl = [1, 2, 3]\nz = t * 1\nz[z.argmax()] += 100\nz[torch.tensor(0)] = -1\nz[torch.tensor(1):torch.tensor(3)] = 7\nw = torch.tensor(3)\nw[w > 0] += 1\ny = m * 1\ny[1, torch.tensor(2)] = 9\ny[[]] = 5\nprint(t[t.argmax()], m[torch.tensor(1)], m[1, torch.tensor(1)], m[:, torch.tensor(2)], t[torch.tensor([2]):], l[torch.tensor(1)], l[True], t[torch.tensor(True)].shape, s[s > 0], s[s < 0], m[[]], z, w, y)'),
    ("n = float('nan')\ng = torch.tensor([1., 5., n, -0., 0.])\nprint(g.clamp(n, 3), g.clamp(-0., 0.), g.clamp(0., -0.), g.clamp(4, 2), torch.maximum(torch.tensor(-0.), g), torch.minimum(torch.tensor(0.), g), torch.tensor([1, 2], dtype=torch.uint8).clamp(300, 1e10), t.to(torch.int8).clamp(-1000, 1.5), torch.tensor([1.5], dtype=torch.float64) // 0.1, torch.tensor([float('inf'), -5.]) // 2, torch.tensor([-5.]) // float('inf'), torch.tensor([1000.], dtype=torch.bfloat16) // -3, 1.5 // 0.1, torch.tensor([-0., float('-inf'), 4.]) ** 0.5, torch.tensor([-0., float('-inf'), 4.]) ** -0.5, torch.tensor([0.1, 3.3]) ** 3, torch.tensor([123456789]).sin(), torch.tensor([2147483647], dtype=torch.int32).cos())",
     "n = float('nan')\ng = torch.tensor([1., 5., n, -0., 0.])\nprint(g.clamp(n, 3), g.clamp(-0., 0.), g.clamp(0., -0.), g.clamp(4, 2), torch.maximum(torch.tensor(-0.), g), torch.minimum(torch.tensor(0.), g), torch.tensor([1, 2], dtype=torch.uint8).clamp(300, 1e10), t.to(torch.int8).clamp(-1000, 1.5), torch.tensor([1.5], dtype=torch.float64) // 0.1, torch.tensor([float('inf'), -5.]) // 2, torch.tensor([-5.]) // float('inf'), torch.tensor([1000.], dtype=torch.bfloat16) // -3, 1.5 // 0.1, torch.tensor([-0., float('-inf'), 4.]) ** 0.5, torch.tensor([-0., float('-inf'), 4.]) ** -0.5, torch.tensor([0.1, 3.3]) ** 3, torch.tensor([123456789]).sin(), torch.tensor([2147483647], dtype=torch.int32).cos())"),
    ('x = f * 1\nx[x > 2] = torch.tensor(1)\nx[[0]] += torch.tensor([1])\ny = torch.zeros(3, dtype=torch.int8)\ny.fill_(torch.tensor(2.7))\nprint(torch.linspace(-3.7, -1, 11, dtype=torch.int64), torch.linspace(10, 2, 7, dtype=torch.float16), torch.linspace(-1, 100, 7, dtype=torch.bfloat16), torch.linspace(0, 100, 70, dtype=torch.int8), torch.cat([m.float(), torch.zeros(0)]), torch.zeros(0, dtype=torch.int64) // 0, x, y)',
     'x = f * 1\nx[x > 2] = torch.tensor(1)\nx[[0]] += torch.tensor([1])\ny = torch.zeros(3, dtype=torch.int8)\ny.fill_(torch.tensor(2.7))\nprint(torch.linspace(-3.7, -1, 11, dtype=torch.int64), torch.linspace(10, 2, 7, dtype=torch.float16), torch.linspace(-1, 100, 7, dtype=torch.bfloat16), torch.linspace(0, 100, 70, dtype=torch.int8), torch.cat([m.float(), torch.zeros(0)]), torch.zeros(0, dtype=torch.int64) // 0, x, y)'),
    ('h = torch.tensor([12.589, -1540.769, 1654.28]).half()\nb = torch.tensor([1166.7, -1616.557, 1654.28]).bfloat16()\nprint(h // 0.001, h // 7, b // -3, b // 7)',
     'h = torch.tensor([12.589, -1540.769, 1654.28]).half()\nb = torch.tensor([1166.7, -1616.557, 1654.28]).bfloat16()\nprint(h // 0.001, h // 7, b // -3, b // 7)'),
    ('print(torch.linspace(0, 1, 300, dtype=torch.bfloat16)[:3], torch.linspace(0, 100, 1000, dtype=torch.bfloat16)[544], torch.linspace(0, 1, 3000, dtype=torch.float16)[2990:])',
     'print(torch.linspace(0, 1, 300, dtype=torch.bfloat16)[:3], torch.linspace(0, 100, 1000, dtype=torch.bfloat16)[544], torch.linspace(0, 1, 3000, dtype=torch.float16)[2990:])'),
    # norm, cumsum and cumprod, sort, argsort and topk (stable: equal
    # elements keep their order, NaN last ascending), dot, mm, softmax
    ("g = f * 1.5 - 2\nprint(g.norm(), torch.norm(g), g.norm(p=1), g.norm(1), g.norm(float('inf')), g.norm(-float('inf')), g.norm(p='fro'), g.norm(p=0), g.norm(3), g.norm(2.5), (m * 1.).norm(dim=1), (m * 1.).norm(dim=0, keepdim=True), (m * 1.).norm(p=1, dim=(0, 1)), (m * 1.).norm('fro', 1, True), f.half().norm(), f.bfloat16().norm(), f.double().norm(), torch.tensor([1e20, 1e20]).norm(), torch.tensor([1e-30, 1e-30]).norm(), torch.zeros(0).norm(), torch.tensor([0., float('nan')]).norm(p=0), torch.tensor(-3.).norm())",
     "g = f * 1.5 - 2\nprint(g.norm(), torch.norm(g), g.norm(p=1), g.norm(1), g.norm(float('inf')), g.norm(-float('inf')), g.norm(p='fro'), g.norm(p=0), g.norm(3), g.norm(2.5), (m * 1.).norm(dim=1), (m * 1.).norm(dim=0, keepdim=True), (m * 1.).norm(p=1, dim=(0, 1)), (m * 1.).norm('fro', 1, True), f.half().norm(), f.bfloat16().norm(), f.double().norm(), torch.tensor([1e20, 1e20]).norm(), torch.tensor([1e-30, 1e-30]).norm(), torch.zeros(0).norm(), torch.tensor([0., float('nan')]).norm(p=0), torch.tensor(-3.).norm())"),
    ('print(t.cumsum(0), m.cumsum(1), m.cumsum(dim=0), torch.cumsum(f, 0), (f / 3).cumsum(0), b.cumsum(0), b.cumprod(0), i.cumsum(-1), (f + 1).cumprod(0), f.cumsum(0, dtype=torch.int32), t.cumsum(0, dtype=torch.float64), (f / 3).bfloat16().cumsum(0), torch.tensor(5).cumsum(0), (t + 3).to(torch.int8).cumprod(0))',
     'print(t.cumsum(0), m.cumsum(1), m.cumsum(dim=0), torch.cumsum(f, 0), (f / 3).cumsum(0), b.cumsum(0), b.cumprod(0), i.cumsum(-1), (f + 1).cumprod(0), f.cumsum(0, dtype=torch.int32), t.cumsum(0, dtype=torch.float64), (f / 3).bfloat16().cumsum(0), torch.tensor(5).cumsum(0), (t + 3).to(torch.int8).cumprod(0))'),
    ("g = torch.tensor([3., 1., 2., 1., float('nan'), -0., 0.])\nprint(g.sort(), g.sort(descending=True), torch.sort(g, 0, True), g.argsort(), g.argsort(descending=True), m.sort(dim=0, descending=True), b.sort(), torch.tensor(3.).sort(), t.sort(stable=True).values, (m * -1).sort()[1], torch.argsort(m, dim=0, descending=True))",
     "g = torch.tensor([3., 1., 2., 1., float('nan'), -0., 0.])\nprint(g.sort(), g.sort(descending=True), torch.sort(g, 0, True), g.argsort(), g.argsort(descending=True), m.sort(dim=0, descending=True), b.sort(), torch.tensor(3.).sort(), t.sort(stable=True).values, (m * -1).sort()[1], torch.argsort(m, dim=0, descending=True))"),
    ('v, ix = (m * -1).sort(1)\nr = (f - 2.5).abs().sort()\nprint(v, ix, r.indices, r.values)',
     'v, ix = (m * -1).sort(1)\nr = (f - 2.5).abs().sort()\nprint(v, ix, r.indices, r.values)'),
    ('print(f.topk(3), f.topk(2, largest=False), m.topk(1, dim=0), torch.topk(f, k=2).values, f.topk(0), torch.tensor(3.).topk(0), (f * -1).topk(2, 0, True, True), (f - 2.4).abs().topk(2, largest=False).indices)',
     'print(f.topk(3), f.topk(2, largest=False), m.topk(1, dim=0), torch.topk(f, k=2).values, f.topk(0), torch.tensor(3.).topk(0), (f * -1).topk(2, 0, True, True), (f - 2.4).abs().topk(2, largest=False).indices)'),
    ('print(f.dot(f), t.dot(t), torch.dot(f, f), m.mm(m.T), torch.mm(m.T, m), t.to(torch.int8).dot(t.to(torch.int8)), (m * 50).to(torch.uint8).mm(m.T.to(torch.uint8)), f.softmax(0), torch.softmax(f, 0), (m * 1.).softmax(1), (m * 1.).softmax(dim=0), f.log_softmax(0), torch.log_softmax(m * 1., dim=1), torch.softmax(m, 0, dtype=torch.float64), f.double().softmax(0), f.bfloat16().softmax(0), torch.zeros(0).softmax(0), torch.tensor(2.).softmax(0))',
     'print(f.dot(f), t.dot(t), torch.dot(f, f), m.mm(m.T), torch.mm(m.T, m), t.to(torch.int8).dot(t.to(torch.int8)), (m * 50).to(torch.uint8).mm(m.T.to(torch.uint8)), f.softmax(0), torch.softmax(f, 0), (m * 1.).softmax(1), (m * 1.).softmax(dim=0), f.log_softmax(0), torch.log_softmax(m * 1., dim=1), torch.softmax(m, 0, dtype=torch.float64), f.double().softmax(0), f.bfloat16().softmax(0), torch.zeros(0).softmax(0), torch.tensor(2.).softmax(0))'),
    # the shifts of ints (Python's) and of integer tensors (torch's CPU
    # kernel: the count modulo the width), and their augmented forms
    ('x = 3\nx <<= 2\ny = t * 1\ny >>= 1\nprint(1 << 3, 5 >> 1, -9 >> 1, True << 3, 1 << 62, 7 >> 100, -7 >> 100, x, y, [5 ^ (1 << k) for k in range(3)], t << 2, (t - 3) >> 1, t.to(torch.int8) << 7, t.to(torch.int8) << 9, t << 64, t << -1, (t - 9) >> 70, b << 1, 1 << t, t << t, (t * 50).to(torch.uint8) >> 1, t.to(torch.uint8) << 8, i << 2, i >> i.abs())',
     'x = 3\nx <<= 2\ny = t * 1\ny >>= 1\nprint(1 << 3, 5 >> 1, -9 >> 1, True << 3, 1 << 62, 7 >> 100, -7 >> 100, x, y, [5 ^ (1 << k) for k in range(3)], t << 2, (t - 3) >> 1, t.to(torch.int8) << 7, t.to(torch.int8) << 9, t << 64, t << -1, (t - 9) >> 70, b << 1, 1 << t, t << t, (t * 50).to(torch.uint8) >> 1, t.to(torch.uint8) << 8, i << 2, i >> i.abs())'),
    # sort's order without stable=True, past 16 elements std::sort's; dot's and
    # mm's keywords; float16 norms added in float16; dtype=None
    ("x = torch.tensor([1, 0] * 8 + [1])\ng = torch.tensor([3., 1., 2.] * 7)\nprint(x.sort().indices, x.sort(descending=True).indices, x.argsort(), x.sort(stable=True).indices, g.sort().indices, torch.argsort(g, descending=True), m[1].sort(0, True).values, m.float()[0].dot(tensor=m.float()[1]), m.mm(mat2=m.T), torch.ones(3000).half().norm(1), torch.ones(3000).bfloat16().norm(), torch.tensor([300., 300.]).half().norm(), torch.zeros(0).norm(-1), torch.zeros(2, 0).norm(-float('inf'), dim=-1), f.softmax(0, dtype=None), t.cumsum(0, dtype=None), t.topk(torch.tensor(2)).values)",
     "x = torch.tensor([1, 0] * 8 + [1])\ng = torch.tensor([3., 1., 2.] * 7)\nprint(x.sort().indices, x.sort(descending=True).indices, x.argsort(), x.sort(stable=True).indices, g.sort().indices, torch.argsort(g, descending=True), m[1].sort(0, True).values, m.float()[0].dot(tensor=m.float()[1]), m.mm(mat2=m.T), torch.ones(3000).half().norm(1), torch.ones(3000).bfloat16().norm(), torch.tensor([300., 300.]).half().norm(), torch.zeros(0).norm(-1), torch.zeros(2, 0).norm(-float('inf'), dim=-1), f.softmax(0, dtype=None), t.cumsum(0, dtype=None), t.topk(torch.tensor(2)).values)"),
    # var and std as torch computes them: a reduction to one number from the mean,
    # several by Welford's update; a divisor of 0 divides by 0
    ('x = torch.tensor([9.866, 11.876, 5.0, -6.38], dtype=torch.float64)\nprint(x.reshape(2, 2).var(1).tolist(), x[:2].var().item(), x.reshape(2, 2).float().std(dim=1, keepdim=True).tolist(), x.reshape(1, 4).float().var(1).tolist(), x.var(0, correction=4), x.half().var().item())',
     'x = torch.tensor([9.866, 11.876, 5.0, -6.38], dtype=torch.float64)\nprint(x.reshape(2, 2).var(1).tolist(), x[:2].var().item(), x.reshape(2, 2).float().std(dim=1, keepdim=True).tolist(), x.reshape(1, 4).float().var(1).tolist(), x.var(0, correction=4), x.half().var().item())'),
    # tanh is +-1 past Sleef's bounds, as torch's vectorised tanh gives it
    ('print(torch.tensor([17, 10, -9], dtype=torch.int8).tanh(), torch.tensor([-9, 8.6, 8.7, 20, 0.5]).tanh().tolist(), torch.tensor([-9, 8.7, 18, 19], dtype=torch.float64).tanh().tolist())',
     'print(torch.tensor([17, 10, -9], dtype=torch.int8).tanh(), torch.tensor([-9, 8.6, 8.7, 20, 0.5]).tanh().tolist(), torch.tensor([-9, 8.7, 18, 19], dtype=torch.float64).tanh().tolist())'),
    # norms as torch's kernels add: a float32 2-norm over the last dimensions in the
    # lanes of its vectorised loop, fused multiply-adds; p read as a float, then
    # in bfloat16 or float16 (the root's exponent divided there too)
    ('x = torch.arange(1200.)\ng = (torch.arange(74.) * 0.37 - 9).reshape(2, 37)\nprint(x.norm(), g.norm(dim=1).tolist(), g.norm(dim=0)[:3].tolist(), g.norm().item(), g.double().norm(0.3).item(), g.bfloat16().norm(3), g.half().norm(2.5), g.half().norm(0.3))',
     'x = torch.arange(1200.)\ng = (torch.arange(74.) * 0.37 - 9).reshape(2, 37)\nprint(x.norm(), g.norm(dim=1).tolist(), g.norm(dim=0)[:3].tolist(), g.norm().item(), g.double().norm(0.3).item(), g.bfloat16().norm(3), g.half().norm(2.5), g.half().norm(0.3))'),
    # a float product in float32 and torch's order: four vectors of lanes through
    # the whole blocks, then the lanes, then the rest in order
    ('g = torch.arange(1, 101.) / 50 + 0.3\nprint(torch.arange(1200.).prod(), torch.arange(1, 41.).prod(), g.prod().item(), g.reshape(2, 50).prod(1).tolist(), g.reshape(50, 2).prod(0).tolist(), g.double().prod().item())',
     'g = torch.arange(1, 101.) / 50 + 0.3\nprint(torch.arange(1200.).prod(), torch.arange(1, 41.).prod(), g.prod().item(), g.reshape(2, 50).prod(1).tolist(), g.reshape(50, 2).prod(0).tolist(), g.double().prod().item())'),
    # var along a dimension: Welford's m2 updated with a fused multiply-add
    ('g = (torch.arange(120.).reshape(20, 6).double() * 0.731) % 5.3 - 2\nprint(g.var(0).tolist(), g.std(1)[:4].tolist())',
     'g = (torch.arange(120.).reshape(20, 6).double() * 0.731) % 5.3 - 2\nprint(g.var(0).tolist(), g.std(1)[:4].tolist())'),
    # sums and means along another dimension than the last, down each column in
    # torch's order: whole blocks of 4 vectors' columns (or of 4 columns) cascaded,
    # the others summed as a row
    ('torch.manual_seed(3)\ng = torch.randn(40, 40) * 10 ** torch.randint(-3, 4, (40, 40)).float()\nprint(g.sum(0)[28:].tolist(), g[:20, :6].sum(0).tolist(), g.reshape(4, 20, 20).mean(1)[1, :8].tolist(), g.double().reshape(50, 32).sum(0)[16:].tolist(), g[:3].sum(0).tolist()[:5])',
     'torch.manual_seed(3)\ng = torch.randn(40, 40) * 10 ** torch.randint(-3, 4, (40, 40)).float()\nprint(g.sum(0)[28:].tolist(), g[:20, :6].sum(0).tolist(), g.reshape(4, 20, 20).mean(1)[1, :8].tolist(), g.double().reshape(50, 32).sum(0)[16:].tolist(), g[:3].sum(0).tolist()[:5])'),
]
EXPECTED = [
    'tensor(15)',
    'tensor(15)',
    'tensor(2)',
    'tensor(-1)',
    'tensor(2.5000)',
    'tensor(0.3571)',
    'tensor(5)',
    'tensor(-2.5000)',
    'tensor(True)',
    'tensor([3, 5, 7])',
    'tensor([[ 3],\n        [12]])',
    'tensor([ 3, 12])',
    'tensor([1., 4.])',
    'tensor([0.0000, 1.0000, 1.4142, 1.7321, 2.0000, 2.2361])',
    'tensor([1.0000, 1.2840, 1.6487, 2.1170, 2.7183, 3.4903])',
    'tensor([2.7183, 0.1353])',
    'tensor([1., 0., 1.])',
    'tensor([3, 2, 1, 0, 1, 2])',
    'tensor([1, 2], dtype=torch.int32)',
    'tensor([0.0000, 0.0000, 0.0000, 0.5000, 1.5000, 2.5000])',
    'tensor([1, 0], dtype=torch.int32)',
    'tensor(55)',
    'tensor([ 5, 14])',
    'tensor([3, 4, 5])',
    'tensor([[ 5, 14],\n        [14, 50]])',
    'tensor([[ 9, 12, 15],\n        [12, 17, 22],\n        [15, 22, 29]])',
    'tensor([[ 1.1667,  1.5000,  1.8333],\n        [ 3.8333,  5.5000,  7.1667],\n        [ 6.5000,  9.5000, 12.5000]])',
    'tensor([[0, 3],\n        [1, 4],\n        [2, 5]])',
    'tensor([[0, 1],\n        [2, 3],\n        [4, 5]])',
    'tensor([[0., 1.],\n        [2., 3.],\n        [4., 5.]])',
    'tensor([0, 1, 2, 3, 4, 5])',
    '2',
    '1.0',
    '0.75',
    'True',
    '15',
    'tensor([0., 1., 2., 3., 4., 5., 0., 1., 2., 3., 4., 5.])',
    'tensor([0, 1, 2, 3, 4, 5, 1, 0, 1])',
    'tensor([[0, 1, 2, 0, 1, 2],\n        [3, 4, 5, 3, 4, 5]])',
    'tensor([[0, 1, 2],\n        [3, 4, 5],\n        [0, 1, 2],\n        [3, 4, 5]])',
    'tensor([[0, 1, 2, 3, 4, 5],\n        [0, 1, 2, 3, 4, 5]])',
    'tensor([[0., 0.],\n        [1., 1.],\n        [2., 2.],\n        [3., 3.],\n        [4., 4.],\n        [5., 5.]])',
    'tensor([[0, 0],\n        [1, 1],\n        [2, 2],\n        [3, 3],\n        [4, 4],\n        [5, 5]])',
    'tensor([4, 5])',
    'tensor([[2],\n        [5]])',
    'tensor([4, 5])',
    'tensor([1, 2, 3, 4, 5])',
    'tensor([[0, 1],\n        [3, 4]])',
    'tensor([[10, 21, 32],\n        [13, 24, 35]])',
    'tensor([[ 0,  1,  2],\n        [ 6,  8, 10]])',
    'tensor([[11, 21, 31],\n        [12, 22, 32]])',
    'tensor([[-0.7500, -0.7500, -0.7500],\n        [ 0.7500,  0.7500,  0.7500]])',
    'tensor([[False, False, False],\n        [ True,  True,  True]])',
    'tensor([[-1., -1., -1.],\n        [ 2.,  2.,  2.]])',
    'tensor([-2, -1, -1,  0,  0,  1])',
    'tensor([-2., -1., -1.,  0.,  0.,  1.])',
    'torch.Size([2, 3])',
    '3',
    '1',
    'tensor(3.5000)',
    'tensor(2., dtype=torch.float64)',
    'tensor([ 6,  7,  8,  9, 10, 11])',
    'torch.Size([])',
    'tensor([0, 0])',
    'tensor([0., 0.], dtype=torch.float64)',
    'tensor([0, 0], dtype=torch.int32)',
    'tensor([1., 1.])',
    '6.0 -2 3 2 1.5 1',
    'tensor([0.0000, 0.1667, 0.3333, 0.5000, 0.6667, 0.8333])',
    'tensor([ 0, -3], dtype=torch.int32)',
    'tensor([254, 255], dtype=torch.uint8)',
    'tensor([ 2.5000, -0.5000], dtype=torch.float64)',
    'tensor([3, 2, 3])',
    '1.0 15 True 0.8333333134651184',
    'tensor([[7, 8, 9],\n        [7, 8, 9]])',
    'tensor([4, 4, 0, 0, 1, 1])',
    '2',
    'tensor(False)',
    'tensor(2.)',
    '[0, 2]',
    'tensor([ 0, -1,  0,  1,  0,  0])',
    'torch.float32 torch.int64 torch.bool torch.int32 2 2 6 False cpu',
    'tensor([-2, -1,  0,  0,  1,  2]) tensor([-2, -1,  0,  0,  1,  2], dtype=torch.int32) tensor([True, True, True, True, True, True]) tensor([0., 1., 2., 3., 4., 5.]) tensor([ 1., -2.], dtype=torch.float64)',
    'tensor([0.0000, 0.3333, 0.6665, 1.0000, 1.3330, 1.6670], dtype=torch.float16) tensor([0.0000, 0.3340, 0.6680, 1.0000, 1.3359, 1.6641], dtype=torch.bfloat16) tensor([ 1., -2.], dtype=torch.float64)',
    'tensor([0, 1, 2, 3, 4, 5]) tensor([   0,   50,  100, -106,  -56,   -6], dtype=torch.int8) tensor([False,  True,  True,  True,  True,  True])',
    '[[0, 1, 2], [3, 4, 5]] [[0.0, 0.5, 1.0], [1.5, 2.0, 2.5]] 2.0 [True, False, True]',
    'tensor([0, 0], dtype=torch.int32) torch.int32 True False',
    'tensor([1., 1.], dtype=torch.float64)',
    'tensor([-9223372036854775808,                    3,                   -3,\n                         300])',
    'tensor(5) tensor([1, 2]) tensor([3, 5])',
    'tensor([[ 7,  8,  2],\n        [ 3,  4, 50]])',
    'tensor([0.5000, 1.5000, 3.0000, 4.0000, 5.0000, 6.0000])',
    'tensor([[0, 0, 0],\n        [7, 7, 7]])',
    'tensor(1.) tensor([0., 1., 2., 3., 4., 5.]) tensor([2, 2, 2, 2, 2, 2])',
    'tensor([[0, 1, 2],\n        [3, 4, 5]]) tensor([0, 1, 2, 3, 4, 5]) torch.Size([2, 3]) '
    'torch.Size([2, 1, 3]) tensor([[0, 1, 2],\n        [3, 4, 5]]) tensor([15])',
    'tensor([[ 0,  2,  4],\n        [ 6,  8, 10]])',
    '[6, 5.0, tensor([ 2.,  4.,  6.,  8., 10., 12.]), tensor([0, 0, 0, 0, 0, 0])]',
    'tensor([  0.0000,  -2.5000,  -5.0000,  -7.5000, -10.0000, -12.5000]) '
    'tensor([ 0,  3,  6,  9, 12, 15])',
    'tensor([1, 4]) tensor([2, 5]) tensor([[ 0,  1,  2,  3],\n        [12, 13, 14, 15]]) '
    'tensor([14, 18, 22]) tensor([[ 4,  8],\n        [16, 20]]) '
    'tensor([[100,  -1,   2],\n        [100,  -4,  12]])',
    '(1, 2.5) (3,) (tensor([0, 1, 2]), tensor([3, 4, 5])) (tensor([0, 1, 2, 3]), tensor([4, 5])) '
    '(1,) (tensor([2, 3]), tensor([4, 5]))',
    '(tensor([0., 1.]), tensor([4., 6.]), tensor([4., 5.]))',
    '6 3.5 0 7 2.0 2 True 1 9007199254740993',
    'tensor([1, 2, 3]) tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]]) tensor([2, 3]) '
    'tensor([ True, False]) tensor([1., 2., 3.], dtype=torch.float64)',
    'tensor([1., 1.]) cpu cuda:1 cuda:0 0 False',
    'tensor([ True, False, False]) tensor([0.3000, 0.3000, 0.2995]) tensor([9.0000e+00, 8.0000e+00, 4.1149e+04]) tensor([1026.2999]) tensor([1027.], dtype=torch.float16) tensor([True])',
    'tensor([1026.2999]) tensor([0.3333, 0.6667]) tensor([True])',
    '[0.0, 4.0, 12.0, 13, 32] [3, 8] [(0, 5)] [(1, tensor([0, 1, 2])), (2, tensor([3, 4, 5]))]',
    "[1, 2, 3] [0, 0, 0] [1, 'a', 1, 'a'] (1, 2, 3) [] []",
    '3.14|   3.142|3.1     |1,234,567|   1234567|1234567|3.141590e+00|25.0%|15.000|ff|0xff|-42| 42|   ab|  ab  |ab**|3.14|1.0|1.23e+06|-0003.50|+     3.14|    1|3.14159|1e+20|3.14|-1,234|111|10|1234567_____',
    'tensor([0, 1, 2, 3, 4]) tensor([0, 1, 2], dtype=torch.int32)',
    'tensor([0, 1, 2], dtype=torch.int32) tensor([0, 1]) tensor([5, 4, 3, 2, 1])',
    '(tensor([], dtype=torch.int64), tensor([], dtype=torch.int64), tensor([], dtype=torch.int64)) (tensor([], size=(2, 0)), tensor([], size=(1, 0)))',
    'tensor([-2147483648, -2147483648, -2147483648,         300,          -1,\n              70000, -2147483648], dtype=torch.int32)',
    'tensor([-9223372036854775808, -9223372036854775808,          -2500000000])',
    'tensor([  7, 249,  44], dtype=torch.uint8) tensor([ 0,  0, 44], dtype=torch.int8)',
    'tensor([3, 8, 8, 6, 7, 8])',
    'tensor(3.5000) tensor(1.8708) tensor([4.5000, 4.5000, 4.5000]) tensor([0.6667, 0.6667]) tensor([[1.],\n        [1.]])',
    'tensor([2.2500, 2.2500, 2.2500]) tensor([[4.5000, 4.5000, 4.5000]]) tensor(2.9167) tensor(nan)',
    'tensor(720) tensor([ 0, 60]) tensor(0) tensor([720.]) tensor(-2)',
    'tensor([[0, 3],\n        [1, 4],\n        [2, 5]]) tensor([[0, 3],\n        [1, 4],\n        [2, 5]]) tensor([[0, 3],\n        [1, 4],\n        [2, 5]]) tensor([0, 1, 2, 3, 4, 5])',
    'tensor([[[ 0,  4,  8],\n         [12, 16, 20]],\n\n        [[ 1,  5,  9],\n         [13, 17, 21]],\n\n        [[ 2,  6, 10],\n         [14, 18, 22]],\n\n        [[ 3,  7, 11],\n         [15, 19, 23]]]) tensor([[ 4, 16],\n        [ 5, 17],\n        [ 6, 18],\n        [ 7, 19]]) torch.Size([4, 3, 2])',
    'tensor([-2147483648, -2147483647, -2147483646], dtype=torch.int32) tensor([9007199254740993, 9007199254740994, 9007199254740995]) tensor([0]) tensor([])',
    'tensor([2., 2., -0., 3.]) tensor([1.2300, 2.6800]) tensor([1200.]) tensor([0.]) tensor([0, 1, 2, 3, 4, 5])',
    'tensor([1., 1., 1., 1., 1., 1.]) tensor([0., 1., 2., 3., 4., 5.])',
    'tensor([False, False,  True,  True, False, False]) tensor([ True, False, False, False, False,  True]) tensor([False, False,  True,  True, False, False]) tensor([ True,  True,  True, False, False, False]) tensor([-1, -2, -3, -4, -5, -6]) tensor([0, 1, 2, 3, 0, 1]) tensor([6, 7, 6, 7, 6, 7]) tensor([1, 0, 3, 2, 5, 4])',
    'tensor([0, 0, 2, 2, 4, 4]) tensor([ True, False, False,  True,  True,  True]) 7 True 1 7 6 -6 False 1',
    'tensor([1], dtype=torch.uint8) tensor([250], dtype=torch.uint8) tensor([1, 0, 0]) tensor([ 1, -1], dtype=torch.int32)',
    'tensor([3, 4, 5]) tensor([0, 2, 2]) tensor([2, 3, 4, 5]) tensor([[0, 1, 2]]) tensor([[3, 4, 5],\n        [0, 1, 2]]) tensor([[[0, 1, 2],\n         [3, 4, 5]],\n\n        [[3, 4, 5],\n         [3, 4, 5]]]) tensor([5, 0])',
    'tensor([0, 1, 2, 0, 0, 0]) tensor([10, 11,  2,  3,  4,  5]) tensor([[-1,  1, -1],\n        [ 3, -1,  5]]) tensor([[7., 8., 9.],\n        [3., 4., 5.]])',
    'tensor([-1.0000e+00, -8.0000e-01, -6.0000e-01, -4.0000e-01, -2.0000e-01,\n         5.5511e-17,  2.0000e-01,  4.0000e-01,  6.0000e-01,  8.0000e-01,\n         1.0000e+00], dtype=torch.float64) [0.0, 0.1666666716337204, 0.3333333432674408, 0.5, 0.6666666269302368, 0.8333333134651184, 1.0] [-3.299999952316284, -2.433333396911621, -1.5666667222976685, -0.7000001072883606, 0.16666650772094727, 1.0333330631256104, 1.9000002145767212, 2.766666889190674, 3.633333444595337, 4.5, 5.366666793823242, 6.233333110809326, 7.099999904632568]',
    '[0.10000000149011612, 0.12758620083332062, 0.1551724076271057, 0.1827586144208908, 0.2103448212146759, 0.2379310131072998, 0.2655172348022461, 0.29310342669487, 0.3206896483898163, 0.3482758402824402, 0.3758620619773865, 0.4034482538700104, 0.43103447556495667, 0.45862066745758057, 0.48620688915252686, 0.5137931108474731, 0.5413793325424194, 0.568965494632721, 0.5965517163276672, 0.6241379380226135, 0.6517241597175598, 0.6793103218078613, 0.7068965435028076, 0.7344827651977539, 0.7620689272880554, 0.7896551489830017, 0.817241370677948, 0.8448275923728943, 0.8724137544631958, 0.8999999761581421] tensor([ 0,  2,  5,  7, 10]) tensor([1.]) tensor([])',
    'tensor([[1., 0., 0.],\n        [0., 1., 0.],\n        [0., 0., 1.]]) tensor([[1., 0., 0.],\n        [0., 1., 0.]]) tensor([[1, 0],\n        [0, 1]])',
    'tensor([0, 1, 2, 0, 0, 0]) tensor([-1,  1, -1,  3, -1,  5]) tensor(5) tensor([1, 4])',
    'tensor([[[0, 1, 2],\n         [3, 4, 5]]]) tensor([[[0, 1, 2]],\n\n        [[3, 4, 5]]]) tensor([0, 3]) tensor([[1],\n        [4]]) torch.Size([1, 2, 3, 1]) torch.Size([1, 3, 1]) tensor([[0, 1, 2],\n        [3, 4, 5]]) tensor([0, 1]) tensor([0, 1, 2, 3, 4, 5])',
    'tensor([[1, 8, 3],\n        [4, 8, 6]]) tensor([8, 3]) tensor([5]) tensor(5) tensor([1., 2.]) torch.Size([2, 1, 3])',
    'torch.Size([2, 3, 4]) tensor([[ 0,  4,  8],\n        [12, 16, 20]]) tensor([0, 4, 8]) torch.Size([2, 3, 4, 1]) tensor([[ 1,  5,  9],\n        [13, 17, 21]]) tensor([[[ 4,  6],\n         [ 8, 10]],\n\n        [[16, 18],\n         [20, 22]]])',
    'tensor([0, 1, 2, 3, 4, 5]) tensor([0., 1., 2., 3., 4., 5.]) 1 2.5 -3 -1 3 tensor([[[0, 1, 2],\n         [3, 4, 5]]])',
    'tensor([[[[[ 0,  1,  2,  3],\n           [ 4,  5,  6,  7]],\n\n          [[ 8,  9, 10, 11],\n           [12, 13, 14, 15]]],\n\n\n         [[[16, 17, 18, 19],\n           [20, 21, 22, 23]],\n\n          [[24, 25, 26, 27],\n           [28, 29, 30, 31]]]],\n\n\n\n        [[[[32, 33, 34, 35],\n           [36, 37, 38, 39]],\n\n          [[40, 41, 42, 43],\n           [44, 45, 46, 47]]],\n\n\n         [[[48, 49, 50, 51],\n           [52, 53, 54, 55]],\n\n          [[56, 57, 58, 59],\n           [60, 61, 62, 63]]]]]) torch.Size([2, 2, 2, 2, 4]) tensor([[[[  6,  22],\n          [ 38,  54]],\n\n         [[ 70,  86],\n          [102, 118]]],\n\n\n        [[[134, 150],\n          [166, 182]],\n\n         [[198, 214],\n          [230, 246]]]]) torch.Size([2, 2, 2, 2]) torch.Size([1, 2, 2, 2, 2, 4]) tensor([[[ 1, 33],\n         [17, 49]],\n\n        [[ 9, 41],\n         [25, 57]]]) torch.Size([4, 2, 2, 2, 2]) tensor([[[[ 8.,  9., 10., 11.],\n          [12., 13., 14., 15.]],\n\n         [[16., 17., 18., 19.],\n          [20., 21., 22., 23.]]],\n\n\n        [[[40., 41., 42., 43.],\n          [44., 45., 46., 47.]],\n\n         [[48., 49., 50., 51.],\n          [52., 53., 54., 55.]]]])',
    'tensor(31.5000) torch.Size([2, 2, 2, 4, 2]) torch.Size([1, 2, 4, 4, 2]) torch.Size([2, 2, 2, 2, 2, 1, 4, 2]) tensor([[56., 57.],\n        [58., 59.],\n        [60., 61.],\n        [62., 63.]]) torch.Size([2, 2, 1, 2, 2, 1, 4, 2]) torch.Size([1, 2, 1, 2, 2, 1, 4, 4]) torch.Size([1, 2, 1, 2, 2, 1, 4]) tensor(63.) tensor(63.) tensor([[[[[[[[0., 0., 0.]]]]]],\n\n\n\n\n\n         [[[[[[0., 0., 0.]]]]]]]])',
    '[[0], [1, 4, 8, 9], []] [[[7, 1]]] ([1],) 2',
    'torch.Size([1, 6]) torch.Size([6, 1]) torch.Size([1, 6, 1]) tensor([[0, 1, 2],\n        [3, 4, 5]]) tensor([[3, 4, 5],\n        [3, 4, 5]])',
    'tensor([    nan,     nan,     nan,    -inf, -1.3863,  0.0000,  1.0986,  2.3026]) tensor([    nan,     nan,     nan,    -inf, -2.0000,  0.0000,  1.5850,  3.3219]) tensor([    nan,     nan,     nan,    -inf, -0.6021,  0.0000,  0.4771,  1.0000]) tensor([-0.5985, -0.8415, -0.4794,  0.0000,  0.2474,  0.8415,  0.1411, -0.5440]) tensor([-0.8011,  0.5403,  0.8776,  1.0000,  0.9689,  0.5403, -0.9900, -0.8391]) tensor([-0.9866, -0.7616, -0.4621,  0.0000,  0.2449,  0.7616,  0.9951,  1.0000]) tensor([0.0759, 0.2689, 0.3775, 0.5000, 0.5622, 0.7311, 0.9526, 1.0000]) tensor([   nan,    nan,    nan,    inf, 2.0000, 1.0000, 0.5774, 0.3162]) tensor([-0.4000, -1.0000, -2.0000,     inf,  4.0000,  1.0000,  0.3333,  0.1000])',
    'tensor([-3., -1., -1.,  0.,  0.,  1.,  3., 10.]) tensor([-2., -1., -0.,  0.,  1.,  1.,  3., 10.]) tensor([-2., -1., -0.,  0.,  0.,  1.,  3., 10.]) tensor([-1., -1., -1.,  0.,  1.,  1.,  1.,  1.]) tensor([6.2500e+00, 1.0000e+00, 2.5000e-01, 0.0000e+00, 6.2500e-02, 1.0000e+00,\n        9.0000e+00, 1.0000e+02]) tensor([0, 1, 2, 3, 4, 5]) tensor([ 1, -1], dtype=torch.int32) tensor([1, 0, 1]) tensor([ 0.0000,  0.8415,  0.9093,  0.1411, -0.7568, -0.9589]) tensor([[  -inf, 0.0000, 0.6931],\n        [1.0986, 1.3863, 1.6094]]) tensor([0.0000, 0.7616, 0.9640, 0.9951, 0.9993, 0.9999], dtype=torch.float64)',
    'tensor([[0, 0, 0],\n        [0, 0, 0]]) tensor([1, 1, 1, 1, 1, 1], dtype=torch.int32) tensor([[2, 2, 2],\n        [2, 2, 2]]) torch.Size([3]) tensor([7., 7., 7., 7., 7., 7.]) tensor([1, 1, 1]) [tensor([0, 0, 0, 0, 0, 0]), tensor([0, 0, 0, 0, 0, 0])]',
    'tensor([-0., -1.,  2.,  3.]) tensor([0, 0, 3]) tensor([0.5000, 0.5000, 3.0000]) tensor([1, 0, 1]) tensor([1.0000, 2.5000]) tensor([[0, 1, 2],\n        [3, 4, 5]])',
    'tensor([0., 1., 2., 2.]) tensor([0, 0, 3]) tensor([0.5000, 0.5000, 3.0000]) tensor([-2,  0,  1]) tensor([0., 1., 1., 1.]) tensor([0., 1., 1., 1.]) tensor([1., 1., 1., 1.]) tensor([nan, 1.])',
    'tensor([3., 2., 2., 3.]) tensor([-2,  0,  1]) tensor([ True, False,  True]) tensor([False, False, False]) tensor([0., 1., 4., 9.]) tensor([0.0000, 1.0000, 1.4142, 1.7321]) tensor([0.2500, 1.0000, 8.0000]) tensor([4, 0, 9]) tensor([nan, 2.])',
    "[-1, True, 1.5, 2, 2.0, 3] [3, 2, 2.0, 1.5, True, -1] ['a', 'b', 'c'] [1, 3] [2, 1, 0] True False False True True True",
    'False True False True True False tensor([ True,  True, False]) False False True tensor([True, True, True, True, True, True]) False',
    'tensor([1., 0., nan, -0., 0., inf]) tensor([0.]) tensor([ 1., -2., nan, -0.,  0., inf]) tensor([ 0., -2., nan, -0.,  0.,  0.]) False tensor([1, 3], dtype=torch.int32) tensor([255, 255, 255], dtype=torch.uint8) tensor([0.0000, 1.0000, 0.5000]) tensor([False])',
    '[[2]] [[2], [3]] [[1]] [1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, None]',
    'tensor([  1, -24,  64,   0,   0,   0], dtype=torch.int8) tensor([255, 255, 255,   3,   4,   5], dtype=torch.uint8) tensor([1, 1, 2, 3, 4, 5], dtype=torch.uint8) tensor([0., 1., inf, inf, inf, inf]) tensor([2.5000, 2.5000, 2.5000, 3.0000, 4.0000, 5.0000]) tensor([1., inf, inf, inf, inf, inf], dtype=torch.float16) tensor([0, 1, 0, 0, 0, 0], dtype=torch.int8)',
    'tensor([ 0, -1, -1, -1, -1, -1], dtype=torch.int8) tensor([  0, -23, -22, -21, -20, -19], dtype=torch.int8) tensor([ True, False, False, False, False, False]) tensor([False, False, False, False, False, False]) tensor([False, False, False, False, False, False]) tensor([-24, -12,  -8,  -6,  -5], dtype=torch.int8) tensor([0, 0, 0, 0, 1], dtype=torch.int8) tensor([0, 0, 0, 0, 0, 0], dtype=torch.uint8) tensor([0, 1, 2, 3, 4, 5], dtype=torch.uint8) tensor([ 0, -1, -1, -1, -1, -1], dtype=torch.int8) tensor([  1, -24,  64,   0,   0,   0], dtype=torch.int8)',
    'tensor([0, 1, 2]) tensor([1, 4]) tensor([[3, 4, 5]]) tensor([0, 3]) torch.Size([1, 2, 3]) tensor([[3, 4, 5],\n        [0, 1, 2]]) tensor([[3, 4, 5]]) tensor([[ 5,  6,  5],\n        [13, 15, 15]])',
    'tensor([0, 5]) tensor([1, 4]) tensor([0, 5]) tensor([5, 3]) tensor([0, 1, 2, 3, 4, 0])',
    'tensor(5) tensor([3, 4, 5]) tensor(4) tensor([2, 5]) tensor([2, 3, 4, 5]) 2 2 torch.Size([1, 6]) tensor([2.5000]) tensor([]) tensor([], size=(0, 3), dtype=torch.int64) tensor([ -1,   7,   7,   3,   4, 105]) tensor(4) tensor([[0, 1, 2],\n        [3, 4, 9]])',
    'tensor([nan, nan, nan, nan, nan]) tensor([0., 0., nan, -0., 0.]) tensor([-0., -0., nan, -0., 0.]) tensor([2., 2., nan, 2., 2.]) tensor([1., 5., nan, -0., -0.]) tensor([0., 0., nan, 0., 0.]) tensor([300., 300.]) tensor([0.0000, 1.0000, 1.5000, 1.5000, 1.5000, 1.5000]) tensor([14.], dtype=torch.float64) tensor([nan, -3.]) tensor([-1.]) tensor([-336.], dtype=torch.bfloat16) 14.0 tensor([-0., nan, 2.]) tensor([  -inf,    nan, 0.5000]) tensor([1.0000e-03, 3.5937e+01]) tensor([-0.9604]) tensor([0.2378])',
    'tensor([-3, -2, -2, -2, -2, -1, -1, -1, -1, -1, -1]) tensor([10.0000,  8.6641,  7.3359,  6.0000,  4.6641,  3.3320,  2.0000],\n       dtype=torch.float16) tensor([ -1.0000,  15.8750,  32.7500,  49.5000,  66.0000,  83.0000, 100.0000],\n       dtype=torch.bfloat16) tensor([  0,   1,   2,   4,   5,   7,   8,  10,  11,  13,  14,  15,  17,  18,\n         20,  21,  23,  24,  26,  27,  28,  30,  31,  33,  34,  36,  37,  39,\n         40,  42,  43,  44,  46,  47,  48,  50,  51,  53,  54,  56,  57,  59,\n         60,  61,  63,  64,  66,  67,  69,  70,  72,  73,  74,  76,  77,  79,\n         80,  82,  83,  85,  86,  88,  89,  90,  92,  94,  95,  97,  98, 100],\n       dtype=torch.int8) tensor([[0., 1., 2.],\n        [3., 4., 5.]]) tensor([], dtype=torch.int64) tensor([1., 1., 2., 1., 1., 1.]) tensor([2, 2, 2], dtype=torch.int8)',
    'tensor([12576.,   -inf,    inf], dtype=torch.float16) tensor([   1., -221.,  236.], dtype=torch.float16) tensor([-392.,  540., -552.], dtype=torch.bfloat16) tensor([ 166., -231.,  235.], dtype=torch.bfloat16)',
    'tensor([0.0000, 0.0033, 0.0067], dtype=torch.bfloat16) tensor(54.2500, dtype=torch.bfloat16) tensor([0.9971, 0.9976, 0.9976, 0.9980, 0.9985, 0.9985, 0.9990, 0.9995, 0.9995,\n        1.0000], dtype=torch.float16)',
    'tensor(7.5993) tensor(7.5993) tensor(15.5000) tensor(15.5000) tensor(5.5000) tensor(0.5000) tensor(7.5993) tensor(6.) tensor(6.3424) tensor(6.7792) tensor([2.2361, 7.0711]) tensor([[3.0000, 4.1231, 5.3852]]) tensor(15.) tensor([[2.2361],\n        [7.0711]]) tensor(7.4180, dtype=torch.float16) tensor(7.4062, dtype=torch.bfloat16) tensor(7.4162, dtype=torch.float64) tensor(inf) tensor(0.) tensor(0.) tensor(1.) tensor(3.)',
    'tensor([ 0,  1,  3,  6, 10, 15]) tensor([[ 0,  1,  3],\n        [ 3,  7, 12]]) tensor([[0, 1, 2],\n        [3, 5, 7]]) tensor([ 0.,  1.,  3.,  6., 10., 15.]) tensor([0.0000, 0.3333, 1.0000, 2.0000, 3.3333, 5.0000]) tensor([1, 1, 2]) tensor([1, 0, 0]) tensor([ 1, -1]) tensor([  1.,   2.,   6.,  24., 120., 720.]) tensor([ 0,  1,  3,  6, 10, 15], dtype=torch.int32) tensor([ 0.,  1.,  3.,  6., 10., 15.], dtype=torch.float64) tensor([0.0000, 0.3340, 1.0000, 2.0000, 3.3438, 5.0000], dtype=torch.bfloat16) tensor(5) tensor([    3,    12,    60,   360,  2520, 20160])',
    'torch.return_types.sort(\nvalues=tensor([-0., 0., 1., 1., 2., 3., nan]),\nindices=tensor([5, 6, 1, 3, 2, 0, 4])) torch.return_types.sort(\nvalues=tensor([nan, 3., 2., 1., 1., -0., 0.]),\nindices=tensor([4, 0, 2, 1, 3, 5, 6])) torch.return_types.sort(\nvalues=tensor([nan, 3., 2., 1., 1., -0., 0.]),\nindices=tensor([4, 0, 2, 1, 3, 5, 6])) tensor([5, 6, 1, 3, 2, 0, 4]) tensor([4, 0, 2, 1, 3, 5, 6]) torch.return_types.sort(\nvalues=tensor([[3, 4, 5],\n        [0, 1, 2]]),\nindices=tensor([[1, 1, 1],\n        [0, 0, 0]])) torch.return_types.sort(\nvalues=tensor([False,  True,  True]),\nindices=tensor([1, 0, 2])) torch.return_types.sort(\nvalues=tensor(3.),\nindices=tensor(0)) tensor([0, 1, 2, 3, 4, 5]) tensor([[2, 1, 0],\n        [2, 1, 0]]) tensor([[1, 1, 1],\n        [0, 0, 0]])',
    'tensor([[-2, -1,  0],\n        [-5, -4, -3]]) tensor([[2, 1, 0],\n        [2, 1, 0]]) tensor([2, 3, 1, 4, 0, 5]) tensor([0.5000, 0.5000, 1.5000, 1.5000, 2.5000, 2.5000])',
    'torch.return_types.topk(\nvalues=tensor([5., 4., 3.]),\nindices=tensor([5, 4, 3])) torch.return_types.topk(\nvalues=tensor([0., 1.]),\nindices=tensor([0, 1])) torch.return_types.topk(\nvalues=tensor([[3, 4, 5]]),\nindices=tensor([[1, 1, 1]])) tensor([5., 4.]) torch.return_types.topk(\nvalues=tensor([]),\nindices=tensor([], dtype=torch.int64)) torch.return_types.topk(\nvalues=tensor(3.),\nindices=tensor(0)) torch.return_types.topk(\nvalues=tensor([-0., -1.]),\nindices=tensor([0, 1])) tensor([2, 3])',
    'tensor(55.) tensor(55) tensor(55.) tensor([[ 5, 14],\n        [14, 50]]) tensor([[ 9, 12, 15],\n        [12, 17, 22],\n        [15, 22, 29]]) tensor(55, dtype=torch.int8) tensor([[250, 188],\n        [188, 196]], dtype=torch.uint8) tensor([0.0043, 0.0116, 0.0315, 0.0858, 0.2331, 0.6337]) tensor([0.0043, 0.0116, 0.0315, 0.0858, 0.2331, 0.6337]) tensor([[0.0900, 0.2447, 0.6652],\n        [0.0900, 0.2447, 0.6652]]) tensor([[0.0474, 0.0474, 0.0474],\n        [0.9526, 0.9526, 0.9526]]) tensor([-5.4562, -4.4562, -3.4562, -2.4562, -1.4562, -0.4562]) tensor([[-2.4076, -1.4076, -0.4076],\n        [-2.4076, -1.4076, -0.4076]]) tensor([[0.0474, 0.0474, 0.0474],\n        [0.9526, 0.9526, 0.9526]], dtype=torch.float64) tensor([0.0043, 0.0116, 0.0315, 0.0858, 0.2331, 0.6337], dtype=torch.float64) tensor([0.0043, 0.0116, 0.0315, 0.0859, 0.2334, 0.6328], dtype=torch.bfloat16) tensor([]) tensor(1.)',
    '8 2 -5 8 4611686018427387904 0 -1 12 tensor([0, 0, 1, 1, 2, 2]) [4, 7, 1] tensor([ 0,  4,  8, 12, 16, 20]) tensor([-2, -1, -1,  0,  0,  1]) tensor([   0, -128,    0, -128,    0, -128], dtype=torch.int8) tensor([0, 0, 0, 0, 0, 0], dtype=torch.int8) tensor([0, 1, 2, 3, 4, 5]) tensor([                   0, -9223372036854775808,                    0,\n        -9223372036854775808,                    0, -9223372036854775808]) tensor([-1, -1, -1, -1, -1, -1]) tensor([2, 0, 2]) tensor([ 1,  2,  4,  8, 16, 32]) tensor([  0,   2,   8,  24,  64, 160]) tensor([  0,  25,  50,  75, 100, 125], dtype=torch.uint8) tensor([0, 0, 0, 0, 0, 0], dtype=torch.uint8) tensor([ 4, -8], dtype=torch.int32) tensor([ 0, -1], dtype=torch.int32)',
    'tensor([ 1,  3, 15,  5,  7, 13,  9, 11, 16,  0, 14, 12, 10,  8,  6,  4,  2]) tensor([ 8, 16, 14, 12, 10,  0,  6,  4,  2,  7,  5,  9, 11,  3, 13, 15,  1]) tensor([ 1,  3, 15,  5,  7, 13,  9, 11, 16,  0, 14, 12, 10,  8,  6,  4,  2]) tensor([ 1,  3,  5,  7,  9, 11, 13, 15,  0,  2,  4,  6,  8, 10, 12, 14, 16]) tensor([ 1, 19, 16, 13, 10,  7,  4,  5,  8, 11, 14,  2, 17, 20,  6,  9, 12,  3,\n        15, 18,  0]) tensor([ 3,  6, 18,  9,  0, 12, 15, 20,  2,  5,  8, 11, 17, 14, 10, 19, 16, 13,\n         7,  4,  1]) tensor([5, 4, 3]) tensor(14.) tensor([[ 5, 14],\n        [14, 50]]) tensor(2048., dtype=torch.float16) tensor(54.7500, dtype=torch.bfloat16) tensor(inf, dtype=torch.float16) tensor(0.) tensor([0., 0.]) tensor([0.0043, 0.0116, 0.0315, 0.0858, 0.2331, 0.6337]) tensor([ 0,  1,  3,  6, 10, 15]) tensor([5, 4])',
    '[2.0200500000000012, 64.7522] 2.0200499999999995 [[1.421284794807434], [8.046875]] [66.80966186523438] tensor(inf, dtype=torch.float64) 66.8125',
    'tensor([ 1.,  1., -1.]) [-1.0, 0.9999999403953552, 1.0, 1.0, 0.46211716532707214] [-0.999999969540041, 0.9999999444983367, 0.9999999999999996, 1.0]',
    'tensor(23984.9941) [27.92922019958496, 73.10182189941406] [10.148699760437012, 10.004024505615234, 9.884963035583496] 78.2554702758789 10437557.353917263 tensor(43., dtype=torch.bfloat16) tensor(54.1562, dtype=torch.float16) tensor(inf, dtype=torch.float16)',
    'tensor(nan) tensor(inf) 2835568.25 [7.1011811542121e-07, 3993092489216.0] [1019.3252563476562, 2781.809814453125] 2835568.224026687',
    '[2.6621494736842086, 2.716544210526316, 2.662149473684208, 2.399660000000003, 2.2668810526315775, 2.1553021052631594] [1.3675757748658757, 1.778215444389871, 1.8230533453522417, 1.7782154443898706]',
    '[-59.379058837890625, -1000.0799560546875, 2260.946533203125, -488.63299560546875, -6299.181640625, 89.97479248046875, -1397.9603271484375, -2643.99755859375, 3964.16796875, 1754.9908447265625, 1421.2340087890625, -3582.38232421875] [-289.31341552734375, -2966.865234375, -3967.97900390625, 1417.010009765625, -153.98873901367188, -3261.586181640625] [-89.03375244140625, -152.940185546875, -96.09514617919922, 49.48308181762695, 25.56157875061035, -77.14631652832031, -30.20147132873535, 66.4445571899414] [616.103766021115, -3527.0597236295, -780.5813893292725, 451.3611372487085, 3249.0161000013613, -2850.4315563831624, -232.3837317865109, -640.340382956525, -3022.817950228484, 4132.510182434128, 367.19109195547935, -2359.297715372937, 3177.844327713072, 3097.799507509897, 224.53032588708083, 4873.016160184416] [-27.12035369873047, 37.40425491333008, -652.5081176757812, 132.31961059570312, -89.1796646118164]',
]


live = torch_prints(["%s\n%s" % (SETUP, t) for _, t in CASES], timeout=300)
if live is not None:
    check("the stored torch output is what torch prints", live == EXPECTED,
          "\n".join("%r != %r" % (a, b) for a, b in zip(live, EXPECTED) if a != b))
    expected = live
else:
    expected = EXPECTED

# One shell for every case: the setup once, then each case's lines, each
# print's output cut from the transcript at its own marker.
DL_SETUP = SETUP.replace("torch.tensor", "tensor")
for (dl, _), want, (rc, out, err) in zip(CASES, expected,
                                        shells(DL_SETUP + "\n" + dl for dl, _ in CASES)):
    lines = out.rstrip("\n").split("\n")
    at = max(i for i, l in enumerate(lines) if l.startswith("  rank 0: "))
    # "value = tensor(...)", or a value print shows as Python does
    # (torch.Size([2, 3])).
    prefix = (lines[at].index(" = ") + 3 if " = " in lines[at] and not
              lines[at].startswith("  rank 0: torch.") else len("  rank 0: "))
    got = "\n".join(l[prefix:] for l in lines[at:])
    check("%s  ->  %s" % (dl.split("\n")[-1], want.split("\n")[0]), rc == 0 and got == want,
          "got %r\n%s" % (got, err))

# ---- torch's errors ----

OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to "
           "tensor refer to a single memory location. Please clone() the tensor before "
           "performing the operation.")
ERRORS = [
    # a list inside a list changed in place, in Python's words
    ("l = [[1], 2]\nl[1].append(3)", "'int' object has no attribute 'append'"),
    # the list is found before the argument runs: a refused change changes nothing
    ("l = [[1], 5, [2]]\nl[1].append(l.pop())", "'int' object has no attribute 'append'"),
    ("l = [[1]]\nl[3].append(3)", "list index out of range"),
    ("l = [t]\nl[0].append(3)", "'Tensor' object has no attribute 'append'"),
    ("l = [[1]]\nl[0][0][0].append(3)", "'int' object is not subscriptable"),
    ("l = [[1]]\nl[0.5].append(3)", "list indices must be integers or slices, not float"),
    ("l = [[1]]\n(l + l).append(1)",
     "append() changes a list in place: call it on a list variable (l.append(...)) or an item "
     "of one (l[i].append(...))"),
    # unary operators, in Python's and torch's words
    ("print(+b)", "The `+` operator, on a bool tensor is not supported."),
    ("print(+'a')", "bad operand type for unary +: 'str'"),
    ("print(-[1])", "bad operand type for unary -: 'list'"),
    ("print(~None)", "bad operand type for unary ~: 'NoneType'"),
    ("print(+zz)", "'zz' is not defined"),
    # None and ... in brackets
    ("print(m[0, 0, 0, ...])", "too many indices for tensor of dimension 2"),
    ("print(m[None, 0, 0, 0])", "too many indices for tensor of dimension 2"),
    ("x = m * 1\nx[..., 0, 0, 0] = 1", "too many indices for tensor of dimension 2"),
    ("l = [1]\nprint(l[None])", "list indices must be integers or slices, not NoneType"),
    ("print('ab'[...])", "string indices must be integers, not 'ellipsis'"),
    ("print(m[None, None, None, None, None, None, None])",
     "the result would have more than 8 dimensions"),
    ("print(torch.zeros(1, 1, 1, 1, 1, 1, 1, 1, 1))", "too many dimensions (at most 8)"),
    ("print(t.reshape(1, 1, 1, 1, 1, 1, 1, 1, 6))", "too many dimensions (at most 8)"),
    ("print(torch.tensor([[[[[[[[[1]]]]]]]]]))", "more than 8 dimensions"),
    ("print(m[[0, 1], None])", "a list or tensor index with another index in the same brackets"),
    ("x = m * 1\nx[None, 0] = x[0]", OVERLAP),
    ("x = m * 1\nx[0:1] += x[0]", OVERLAP),
    ("x = m * 1\nx[0:1].copy_(x[0])", OVERLAP),
    ("x = m.reshape(1, 2, 3)\nprint(x[..., 0, ..., 1])",
     "an index after a second ellipsis ('...') is not supported"),
    ("print(m[..., True])",
     "True or False beside other indices is not supported here (torch reads it as a mask)"),
    ("print('ab'[0, None])", "string indices must be integers, not 'tuple'"),
    ("x = m * 1\nx[:, None] += torch.ones(3, 1, dtype=torch.int64)",
     "output with shape [2, 1, 3] doesn't match the broadcast shape [2, 3, 3]"),
    ("print(m[None, [0, 1]])", "a list or tensor index with another index in the same brackets"),
    ("print(f'{t:.2f}')", "unsupported format string passed to Tensor.__format__ (a tensor of "
                          "no dimensions formats as its number: t.sum(), t[0])"),
    ("print(f'{1.5:d}')", "Unknown format code 'd' for object of type 'float'"),
    ("print(f'{3:.2q}')", "Invalid format specifier '.2q'"),
    ("x = -9223372036854775807 - 1\nprint(-x)",
     "integer overflow: -(-9223372036854775808) does not fit in 64 bits"),
    ("print t.mean()", "mean(): could not infer output dtype. Input dtype must be either a "
                       "floating point or complex dtype. Got: Long"),
    ("print f @ t", "dot : expected both vectors to have same dtype, but found Float and Long"),
    ("print m @ m", "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
    ("print t.item()", "only one element tensors can be converted to Python scalars"),
    ("print t.reshape(4, -1)", "shape '[4, -1]' is invalid for input of size 6"),
    ("print t.view(4)", "shape '[4]' is invalid for input of size 6"),
    # 9 x 6148914691236517206 wraps round to 6 in 64 bits: no shape of t
    ("print t.view(9, 6148914691236517206)",
     "shape '[9, 6148914691236517206]' is invalid for input of size 6"),
    ("print t.unsqueeze(2)",
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("print m.flatten(1, 0)", "flatten() has invalid args: start_dim cannot come after end_dim"),
    ("l = [1]\nl[3] += 1", "list index out of range"),
    ("x = (1, 2)\nx[0] = 5", "'tuple' object does not support item assignment"),
    ("x = (1, 2)\nx[5] = 5", "'tuple' object does not support item assignment"),
    # a list where a number was, either way round, and rows that differ
    ("print(tensor([3, []]))", "ragged list: every row needs the same depth"),
    ("print(tensor([[], 3]))", "ragged list: every row needs the same depth"),
    ("l = [[1], [2, 3]]\nprint(torch.tensor(l))", "ragged list: rows of 1 and 2 elements"),
    ("l = [1]\nl[0].add_(1)", "'int' object has no attribute 'add_'"),
    ("print t.sum(dim=2)",
     "Dimension out of range (expected to be in range of [-1, 0], but got 2)"),
    ("print abs(b)", "\"abs_cpu\" not implemented for 'Bool'"),
    ("print(b.floor())", "\"floor_vml_cpu\" not implemented for 'Bool'"),
    ("print(torch.where(t, t, t))",
     "where expected condition to be a boolean tensor, but got a tensor with dtype Long"),
    ("print(torch.maximum(t, 1))",
     "maximum(): argument 'other' (position 2) must be Tensor, not int"),
    ("print(t.clamp())", "torch.clamp: At least one of 'min' or 'max' must not be None"),
    ("print(torch.allclose(t, f))", "Long did not match Float"),
    ("print(torch.equal(t, 1))", "equal(): argument 'other' (position 2) must be Tensor, not int"),
    ("print(torch.allclose(f, f, rtol=-1))",
     "rtol must be greater than or equal to zero, but got -1"),
    ("print(torch.maximum(t, zz))", "'zz' is not defined"),
    ("print(torch.clamp(t, zz))", "'zz' is not defined"),
    ("print(torch.allclose(torch.ones(2), torch.ones(3)))",
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    ("print(sorted([1, 'a']))", "'<' not supported between instances of 'str' and 'int'"),
    ("print(any(3))", "'int' object is not iterable"),
    ("print(torch.where(t > 1, t, t[:2]))",
     "The size of tensor a (6) must match the size of tensor b (2) at non-singleton dimension 0"),
    ("print(torch.trunc(b))", "\"trunc_vml_cpu\" not implemented for 'Bool'"),
    ("print stack([t, t[:3]])",
     "stack expects each tensor to be equal size, but got [6] at entry 0 and [3] at entry 1"),
    ("p = split(t, [1, 4])",
     "split_with_sizes expects split_sizes to sum exactly to 6 (input tensor's size at "
     "dimension 0), but got split_sizes=[1, 4]"),
    ("print sum(3)", "sum(): argument 1 must be a tensor, not an int"),
    ("x = tensor('a')", "tensor() takes a number or a list such as [1, 2, 3], not a string"),
    ("print len(tensor(3))", "len() of a 0-d tensor"),
    ("x = int('a')", "invalid literal for int() with base 10: 'a'"),
    ("x = float(f)", "only one element tensors can be converted to Python scalars"),
    ("x = len(3)", "object of type 'int' has no len()"),
    ("x = f and 1", "Boolean value of Tensor with more than one value is ambiguous"),
    ("x = t ** -1", "Integers to negative integer powers are not allowed."),
    # a Python number out of the dtype's range is refused, as torch does
    ("x = torch.tensor([1, 300], dtype=torch.uint8)",
     "value cannot be converted to type uint8 without overflow"),
    ("x = zeros(2, dtype=int8)\nx[0] = 200", "value cannot be converted to type int8_t without overflow"),
    ("x = full((2,), 1e20, dtype=int64)", "value cannot be converted to type int64_t without overflow"),
    ("x = torch.tensor([-1.0], dtype=torch.uint8)",
     "value cannot be converted to type uint8 without overflow"),
    ("x = zeros(2, dtype=int32)\nx[0] = float('nan')",
     "value cannot be converted to type int without overflow"),
    # and where torch takes it as a scalar of the result's dtype: where's
    # values, clamp's bounds, pow's exponent (not a float32's), and the base
    # of number ** tensor (torch.tensor(number, dtype=...) first)
    ("i8 = t.to(torch.int8)\nx = torch.where(i8 > 1, i8, 128)",
     "value cannot be converted to type int8_t without overflow"),
    ("u8 = t.to(torch.uint8)\nx = torch.where(u8 > 1, -256, u8)",
     "value cannot be converted to type uint8_t without overflow"),
    ("x = torch.where(t > 1, f.half(), 70000)",
     "value cannot be converted to type at::Half without overflow"),
    ("x = torch.where(t > 1, 1e39, 2.0)", "value cannot be converted to type float without overflow"),
    ("i8 = t.to(torch.int8)\nx = i8.clamp(min=-1000)",
     "value cannot be converted to type int8_t without overflow"),
    ("i8 = t.to(torch.int8)\nx = torch.clip(i8, 0, 1000)",
     "value cannot be converted to type int8_t without overflow"),
    ("x = torch.clamp(f, max=1e40)", "value cannot be converted to type float without overflow"),
    ("i8 = t.to(torch.int8)\ni8 **= 128", "value cannot be converted to type int8_t without overflow"),
    ("u8 = t.to(torch.uint8)\nx = u8.pow(256)",
     "value cannot be converted to type uint8_t without overflow"),
    ("x = f.to(torch.bfloat16) ** 1e39",
     "value cannot be converted to type at::BFloat16 without overflow"),
    ("i8 = t.to(torch.int8)\nx = 1000 ** i8", "value cannot be converted to type int8 without overflow"),
    ("i8 = t.to(torch.int8)\nx = i8 // 256", "ZeroDivisionError"),
    ("x = t % torch.zeros(6, dtype=torch.int64)", "ZeroDivisionError"),
    ("x = torch.tensor(undefined_name)", "'undefined_name' is not defined"),
    ("x = t * 1\nx[0:3] = torch.tensor([1, 2])",
     "The expanded size of the tensor (3) must match the existing size (2) at non-singleton "
     "dimension 0.  Target sizes: [3].  Tensor sizes: [2]"),
    ("x = t.foo()", "a tensor has no method 'foo' here"),
    ("dist.foo(t)", "unknown name 'dist.foo'"),
    ("x = dist.get_rnk()", "unknown name 'dist.get_rnk'; did you mean 'dist.get_rank'?"),
    # shapes that do not broadcast are refused as torch refuses them, also
    # when they have as many elements
    ("print m + t.reshape(3, 2)",
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"),
    ("print m + t", "The size of tensor a (3) must match the size of tensor b (6) at "
                    "non-singleton dimension 1"),
    ("x = t[0:3]\nx += m", "output with shape [3] doesn't match the broadcast shape [2, 3]"),
    # attributes and conversions: what is not a dtype or a device says so
    ("x = zeros(2, dtype=t)", "dtype= takes a dtype such as torch.float32"),
    ("x = zeros(2, device=f.dtype)", "a device is 'cpu', 'cuda', 'cuda:N' or a GPU's number"),
    ("x = t.to('tpu')", "unknown device 'tpu'; devices: cpu, cuda, cuda:N"),
    ("x = t.to(float64)", "'float64' is not defined"),
    ("x = t.dim(1)", "dim() takes no arguments"),
    ("n = 3\nx = n.dtype", "'int' object has no attribute 'dtype' (it is a tensor's)"),
    ("x = t.dtype()", "'dtype' is an attribute, not a method: write x.dtype"),
    ("print(m[:, 5])", "index 5 is out of bounds for dimension 1 with size 3"),
    ("l = [1, 2]\nprint(l[:, 1])", "list indices must be integers or slices, not tuple"),
    ("l = [1, 2]\nprint(l[1,])", "list indices must be integers or slices, not tuple"),
    ("l = [1, 2]\nl[0,] = 3", "list indices must be integers or slices, not tuple"),
    ("print('ab'[0,])", "string indices must be integers, not 'tuple'"),
    ("print(t[torch.tensor(2.0)])", "tensors used as indices must be long, byte or bool tensors"),
    ("print(t[torch.tensor(2.0):])",
     "only integer tensors of a single element can be converted to an index"),
    ("l = [1, 2]\nprint(l[torch.tensor([0, 1])])",
     "only integer tensors of a single element can be converted to an index"),
    ("x = torch.tensor([True]) - 1", "Subtraction, the `-` operator, with a bool tensor is not "
     "supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator "
     "instead."),
    ("x = f - True", "Subtraction, the `-` operator, with a bool tensor is not supported."),
    # torch's words for indices that do not fit, naming the dimension of
    # the tensor indexed
    ("x = m[0, 5]", "index 5 is out of bounds for dimension 1 with size 3"),
    ("x = m[None, 0, 7]", "index 7 is out of bounds for dimension 2 with size 3"),
    ("x = t[2, 2]", "too many indices for tensor of dimension 1"),
    ("x = m[:, 1, 2]", "too many indices for tensor of dimension 2"),
    ("x = t.sum()[0]", "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
     "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"),
    ("x = t.sum()[1:]", "slice() cannot be applied to a 0-dim tensor."),
    ("n = 3\nx = n[0]", "'int' object is not subscriptable"),
    ("x = torch.arange(0, 10, 1e-300)", "invalid size, possible overflow?"),
    ("x = torch.arange(0, 10, 0)", "step must be nonzero"),
    ("x = t.split(-1)", "split expects split_size be non-negative, but got split_size=-1"),
    ("s = torch.tensor(5)\ns[[0]] = 1", "too many indices for tensor of dimension 0"),
    ("x = torch.cat([torch.zeros(0), m, torch.ones(2, 4)])",
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for "
     "tensor number 2 in the list."),
    ("x = torch.linspace(0, 1000, 3, dtype=torch.int8)",
     "value cannot be converted to type int8_t without overflow"),
    ("s = torch.tensor(5)\ns[[]] += 1", "too many indices for tensor of dimension 0"),
    ("s = torch.tensor(5)\nprint(s[[0]])", "too many indices for tensor of dimension 0"),
    # matmul's shapes before its dtypes, in torch's words for each form
    ("x = t.double() @ m.float()", "mat1 and mat2 shapes cannot be multiplied (1x6 and 2x3)"),
    ("x = m @ f", "size mismatch, got 2, 2x3,6"),
    ("x = b - b", "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
     "`^` or `logical_xor()` operator instead."),
    ("x = f * 1\nx[[0]] = torch.tensor([1])",
     "Index put requires the source and destination dtypes match, got Float for the destination "
     "and Long for the source."),
    ("x = f * 1\nx[[0]] = x[1]", OVERLAP),
    ("x = f * 1\nx[x >= 0] = x", OVERLAP),
    ("x = torch.zeros(3, dtype=torch.int8)\nx.fill_(torch.tensor(200))",
     "value cannot be converted to type int8_t without overflow"),
    ("x = torch.stack([torch.ones(2, 3), torch.ones(3)])",
     "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3] at entry 1"),
    ("x = f.add_(1)", "add_() changes its tensor in place and gives nothing here"),
    ("n = 3\nn.fill_(1)", "'int' object has no attribute 'fill_' (n is not a tensor)"),
    ("n = 3\nn.add_(1)", "'int' object has no attribute 'add_' (n is not a tensor)"),
    ("x = f * 1\nx.copy_(torch.tensor([1, 2]))",
     "The size of tensor a (6) must match the size of tensor b (2) at non-singleton dimension 0"),
    ("x = f * 1\nx.fill_(x[0:1])",
     "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions."),
    ("x = torch.zeros(6)\nx[:] = torch.ones(6, 1)",
     "expand(torch.FloatTensor{[6, 1]}, size=[6]): the number of sizes provided (1) must be "
     "greater or equal to the number of dimensions in the tensor (2)"),
    ("x = torch.zeros(6)\nx += torch.ones(1, 6)",
     "output with shape [6] doesn't match the broadcast shape [1, 6]"),
    ("x = torch.zeros(6)\nx.copy_(torch.ones(1, 6))",
     "output with shape [6] doesn't match the broadcast shape [1, 6]"),
    ("x = torch.zeros(2, 3)\nx[:] = torch.arange(6.).reshape(3, 2)",
     "The expanded size of the tensor (3) must match the existing size (2) at non-singleton "
     "dimension 1.  Target sizes: [2, 3].  Tensor sizes: [3, 2]"),
    ("x = m * 1\nx += x[None]", OVERLAP),
    ("x = m * 1\nx[0:1] = x[None, 0]", OVERLAP),
    ("f.sum().add_(1)", "add_() changes a tensor in place: call it on a variable or a slice"),
    ("x = t * 1\nx.add_(0.5)", "result type Float can't be cast to the desired output type Long"),
    ("print t.var()", "std and var only support floating point and complex dtypes"),
    ("x = torch.arange(8).reshape(2, 2, 2)\nprint(x.t())",
     "t() expects a tensor with <= 2 dimensions, but self is 3D"),
    ("print m.permute(0, 0)", "permute(): duplicate dims are not allowed."),
    # torch truncates an int arange's numbers first: a step of 0.5 is 0
    ("x = torch.arange(1, 2.5, 0.5, dtype=torch.int64)", "step must be nonzero"),
    ("x = torch.arange(5, 0)", "upper bound and larger bound inconsistent with step sign"),
    ("x = torch.arange(3, dtype=torch.bool)", "\"arange_cpu\" not implemented for 'Bool'"),
    # a write whose source is part of the memory written is refused
    ("x = t * 1\nx[1:] = x[:-1]", OVERLAP),
    ("x = t * 1\nx[1:4] += x[0:3]", OVERLAP),
    ("x = t * 1\nx[1:3].add_(x[0:2])", OVERLAP),
    ("x = t * 1\nx.mul_(x[1])", OVERLAP),
    # a shape that does not fit is said before the overlap
    ("x = t * 1\nx[1:] = x", "The expanded size of the tensor (5) must match the existing size (6)"),
    ("print(torch.round(b))", "\"round_vml_cpu\" not implemented for 'Bool'"),
    ("print(f & 1)", "\"bitwise_and_cpu\" not implemented for 'Float'"),
    ("print(~f)", "~ (operator.invert) is only implemented on integer and Boolean-type tensors"),
    ("print(1.5 & 1)", "unsupported operand type(s) for &: 'float' and 'int'"),
    ("print(t[torch.tensor([True, False])])",
     "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [6] at "
     "index 0"),
    ("print(t[[7]])", "index 7 is out of bounds for dimension 0 with size 6"),
    ("x = torch.linspace(0, 1, -1)", "number of steps must be non-negative"),
    # Python's and torch's words for the types that do not mix
    ("print('a' + t)", 'can only concatenate str (not "Tensor") to str'),
    ("print('a' < 1)", "'<' not supported between instances of 'str' and 'int'"),
    ("s = 'abc'\ns[0] = 'x'", "'str' object does not support item assignment"),
    ("l = [1, 2]\nprint(l[[0]])", "list indices must be integers or slices, not list"),
    ("print(t[torch.tensor([1.0])])", "tensors used as indices must be long, byte or bool tensors"),
    ("print(5 >> -1)", "negative shift count"),
    ("print(1 << 64)", "integer overflow (the shell's ints are 64-bit)"),
    ("print(1.0 << 1)", "unsupported operand type(s) for <<: 'float' and 'int'"),
    ("print(f << 1)", "\"lshift_cpu\" not implemented for 'Float'"),
    ("print(b >> b)", "\"rshift_cpu\" not implemented for 'Bool'"),
    ("x = t * 1\nx[x > 2].fill_(0)", "fill_() here changes a copy"),
    ("print(m[[0, 1], 1])", "a list or tensor index with another index in the same brackets"),
    ("x = t * 1\nx[x >= 0] += torch.ones(1, 6, dtype=torch.int64)",
     "output with shape [6] doesn't match the broadcast shape [1, 6]"),
    ("x = t * 1\nx[x > 2] += 0.5", "result type Float can't be cast to the desired output type Long"),
    ("print(torch.round(t, decimals=1))", "\"round_cpu\" not implemented for 'Long'"),
    # norm, cumsum, sort, topk, dot, mm and softmax, in torch's words
    ("print(t.norm())",
     "norm(): input dtype should be either floating point or complex. Got Long instead."),
    ("print(f.norm(p='nuc'))", "the nuclear norm, is not supported here"),
    ("print(f.norm(p='x'))", "only valid string values are 'fro' and 'nuc', found x"),
    ("print(f.norm(p=True))", "norm_kernel_tensor_iterator_impl expects norm to be integer or float"),
    ("print((m * 1.).norm(dim=(0, -2)))", "Expected dims to be different, got [0, -2] instead"),
    ("print(f.norm(dim=5))", "Dimension out of range (expected to be in range of [-1, 0], but got 5)"),
    ("print(f.cumsum(1))", "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("print(f.half().cumsum(0))", "\"cumsum_out_cpu\" not implemented for 'Half'"),
    ("print(f.half().cumprod(0))", "\"cumprod_out_cpu\" not implemented for 'Half'"),
    ("print(f.cumsum(dim=0, dtype=torch.bool))", "\"cumsum_out_cpu\" not implemented for 'Bool'"),
    ("print(t.cumsum())", "cumsum() missing 1 required positional argument: 'dim'"),
    ("print(t.cumsum('a'))", "cumsum(): argument 'dim' (position 1) must be int, not str"),
    ("print(f.cumsum(0, torch.float64))", "cumsum() takes at most 1 positional argument (2 given)"),
    ("print(f.topk(7))", "selected index k out of range"),
    ("print(f.topk(-1))", "selected index k out of range"),
    ("print(b.topk(1))", "\"topk_cpu\" not implemented for 'Bool'"),
    ("print(f.topk(2.0))", "topk(): argument 'k' (position 1) must be int, not float"),
    ("print(torch.topk(f, 1, 0, 1))", "topk(): argument 'largest' (position 4) must be bool, not int"),
    ("print(f.half().topk(1))", "\"topk_cpu\" not implemented for 'Half'"),
    ("print(f.topk(2, largest=1))", "topk(): argument 'largest' must be bool, not int"),
    ("print(f.topk())", "topk() missing 1 required positional arguments: \"k\""),
    ("print(f.sort(1))", "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("print(f.sort(descending=1))", "sort(): argument 'descending' must be bool, not int"),
    ("print(f.sort(reverse=True))", "sort() got an unexpected keyword argument 'reverse'"),
    ("print(f.sort(0, True, True))", "sort() takes at most 2 positional arguments (3 given)"),
    ("l = [3, 1]\nl.sort(descending=True)", "sort() of a list takes key= and reverse= only"),
    ("x = f.sort()\nprint(x.values())", "'Tensor' object is not callable"),
    ("print(f.dot(t))", "dot : expected both vectors to have same dtype, but found Float and Long"),
    ("print(m.dot(t))", "1D tensors expected, but got 2D and 1D tensors"),
    ("print(f[:3].dot(f))", "inconsistent tensor size, expected tensor [3] and src [6]"),
    ("print(f.half().dot(f.half()))", "\"dot\" not implemented for 'Half'"),
    ("print(b.dot(b))", "\"dot\" not implemented for 'Bool'"),
    ("print(f.dot())", "dot() missing 1 required positional arguments: \"tensor\""),
    ("print(m.mm(m))", "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
    ("print(t.mm(m))", "self must be a matrix"),
    ("print(m.mm(t))", "mat2 must be a matrix"),
    ("print(m.float().mm(m.T))", "expected scalar type Float but found Long"),
    ("print(m.mm(m.T.float()))", "expected scalar type Long but found Float"),
    ("print(m.mm(5))", "mm(): argument 'mat2' (position 1) must be Tensor, not int"),
    ("print(m.mm(m.T, m))", "mm() takes at most 1 positional argument (2 given)"),
    ("print(torch.dot(f, 5))", "dot(): argument 'tensor' (position 2) must be Tensor, not int"),
    ("print(m.half().mm(m.T.half()))", "\"addmm_impl_cpu_\" not implemented for 'Half'"),
    ("print(t.softmax(0))", "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    ("print(m.softmax(0))", "\"softmax_kernel_impl\" not implemented for 'Long'"),
    ("print(t.log_softmax(0))", "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    ("print(m.log_softmax(0))", "\"softmax_kernel_impl\" not implemented for 'Long'"),
    ("print(f.half().softmax(0))", "\"softmax_lastdim_kernel_impl\" not implemented for 'Half'"),
    ("print(f.softmax(0, dtype=torch.int64))",
     "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    ("print(f.softmax())", "softmax() missing 1 required positional argument: 'dim'"),
]
for (line, msg), (rc, out, err) in zip(ERRORS, shells(DL_SETUP + "\n" + l for l, _ in ERRORS)):
    check("error: %s" % line, rc == 1 and msg in err, out + err)

# ---- the tutorial's spellings at np=4 ----

# torch.distributed's one-tensor collectives, its documentation's examples
# as written (at np=4 the outputs are those of its 2-rank comments, grown).
for code, want in [
        ("tensor_out = torch.zeros(world_size * 2, dtype=torch.int64)\n"
         "tensor_in = torch.arange(2, dtype=torch.int64) + 1 + 2 * rank\n"
         "dist.all_gather_into_tensor(tensor_out, tensor_in)\nprint(tensor_out)",
         ["tensor([1, 2, 3, 4, 5, 6, 7, 8])"] * 4),
        ("tensor_out = torch.zeros(world_size * 2, dtype=torch.int64)\n"
         "tensor_in = torch.arange(2, dtype=torch.int64) + 1 + 2 * rank\n"
         "work = dist.all_gather_into_tensor(tensor_out, tensor_in, async_op=True)\n"
         "work.wait()\nprint(tensor_out)",
         ["tensor([1, 2, 3, 4, 5, 6, 7, 8])"] * 4),
        ("tensor_out = torch.zeros(2, dtype=torch.int64)\n"
         "tensor_in = torch.arange(world_size * 2, dtype=torch.int64)\n"
         "dist.reduce_scatter_tensor(tensor_out, tensor_in)\nprint(tensor_out)",
         ["tensor([0, 4])", "tensor([ 8, 12])", "tensor([16, 20])", "tensor([24, 28])"]),
        ("input = torch.arange(4) + rank * 4\noutput = torch.empty([4], dtype=torch.int64)\n"
         "dist.all_to_all_single(output, input)\nprint(output)",
         ["tensor([ 0,  4,  8, 12])", "tensor([ 1,  5,  9, 13])", "tensor([ 2,  6, 10, 14])",
          "tensor([ 3,  7, 11, 15])"]),
        # None (or []) for the split sizes is torch's "split evenly"
        ("input = torch.arange(4) + rank * 4\noutput = torch.empty([4], dtype=torch.int64)\n"
         "dist.all_to_all_single(output, input, None, [])\nprint(output)",
         ["tensor([ 0,  4,  8, 12])", "tensor([ 1,  5,  9, 13])", "tensor([ 2,  6, 10, 14])",
          "tensor([ 3,  7, 11, 15])"]),
        # its uneven example, with each rank's input and splits as its
        # comments give them, and Python's sum() of a list
        ("input = torch.arange([6, 9, 5, 7][rank]) + rank * 10\n"
         "input_splits = [[2, 2, 1, 1], [3, 2, 2, 2], [2, 1, 1, 1], [2, 2, 2, 1]][rank]\n"
         "output_splits = [[2, 3, 2, 2], [2, 2, 1, 2], [1, 2, 1, 2], [1, 2, 1, 1]][rank]\n"
         "output = torch.empty(sum(output_splits), dtype=torch.int64)\n"
         "dist.all_to_all_single(output, input, output_splits, input_splits)\nprint(output)",
         ["tensor([ 0,  1, 10, 11, 12, 20, 21, 30, 31])", "tensor([ 2,  3, 13, 14, 22, 32, 33])",
          "tensor([ 4, 15, 16, 23, 34, 35])", "tensor([ 5, 17, 18, 24, 36])"])]:
    rc, out, err = shell(["-c", code], np=4)
    lines = code.split("\n")
    call, shown = lines[-2].split("(")[0], lines[-1][len("print("):-1]
    check("%s at np=4, as torch's documentation" % call,
          rc == 0 and sorted(lines_of(out)[-4:]) ==
          sorted("rank %d: %s = %s" % (r, shown, w) for r, w in enumerate(want)), out + err)
# A script's set-up lines, which the shell's ranks have done already.
rc, out, err = shell(["-c", "dist.init_process_group('gloo', rank=rank, world_size=world_size)\n"
                            "print(dist.is_initialized(), dist.get_backend())\n"
                            "dist.destroy_process_group()"], np=2)
check("dist.init_process_group (agreeing), is_initialized, get_backend, destroy_process_group",
      rc == 0 and sorted(lines_of(out)[-2:]) == ["rank 0: True builtin", "rank 1: True builtin"],
      out + err)
for code, msg in [("dist.init_process_group(backend='nccl')",
                   "init_process_group: the ranks run on the builtin backend, not nccl; start "
                   "the shell with --backend nccl for it"),
                  ("dist.init_process_group('gloo', rank=0, world_size=2)",
                   "rank 1: column 38: init_process_group: rank= must be this rank's, 1")]:
    rc, out, err = shell(["-c", code], np=2)
    check("%s is refused in one line" % code, rc == 1 and msg in err, out + err)

# Split sizes: rows of dim 0 (a 2-D input), the output made from its
# sizes, and the mistakes torch names, each in one line.
rc, out, err = shell(["-c", "set echo off\nt = torch.arange(6).reshape(3, 2) + 10 * rank\n"
                            "dist.all_to_all_single(o, t, output_split_sizes=[1, 1] if rank == 0 "
                            "else [2, 2], input_split_sizes=[1, 2] if rank == 0 else [1, 2])\n"
                            "print(o)"], np=2)
check("all_to_all_single splits rows of a 2-D input and makes the output",
      rc == 0 and lines_of(out)[-6:] == [
          "rank 0: o = tensor([[ 0,  1],", "[10, 11]])", "rank 1: o = tensor([[ 2,  3],",
          "[ 4,  5],", "[12, 13],", "[14, 15]])"], out + err)
for code, msg in [
        ("o = torch.zeros(4, dtype=torch.int64)\ndist.all_to_all_single(o, t, [2, 2], [1, 2])",
         "Split sizes doesn't match total dim 0 size"),
        ("t = torch.arange(3)\no = torch.zeros(3, dtype=torch.int64)\n"
         "dist.all_to_all_single(o, t)", "do not split evenly"),
        ("dist.all_to_all_single(o, t, [4], [4])",
         "all_to_all_single: input_split_sizes must be a list of 2 sizes, one for each rank"),
        ("o = torch.zeros(4, dtype=torch.int64)\n"
         "dist.all_to_all_single(o, t, [2, 2], [2, 2] if rank == 0 else [1, 3])",
         "rank 1: all_to_all: split sizes (in 4, out 4) do not match the tensors (4, 4) or "
         "disagree on this rank's own chunk"),
        # on one rank alone: the shell's mismatch report names it as uneven
        ("o = torch.zeros(4, dtype=torch.int64)\n"
         "on 0: dist.all_to_all_single(o, t, [2, 2], [2, 2])",
         "rank 0   all_to_all int64 (split sizes)")]:
    rc, out, err = shell(["-c", "set echo off\nt = torch.arange(4)\n" + code], np=2)
    check("all_to_all_single refuses %s" % msg[:40], rc == 1 and msg in err, out + err)
# The tutorial's gradient averaging over a list: the loop variable is the
# list's tensor where the body changes it in place, and a rebinding is
# the variable's alone, as in Python.
rc, out, err = shell(["-c", "set echo off\n"
                      "grads = [torch.ones(2) * (rank + 1), torch.ones(3) * (rank + 1)]\n"
                      "for g in grads:\n    dist.all_reduce(g)\n    g /= 2.0\n"
                      "for g in grads:\n    g = g * 100\n"
                      "print(grads)"], np=2)
check("for g in grads: all_reduce(g); g /= size averages the list's tensors",
      rc == 0 and all("rank %d: grads = [tensor([1.5000, 1.5000]), tensor([1.5000, 1.5000, "
                      "1.5000])]" % r in lines_of(out) for r in range(2)), out + err)
# A body that binds the variable anew (however many times), replaces an
# item or binds the list anew leaves the list as Python leaves it.
rc, out, err = shell(["-c", "set echo off\ngrads = [torch.ones(2), torch.ones(2) * 2]\n"
                      "for g in grads:\n    g = g * 2\n    g = g + 1\n    g = g + 1\n"
                      "print(grads, g)\n"
                      "for g in grads:\n    if g[0] == 1:\n        grads[0] = torch.zeros(2)\n"
                      "    g += 1\nprint(grads)\n"
                      "for g in grads:\n    g += 100\n    grads = [g]\nprint(grads)"], np=1)
check("a loop's variable bound anew, a replaced item and a list bound anew are Python's",
      rc == 0 and lines_of(out) == [
          "rank 0: [tensor([1., 1.]), tensor([2., 2.])] tensor([6., 6.])",
          "rank 0: grads = [tensor([0., 0.]), tensor([3., 3.])]",
          "rank 0: grads = [tensor([103., 103.])]"], out + err)
# A list's tensor item is a collective's or a recv's tensor, written in
# the list as torch writes the tensor the list holds.
rc, out, err = shell(["-c", "set echo off\n"
                      "grads = [torch.ones(2) * (rank + 1), torch.ones(3) * (rank + 1)]\n"
                      "bufs = [torch.zeros(2), torch.zeros(2)]\n"
                      "for i in range(len(grads)):\n    dist.all_reduce(grads[i])\n"
                      "if rank == 0:\n    dist.send(grads[0], dst=1)\n"
                      "else:\n    dist.recv(bufs[1], src=0)\n"
                      "print(grads, bufs)"], np=2)
check("dist.all_reduce(grads[i]) and dist.recv(bufs[1]) write into the lists",
      rc == 0 and "rank 1: [tensor([3., 3.]), tensor([3., 3., 3.])] [tensor([0., 0.]), "
      "tensor([3., 3.])]" in lines_of(out), out + err)
rc, out, err = shell(["-c", "l = [1, 2]\ndist.all_reduce(l[0])"], np=2)
check("a list's item that is no tensor is refused in one line",
      rc == 1 and "l[0] is an int, not a tensor" in err, out + err)
# A group's rank and size, by position or by keyword.
rc, out, err = shell(["-c", "set echo off\ng = dist.new_group([1, 2])\n"
                      "print(dist.get_rank(g), dist.get_world_size(group=g))"], np=3)
check("get_rank(group) and get_world_size(group=) are the group's",
      rc == 0 and sorted(lines_of(out)) == ["rank 0: -1 -1", "rank 1: 0 2", "rank 2: 1 2"],
      out + err)
# async_op=True on a collective that fills a list: it runs whole at the
# call and its handle is finished (it used to fill the list and then fail
# the line for want of a handle).
rc, out, err = shell(["-c", "set echo off\nt = torch.ones(1) * rank\n"
                      "out = [torch.zeros(1), torch.zeros(1)]\n"
                      "w = dist.all_gather(out, t, async_op=True)\nw.wait()\nprint(out, w)"], np=2)
check("all_gather with async_op=True gives a finished handle",
      rc == 0 and "rank 1: [tensor([0.]), tensor([1.])] <Work>" in lines_of(out), out + err)
# dist.ReduceOp.X as a value: bound to a variable, in a list, compared,
# printed, and taken back by op=.
rc, out, err = shell(["-c", "set echo off\nop = dist.ReduceOp.MAX\n"
                      "t = torch.ones(1) * (rank + 1)\ndist.all_reduce(t, op=op)\n"
                      "for o in [dist.ReduceOp.SUM, dist.ReduceOp.MIN]:\n"
                      "    x = torch.ones(1) * (rank + 1)\n    dist.all_reduce(x, op=o)\n"
                      "    print(o, x, o == dist.ReduceOp.SUM)\nprint(t)"], np=2)
check("a ReduceOp is a value op= takes back",
      rc == 0 and "rank 1: ReduceOp.SUM tensor([3.]) True" in lines_of(out) and
      "rank 0: ReduceOp.MIN tensor([1.]) False" in lines_of(out) and
      "rank 0: t = tensor([2.])" in lines_of(out), out + err)
rc, out, err = shell(["-c", "set echo off\nMAX = 5\nop = dist.ReduceOp.MAX\n"
                      "print(op, [dist.ReduceOp.PRODUCT])\n"
                      "for max in [dist.ReduceOp.SUM]:\n    t = torch.ones(1) * (rank + 1)\n"
                      "    dist.all_reduce(t, op=max)\nprint(t)"], np=2)
check("a variable does not hide dist.ReduceOp.MAX, and one holding an op is that op",
      rc == 0 and "rank 0: ReduceOp.MAX [ReduceOp.PRODUCT]" in lines_of(out) and
      "rank 0: t = tensor([3.])" in lines_of(out), out + err)
rc, out, err = shell(["-c", "print(SUM)"], np=1)
check("an op's name alone is no value", rc == 1 and "'SUM' is not defined" in err, out + err)
rc, out, err = shell(["-c", "t = torch.ones(1)\ndist.all_reduce(t, op=3)"], np=2)
check("op= of a number is refused in one line",
      rc == 1 and "op= takes a dist.ReduceOp (ReduceOp.SUM, ...), not int" in err, out + err)
# Sizes each rank finds fine alone but that do not pair up across ranks:
# refused on every rank before anything moves, naming the pair, at once
# (not after a timeout while one rank waits for a message never sent).
rc, out, err = shell(["--timeout", "20", "-c",
                      "set echo off\nins = [1, 1, 2] if rank == 1 else [1, 1, 1]\n"
                      "t = torch.arange(sum(ins))\no = torch.zeros(3, dtype=torch.int64)\n"
                      "dist.all_to_all_single(o, t, [1, 1, 1], ins)"], np=3)
check("all_to_all_single split sizes that do not pair up are refused on every rank, naming them",
      rc == 1 and "the split sizes do not pair up; nothing was sent" in err and
      "rank 1 sends 2 elements to rank 2, which expects 1 from it" in err and
      "timed out" not in err, out + err)
rc, out, err = shell(["-c", "o = zeros(3, dtype=int64); x = arange(2)\n"
                            "dist.all_gather_into_tensor(o, x)"], np=2)
check("all_gather_into_tensor into a tensor of the wrong size says so",
      rc == 1 and "the output must be 4 elements of int64 on the input's device (world size 2 "
      "times the input), not 3 of int64" in err, out + err)


rc, out, err = shell(["-c", "t = torch.arange(2) + 1 + 2*dist.get_rank()\n"
                            "dist.all_reduce(t, op=dist.ReduceOp.SUM)\n"
                            "print t"], np=4)
check("dist.all_reduce(t, op=dist.ReduceOp.SUM) at np=4",
      rc == 0 and all("rank %d: t = tensor([16, 20])" % r in lines_of(out)[-4:]
                      for r in range(4)), out + err)

rc, out, err = shell(["-c", "t = torch.zeros(2, dtype=torch.int64) + dist.get_world_size()\n"
                            "if dist.get_rank() == 0:\n"
                            "    t += 1\n"
                            "    dist.send(tensor=t, dst=1)\n"
                            "elif dist.get_rank() == 1:\n"
                            "    dist.recv(tensor=t, src=0)\n"
                            "dist.broadcast(t, 1)\n"
                            "dist.all_reduce(t, op=ReduceOp.MAX)\n"
                            "print t"], np=4)
check("dist.send / dist.recv (tensor=) and a positional src at np=4",
      rc == 0 and all("rank %d: t = tensor([5, 5])" % r in lines_of(out)[-4:]
                      for r in range(4)), out + err)

rc, out, err = shell(["-c", "t = torch.arange(2) + 10*rank\n"
                            "dist.all_gather(tensor_list=out, tensor=t)\n"
                            "h = dist.all_reduce(t, async_op=True); h.wait()"], np=2)
check("dist.all_gather(tensor_list=out, tensor=t) makes out",
      "rank 1: out = [tensor([0, 1]), tensor([10, 11])]" in lines_of(out), out + err)

# reduce_scatter and all_to_all make their output, in both of torch's forms.
rc, out, err = shell(["-c", "t = arange(8) + 10*rank\n"
                            "dist.reduce_scatter(out, t)\n"
                            "x = [arange(2) + rank, arange(2) + 10, arange(2), arange(2)]\n"
                            "dist.reduce_scatter(o2, x, op=dist.ReduceOp.SUM)\n"
                            "dist.all_to_all(outs, x)\n"
                            "all_to_all a2 t"], np=4)
got = lines_of(out)
check("reduce_scatter(out, t) makes out",
      "rank 0: out = tensor([60, 64])" in got and "rank 3: out = tensor([84, 88])" in got,
      out + err)
check("reduce_scatter(out, input_list) makes out",
      "rank 0: o2 = tensor([ 6, 10])" in got and "rank 1: o2 = tensor([40, 44])" in got,
      out + err)
check("all_to_all(output_list, input_list) makes the list",
      "rank 0: outs = [tensor([0, 1]), tensor([1, 2]), tensor([2, 3]), tensor([3, 4])]" in got
      and "rank 1: outs = [tensor([10, 11]), tensor([10, 11]), tensor([10, 11]), "
          "tensor([10, 11])]" in got, out + err)
check("all_to_all OUT IN makes OUT like IN",
      "rank 0: a2 = tensor([ 0,  1, 10, 11, 20, 21, 30, 31])" in got, out + err)

# A list method finds its list before its argument runs, as Python does: a
# refused change leaves the list as it was (the pop did not run).
rc, out, err = shell(["-k", "-c", "l = [[1], 5, [2]]\nl[1].append(l.pop())\nprint(l)"])
check("a refused l[i].append(l.pop()) leaves l as it was",
      "rank 0: [[1], 5, [2]]" in lines_of(out), out + err)

# `tensors` names every shape whole, however long (8 dimensions of 19
# digits each).
rc, out, err = shell(["-c", "q = torch.zeros(0).reshape(0, 10**18, 10**18, 10**18, 10**18, "
                            "10**18, 10**18, 10**18)\ntensors"])
check("tensors shows an 8-dimensional shape whole",
      "rank 0: q: float32 [0" + ", 1000000000000000000" * 7 + "]" in lines_of(out), out + err)

# A float sum adds in torch's order (its CPU kernel's lanes and cascade),
# so a tutorial's loss prints torch's digits. The expected lines are what
# torch 1.13 printed for the same code.
rc, out, err = shell(["-c", "set echo off\nw = torch.tensor(0.0); X = torch.tensor([1., 2., 3., 4.])\n"
                            "Y = 2 * X\nfor epoch in range(5):\n    y_pred = w * X\n"
                            "    l = ((y_pred - Y)**2).mean()\n"
                            "    dw = (2 * X * (y_pred - Y)).mean()\n    w = w - 0.01 * dw\n"
                            "    print(f'epoch {epoch+1}: w = {w:.3f}, loss = {l:.8f}')\n"
                            "torch.manual_seed(5)\n"
                            "print(torch.rand(5).sum().item(), torch.full((10,), 0.1).sum(), "
                            "torch.tensor([1e8, 1., -1e8]).sum())\n"
                            "torch.manual_seed(0)\nx = torch.randn(3, 300)\n"
                            "print(x.sum(-1).tolist(), x.mean().item(), x.double().sum().item())"])
check("float sums and means in torch's order: a tutorial's loss to 8 digits, and sums of "
      "5, 10, 3 and 900 elements",
      rc == 0 and lines_of(out) == [
          "rank 0: epoch 1: w = 0.300, loss = 30.00000000",
          "rank 0: epoch 2: w = 0.555, loss = 21.67499924",
          "rank 0: epoch 3: w = 0.772, loss = 15.66018772",
          "rank 0: epoch 4: w = 0.956, loss = 11.31448650",
          "rank 0: epoch 5: w = 1.113, loss = 8.17471695",
          "rank 0: 3.603862762451172 tensor(1.0000) tensor(0.)",
          "rank 0: [5.1532063484191895, 29.285924911499023, -5.418539524078369] "
          "0.03224510699510574 29.020595822657924"], out + err)

# Python's sum, max and min walk a tensor's rows; torch's reduce it. The
# expected lines are what torch 1.13 printed for the same code.
rc, out, err = shell(["-c", "set echo off\nm = torch.tensor([[1, 2], [3, 4]])\n"
                            "print(sum(m), torch.sum(m), m.sum())\n"
                            "v = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])\n"
                            "print(sum(v).item(), torch.sum(v).item(), max(v), min(v), "
                            "torch.max(m), m.max())\n"
                            "print(torch.all(torch.tensor([True, False])), "
                            "torch.any(torch.tensor([0, 2])), torch.tensor([1., 2.]).all(), "
                            "all(torch.tensor([1, 0])))\n"
                            "print(sum(torch.tensor([True, True, False])), "
                            "max(torch.tensor([[5], [7]])), sum(torch.zeros(0)))\n"
                            "print(max(torch.tensor(0.5), torch.tensor(0.7)), "
                            "min(torch.tensor(2.), 1.0), max(torch.tensor(3), 2))"])
check("Python's sum, max and min of a tensor walk its rows; torch's reduce it",
      rc == 0 and lines_of(out) == [
          "rank 0: tensor([4, 6]) tensor(10) tensor(10)",
          "rank 0: 4.5 4.5 tensor(0.9000) tensor(0.1000) tensor(4) tensor(4)",
          "rank 0: tensor(False) tensor(True) tensor(True) False",
          "rank 0: tensor(2) tensor([7]) 0",
          "rank 0: tensor(0.7000) 1.0 tensor(3)"], out + err)
for code, msg in [("max(torch.ones(2, 2))",
                   "Boolean value of Tensor with more than one value is ambiguous"),
                  ("sum(torch.tensor(1.))", "iteration over a 0-d tensor"),
                  ("min(torch.zeros(0))", "min() arg is an empty sequence"),
                  ("torch.len([1])", "unknown name 'torch.len'")]:
    rc, out, err = shell(["-c", "x = %s" % code])
    check("%s: %s" % (code, msg), rc == 1 and msg in err, err)

# The operators by name; the expected lines are torch 1.13's.
rc, out, err = shell(["-c", "set echo off\nt = torch.tensor([1., 2., 3., 4.])\n"
                            "i = torch.tensor([5, -7, 9])\n"
                            "print(t.add(1), torch.add(t, t, alpha=2), t.sub(1, alpha=0.5), "
                            "torch.mul(t, t), t.div(2))\n"
                            "print(i.div(2), i.floor_divide(2), i.remainder(4), torch.neg(i), "
                            "i.eq(5), t.gt(2), torch.le(t, 2))\n"
                            "print(t.detach(), t.reshape(2, 2).T.contiguous().tolist())"])
check("add, sub, mul, div, floor_divide, remainder, neg and the comparisons by name",
      rc == 0 and lines_of(out) == [
          "rank 0: tensor([2., 3., 4., 5.]) tensor([ 3.,  6.,  9., 12.]) "
          "tensor([0.5000, 1.5000, 2.5000, 3.5000]) tensor([ 1.,  4.,  9., 16.]) "
          "tensor([0.5000, 1.0000, 1.5000, 2.0000])",
          "rank 0: tensor([ 2.5000, -3.5000,  4.5000]) tensor([ 2, -4,  4]) tensor([1, 1, 1]) "
          "tensor([-5,  7, -9]) tensor([ True, False, False]) tensor([False, False,  True,  True]) "
          "tensor([ True,  True, False, False])",
          "rank 0: tensor([1., 2., 3., 4.]) [[1.0, 3.0], [2.0, 4.0]]"], out + err)

# add and sub with alpha= of two tensors: one rounding, as torch's kernel
# fuses the multiply and the add (float32 and float64; float16 computes as
# before). The expected lines are torch 1.13's (print(...tolist())).
ALPHA_LINES = [
    "torch.manual_seed(0); a = torch.rand(20); b = torch.rand(20); print(torch.add(a, b, alpha=0.1).tolist())",
    "torch.manual_seed(1); a = torch.rand(20); b = torch.rand(20); print(a.sub(b, alpha=3.7).tolist())",
    "torch.manual_seed(2); a = torch.rand(5, dtype=torch.float64); b = torch.rand(5, dtype=torch.float64); print(a.add(b, alpha=0.3).tolist())",
    "torch.manual_seed(3); a = torch.rand(2, 9); b = torch.rand(9); print(torch.add(a, b, alpha=0.7).tolist())",
    "torch.manual_seed(4); a = torch.rand(9, dtype=torch.float16); b = torch.rand(9, dtype=torch.float16); print(torch.add(a, b, alpha=0.3).tolist())",
]
ALPHA_TORCH = [
    "[0.5644174218177795, 0.8597412109375, 0.1281874179840088, 0.2194460779428482, 0.34936365485191345, 0.6893693804740906, 0.5853672027587891, 0.9000612497329712, 0.474151074886322, 0.6696479916572571, 0.3794034719467163, 0.4949173331260681, 0.03991677239537239, 0.19584229588508606, 0.30895641446113586, 0.521693766117096, 0.7184805870056152, 0.892991304397583, 0.23334038257598877, 0.3565022051334381]",
    "[-0.40341687202453613, -0.4533606469631195, -1.1368417739868164, -0.31733524799346924, -1.2278887033462524, -1.1387224197387695, -2.555699110031128, -2.1011710166931152, 0.5279775857925415, -2.558074951171875, -1.7281427383422852, -3.0801618099212646, -2.3884966373443604, 0.14075423777103424, 0.3725411593914032, -0.5026992559432983, -2.9020347595214844, -1.0438448190689087, -1.704641580581665, -0.33468881249427795]",
    "[1.0752742917108937, 0.1330373006819107, 0.7888353746966238, 0.7480952884206155, 1.0519364883221414]",
    "[[0.5973865389823914, 0.7179687023162842, 0.7396597862243652, 0.17728523910045624, 1.1361278295516968, 0.068592369556427, 0.8984798789024353, 0.8751000165939331, 0.7993425130844116], [1.4809796810150146, 1.063430666923523, 1.2533079385757446, 0.3001713156700134, 1.0659823417663574, 0.06265300512313843, 0.5860192775726318, 0.3070058524608612, 1.1541041135787964]]",
    "[0.6171875, 0.2435302734375, 0.476318359375, 0.6240234375, 0.9541015625, 0.41455078125, 0.9130859375, 0.36181640625, 0.59521484375]",
]
rc, out, err = shell(["-c", "set echo off\n" + "\n".join(ALPHA_LINES)])
check("add and sub with alpha= round once, as torch's",
      rc == 0 and lines_of(out) == ["rank 0: " + l for l in ALPHA_TORCH], out + err)
# The in-place add_ and sub_ with alpha= of a whole tensor (an SGD step's
# p.add_(g, alpha=-lr)) too; the expected lines are torch 1.13's.
ALPHA_INPLACE_LINES = [
    "torch.manual_seed(0); p = torch.rand(20); g = torch.rand(20); p.add_(g, alpha=-0.1); print(p.tolist())",
    "torch.manual_seed(1); p = torch.rand(7, dtype=torch.float64); g = torch.rand(7, dtype=torch.float64); p.sub_(g, alpha=0.3); print(p.tolist())",
    "torch.manual_seed(2); p = torch.rand(2, 9); g = torch.rand(2, 9); lr = 0.7; p.add_(g, alpha=-lr); print(p.tolist())",
    "i = torch.tensor([1, 2, 3]); i.add_(torch.tensor([1, 1, 1]), alpha=2); print(i.tolist())",
]
ALPHA_INPLACE_TORCH = [
    "[0.4280957281589508, 0.6767023801803589, 0.048767440021038055, 0.044614896178245544, 0.26548197865486145, 0.5787879824638367, 0.39481958746910095, 0.8928282260894775, 0.43710488080978394, 0.5949645638465881, 0.31838345527648926, 0.3085172772407532, 0.004734736401587725, 0.14187559485435486, 0.2788204848766327, 0.515349805355072, 0.6768546104431152, 0.7070314884185791, 0.08871854096651077, 0.2080349624156952]",
    "[-0.1514563101477642, 0.050621629665202825, 0.08525232039984337, 0.02398667576716495, 0.4572067636129987, -0.10601798842198466, 0.3455595584094878]",
    "[[0.3992471396923065, -0.3055884540081024, 0.6299314498901367, 0.14823248982429504, 0.3913312554359436, 0.020778076723217964, 0.1258070021867752, -0.34639260172843933, 0.28095850348472595], [-0.09669093787670135, 0.4140905737876892, 0.3532707691192627, 0.35799238085746765, 0.7859922647476196, 0.10099628567695618, 0.12698812782764435, 0.34435558319091797, 0.015470615588128567]]",
    "[3, 4, 5]",
]
for code, msg in [
        ("ia = torch.tensor([1, 2])\nia.add_(torch.tensor([1, 1]), alpha=0.5)",
         "For integral input tensors, argument alpha must not be a floating point number."),
        ("a = torch.tensor([1., 2.])\nb = torch.add(a, a, alpha=True)",
         "Boolean alpha only supported for Boolean results."),
        ("a = torch.tensor([1., 2.])\na.add_(a, alpha=True)",
         "Boolean alpha only supported for Boolean results.")]:
    rc, out, err = shell(["-c", code])
    check("alpha: " + msg, rc == 1 and msg in err, out + err)
rc, out, err = shell(["-c", "set echo off\n" + "\n".join(ALPHA_INPLACE_LINES)])
check("add_ and sub_ with alpha= round once, as torch's",
      rc == 0 and lines_of(out) == ["rank 0: " + l for l in ALPHA_INPLACE_TORCH], out + err)

# 200 sums and means of float32, float64, float16 and bfloat16 tensors,
# whole and along the last dimension, of 1 to 20000 elements, against
# what torch printed for them (torch_sums.py wrote torch_sums.json): the
# same bits, in torch's order of additions.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_sums.json")) as f:
    sums = json.load(f)["cases"]
rc, out, err = shell(["-c", "set echo off\n" + "\n".join(c["line"] for c in sums)])
got = [l[len("rank 0: "):] for l in lines_of(out)]
got = [g[len("value = "):] if g.startswith("value = ") else g for g in got]
wrong = [(c["line"], g, c["want"]) for c, g in zip(sums, got) if g != c["want"]]
check("200 float sums and means bit for bit as torch's (torch_sums.json)",
      rc == 0 and len(got) == len(sums) and not wrong, "%d wrong, first: %r\n%s" %
      (len(wrong), wrong[:1], err[-500:]))

# Python's sum with a start; torch's keywords checked under torch.'s name;
# a mean divides by n as the dtype holds it; neg keeps -0.0; uint8's all is
# uint8 (all as torch 1.13 printed them).
rc, out, err = shell(["-c", "set echo off\nt = torch.tensor([[1., 5.], [3., 2.]])\n"
                            "print(sum(t, 1), sum(torch.tensor([1, 2]), 0.5), max(1, 2.5, "
                            "torch.tensor([0.5])))\n"
                            "print(torch.ones(257, dtype=torch.bfloat16).mean(), "
                            "torch.neg(torch.tensor([0.])), "
                            "torch.all(torch.tensor([1, 0], dtype=torch.uint8)))"])
check("sum(t, start), bfloat16 mean of 257, neg(0.), all of uint8",
      rc == 0 and lines_of(out) == [
          "rank 0: tensor([5., 8.]) tensor(3.5000) 2.5",
          "rank 0: tensor(1., dtype=torch.bfloat16) tensor([-0.]) tensor(0, dtype=torch.uint8)"],
      out + err)
rc, out, err = shell(["-c", "x = torch.sum(torch.ones(2), axis=0)"])
check("torch.sum's keywords are sum's", rc == 1 and "unknown keyword 'axis' for torch.sum()" in err,
      err)

# type(x) as Python prints it (the expected lines are Python's).
rc, out, err = shell(["-c", "set echo off\nt = torch.ones(2)\n"
                            "print(type(t), type(1), type(1.5), type(True), type('s'), type([1]), "
                            "type((1,)), type({}), type(None), type(t.shape), type(t.dtype))\n"
                            "print([type(1)], str(type(t)))"])
check("type(x) prints Python's class names",
      rc == 0 and lines_of(out) == [
          "rank 0: <class 'torch.Tensor'> <class 'int'> <class 'float'> <class 'bool'> "
          "<class 'str'> <class 'list'> <class 'tuple'> <class 'dict'> <class 'NoneType'> "
          "<class 'torch.Size'> <class 'torch.dtype'>",
          "rank 0: [<class 'int'>] <class 'torch.Tensor'>"], out + err)

# A torch.Size sliced, extended or repeated stays one, as torch's.
rc, out, err = shell(["-c", "set echo off\ns = torch.ones(2, 3).shape\n"
                            "print((1,) + s, s + (1,), s * 2, s[1:], s[::-1], s.numel())"])
check("a torch.Size's slices, sums and products are torch.Sizes",
      rc == 0 and lines_of(out) == [
          "rank 0: (1, 2, 3) torch.Size([2, 3, 1]) torch.Size([2, 3, 2, 3]) torch.Size([3]) "
          "torch.Size([3, 2]) 6"], out + err)

# Python's math module, as a tutorial imports it; the expected lines are
# what Python printed for the same code.
rc, out, err = shell(["-c", "set echo off\nimport math\n"
                            "print(math.sqrt(2), math.pi, math.e, math.tau)\n"
                            "print(math.exp(1.0), math.log(10), math.log(8, 2), math.log2(8))\n"
                            "print(math.cos(0), math.atan2(1, 1), math.hypot(3, 4))\n"
                            "print(math.ceil(2.5), math.floor(-2.5), math.trunc(-2.7), math.inf, "
                            "-math.inf, math.nan)\n"
                            "print(math.isnan(math.nan), math.pow(2, 10), math.fabs(-3), "
                            "math.degrees(math.pi), math.sqrt(torch.tensor([4.0])))\n"
                            "print(f'{math.pi:.3f}', math.exp(-0.5 * 2 ** 2) / math.sqrt(2 * math.pi))"])
check("math's functions and constants print what Python prints",
      rc == 0 and lines_of(out) == [
          "rank 0: 1.4142135623730951 3.141592653589793 2.718281828459045 6.283185307179586",
          "rank 0: 2.718281828459045 2.302585092994046 3.0 3.0",
          "rank 0: 1.0 0.7853981633974483 5.0",
          "rank 0: 3 -3 -2 inf -inf nan",
          "rank 0: True 1024.0 3.0 180.0 2.0",
          "rank 0: 3.142 0.05399096651318806"], out + err)
for code, msg in [("math.sqrt(-1)", "math domain error"), ("math.log(0)", "math domain error"),
                  ("math.exp(1000)", "math range error"),
                  ("math.sqrt(torch.ones(2))",
                   "only one element tensors can be converted to Python scalars"),
                  ("math.frexp(1.0)", "math.frexp is not supported here")]:
    rc, out, err = shell(["-c", "x = %s" % code])
    check("%s: %s" % (code, msg), rc == 1 and msg in err and err.count("\n") == 2, err)

print("math: %d failed" % len(failures))
sys.exit(1 if failures else 0)
