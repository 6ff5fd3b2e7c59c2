#!/usr/bin/env python3
"""torch's seeded random numbers through the real shell: manual_seed, rand,
randn and randint print exactly what torch prints for the same seed, sizes
and dtypes, stream continuations included; every rank has its own stream;
seed= takes any expression (at np=4, seed=rank gives every rank different
data: once every rank got seed 0); bad seeds and ranges fail in one line.

What torch prints comes from torch_random.py: run live when a Python with
torch is found (DISTLAB_TORCH_PYTHON, else this Python or /usr/bin/python3;
DISTLAB_TORCH_PYTHON= empty asks none), else from the values it wrote to
torch_random.json. torch's two float32
randn kernels are both checked where this CPU runs both (AVX2 and FMA):
distlab follows ATEN_CPU_CAPABILITY as torch does.

usage: test_random.py DISTLAB
"""
import contextlib
import io
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from dlcheck import check, failures  # noqa: E402
import torch_random  # noqa: E402  (the cases; torch itself is not needed here)

EXE = sys.argv[1]


def shell(line, np=1, env=None):
    p = subprocess.run([EXE, "shell", "--np", str(np), "--timeout", "20", "-c", line],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr


def shown(out, rank, names):
    """What rank printed for each of names, in order, without the "rank R:
    NAME = " prefix (and its width on continuation lines): torch's text."""
    texts = []
    lines = out.splitlines()
    i = 0
    for name in names:
        prefix = "  rank %d: %s = " % (rank, name)
        while i < len(lines) and not lines[i].startswith(prefix):
            i += 1
        if i == len(lines):
            texts.append(None)
            continue
        text = [lines[i][len(prefix):]]
        i += 1
        while i < len(lines) and lines[i].startswith(" " * len(prefix)):
            text.append(lines[i][len(prefix):])
            i += 1
        texts.append("\n".join(text))
    return texts


def torch_python():
    # DISTLAB_TORCH_PYTHON names the Python to ask; set but empty, none is
    # asked and the checked-in values are used.
    if "DISTLAB_TORCH_PYTHON" in os.environ:
        candidates = [os.environ["DISTLAB_TORCH_PYTHON"]]
    else:
        candidates = [sys.executable, "/usr/bin/python3"]
    for py in candidates:
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import torch"], capture_output=True).returncode == 0:
            return py
    return None


def cpu_has_avx2_fma():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line.split()
                    return "avx2" in flags and "fma" in flags
    except OSError:
        pass
    return False


# ---- what torch prints ----

py = torch_python()
with open(os.path.join(HERE, "torch_random.json")) as f:
    stored = json.load(f)
if py is not None:
    expected = torch_random.generate(py)
    print("expected values from torch %s (%s)" % (expected["torch"], py))
else:
    expected = stored
    print("expected values from torch_random.json (torch %s); no torch here" % stored["torch"])

# The checked-in file holds the cases this script runs.
defined = [(n, np_, line, names) for n, np_, line, names, _ in torch_random.CASES]
recorded = [(c["name"], c["np"], c["line"], c["names"]) for c in stored["cases"]]
check("torch_random.json holds the cases of torch_random.py (else regenerate it)",
      defined == recorded)
if py is not None and expected["torch"] == stored["torch"]:
    check("torch_random.json agrees with this torch", expected["cases"] == stored["cases"],
          "regenerate it: python3 tests/integration/torch_random.py --out "
          "tests/integration/torch_random.json")

# ---- every case, under each of torch's kernels this CPU can run ----

kernels = ["default"] + (["avx2"] if cpu_has_avx2_fma() else [])
for case in expected["cases"]:
    for kernel in kernels:
        want = case.get("torch") or case[kernel]
        if "torch" in case and kernel != kernels[0]:
            continue  # the kernels agree: once is enough
        rc, out, err = shell(case["line"], np=case["np"], env={"ATEN_CPU_CAPABILITY": kernel})
        got = [shown(out, r, case["names"]) for r in range(case["np"])]
        label = case["name"] + ("" if "torch" in case else " (%s kernel)" % kernel)
        detail = "line: %s\n" % case["line"]
        for r in range(case["np"]):
            for name, g, w in zip(case["names"], got[r], want[r]):
                if g != w:
                    detail += "rank %d %s:\n  distlab: %s\n  torch:   %s\n" % (
                        r, name, g.replace("\n", "\n           ") if g else g,
                        w.replace("\n", "\n           "))
        check(label, rc == 0 and got == want, detail + out + err)

# ---- the ranks' streams ----

# The regression: seed=rank once read only literal seeds, so every rank got
# seed 0 and the same data.
rc, out, err = shell("t = rand(3, seed=rank)", np=4)
rows = [shown(out, r, ["t"])[0] for r in range(4)]
check("seed=rank gives every rank different data",
      rc == 0 and None not in rows and len(set(rows)) == 4, out + err)
rc, out, err = shell("manual_seed(rank); a = rand(3); b = rand(3, seed=rank)", np=4)
check("seed=rank gives what manual_seed(rank) gives",
      rc == 0 and all(shown(out, r, ["a"]) == shown(out, r, ["b"]) for r in range(4)), out + err)

# Each rank continues its own stream: a draw on rank 0 alone leaves rank 1's.
rc, out, err = shell("manual_seed(1); on 0: a = rand(2); on 0-1: t = rand(2)", np=2)
t0, t1 = shown(out, 0, ["t"])[0], shown(out, 1, ["t"])[0]
check("a rank's draw moves its own stream only",
      rc == 0 and t0 is not None and t1 is not None and t0 != t1, out + err)

# respawn starts fresh generators, seeded with the ranks again.
p = subprocess.run([EXE, "shell", "--np", "1", "--timeout", "20"],
                   input="manual_seed(5); a = rand(2)\nrespawn\nb = rand(2)\nc = rand(2, seed=0)\n",
                   capture_output=True, text=True, timeout=60)
check("respawn: the generator starts again from the rank's seed",
      p.returncode == 0 and shown(p.stdout, 0, ["b"]) == shown(p.stdout, 0, ["c"]),
      p.stdout + p.stderr)

# ---- errors: one line each, naming the column ----

for line, msg in [
    ("t = rand(3, seed=1.5)", "column 18: seed= takes an integer, not a float"),
    ("t = rand(3, seed=zeros(1))", "column 18: seed= takes an integer, not a tensor"),
    ("t = rand(3, seed=nope)", "column 18: 'nope' is not defined"),
    ("manual_seed(0.5)", "column 13: manual_seed takes an integer, not a float"),
    ("manual_seed()", "column 1: manual_seed takes one seed, e.g. manual_seed(42)"),
    ("t = randint(10, 3)",
     "randint: size must be a tuple or list of integers, such as (3,) or (2, 3)"),
    ("t = randint(5, 5, (2,))", "randint: low must be less than high, but got low=5 >= high=5"),
    ("t = randint(0, 300, (2,), dtype=uint8)", "randint: high - 1 = 299 is out of bounds for uint8"),
    ("t = randn(2, dtype=int64)", "randn makes float32 or float64, not int64"),
    ("t = rand(2, dtype=int32)", "rand makes float16, bfloat16, float32 or float64, not int32"),
    # randperm: torch's words where the dtype cannot hold n - 1.
    ("t = randperm(300, dtype=int8)",
     "randperm: value cannot be converted to type int8_t without overflow"),
    ("t = randperm(257, dtype=uint8)",
     "randperm: value cannot be converted to type uint8_t without overflow"),
    ("t = randperm(2050, dtype=float16)",
     "randperm: n cannot be greater than 2049 for Half type."),
    ("t = randperm(5, dtype=bool)", "randperm: \"randperm\" not implemented for 'Bool'"),
    ("t = randperm(-1)", "column 5: randperm: n must be a non-negative integer, not a negative one"),
    ("t = randperm(2.5)", "column 5: randperm: n must be a non-negative integer, not a float"),
    ("t = randperm(3, n=3)", "column 5: randperm takes one argument, n, e.g. randperm(5)"),
]:
    rc, out, err = shell(line)
    lines = [l for l in err.splitlines() if l.startswith("distlab: rank 0:")]
    check("error: " + line, rc == 1 and len(lines) == 1 and lines[0].endswith(msg), out + err)

# rand_like and randn_like draw what rand and randn of the shape draw; the
# expected lists are torch 1.13's for the same seed.
rc, out, err = shell("set echo off; torch.manual_seed(0); x = torch.ones(2, 3)\n"
                     "print(torch.rand_like(x).tolist())\n"
                     "print(torch.randn_like(torch.zeros(5, dtype=torch.float64)).tolist())")
check("rand_like and randn_like draw torch's numbers, in the tensor's dtype",
      rc == 0 and [l[len("  rank 0: "):] for l in out.splitlines()] == [
          "[[0.49625658988952637, 0.7682217955589294, 0.08847743272781372], "
          "[0.13203048706054688, 0.30742281675338745, 0.6340786814689636]]",
          "[1.2644587093281903, -0.6874263917320185, 0.1603812602788958, -0.6064511869240653, "
          "-0.7830641027703554]"], out + err)

# Python's random module: the shell's random.NAME give what this Python's
# give for the same seed (CPython's algorithms, unchanged since 3.2), on
# every rank, which starts seeded with its rank.
import random  # noqa: E402

PY_RANDOM = [
    "random.seed(1234); l = list(range(10)); random.shuffle(l); print(l)",
    "random.seed(0); print(random.random(), random.randint(1, 6), random.uniform(2, 3), "
    "random.randrange(10), random.randrange(3, 30, 3), random.randrange(10, 0, -3), "
    "random.choice('abc'), random.choice([5, 6, 7]), random.getrandbits(40), "
    "random.getrandbits(7))",
    "random.seed(-5); a = random.random(); random.seed(2 ** 40 + 7); print(a, random.random())",
    "random.seed(9); print([random.randint(0, 2 ** 62) for i in range(3)])",
    "random.seed(3); l = [[1], 'a', 2.5, (1, 2)]; random.shuffle(l); print(l, random.random())",
    # ranges at the ends of the 64-bit ints (Python's ints are unbounded)
    "random.seed(1); M = 9223372036854775807; print(random.randrange(0, M, 2), "
    "random.randint(-M - 1, -1), random.randint(-M, 0), random.randrange(1, M, M), "
    "random.randrange(M - 1, -1, -3), random.randint(M - 1, M))",
]
for code in PY_RANDOM:
    got = []
    for rank in range(2):
        random.seed(rank)  # each rank's generator before its first seed
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, {"random": random})
        got.append(out.getvalue().strip())
    rc, out, err = shell("set echo off\n" + code, np=2)
    lines = sorted(l for l in out.splitlines() if l.startswith("  rank "))
    want = ["  rank %d: %s" % (r, got[r]) for r in range(2)]
    check("python random: " + code, rc == 0 and lines == want, out + err + repr(want))
# A variable named random is a variable: its methods and attributes.
rc, out, err = shell("set echo off\nrandom = torch.ones(2)\nprint(random.sum(), random.shape)\n"
                     "random = [2, 1]\nrandom.sort()\nprint(random)")
check("python random: a variable named random is the variable",
      rc == 0 and [l for l in out.splitlines() if l.startswith("  rank ")] ==
      ["  rank 0: tensor(2.) torch.Size([2])", "  rank 0: [1, 2]"], out + err)
rc, out, err = shell("set echo off\nprint(random.random(), random.randrange(100))", np=3)
want = []
for rank in range(3):
    random.seed(rank)
    want.append("  rank %d: %r %d" % (rank, random.random(), random.randrange(100)))
check("python random: a rank starts seeded with its rank",
      rc == 0 and sorted(l for l in out.splitlines() if l.startswith("  rank ")) == want,
      out + err)
for line, msg in [
    ("random.randint(5, 4)", "column 1: empty range for randrange() (5, 5, 0)"),
    ("random.randrange(1, 10, 0)", "column 1: zero step for randrange()"),
    ("random.choice([])", "column 1: Cannot choose from an empty sequence"),
    ("random.getrandbits(-1)", "column 1: number of bits must be non-negative"),
    ("random.seed(1.5)", "column 1: random.seed takes an integer here, not float"),
    ("t = (1, 2); random.shuffle(t)", "column 13: 'tuple' object does not support item assignment"),
    ("random.shuffle([1, 2])",
     "column 16: random.shuffle takes a list variable here, as random.shuffle(indexes)"),
    ("random.gauss(0, 1)", "column 1: random.gauss is not supported here (random has seed, "
     "random, uniform, randint, randrange, choice, shuffle and getrandbits)"),
    ("random.randrange()", "column 1: random.randrange() takes 1 to 3 arguments (0 given)"),
    ("random.shuffle(nope)", "column 16: 'nope' is not defined"),
    ("t = randperm(16777218, dtype=float32)",
     "randperm: n cannot be greater than 2^24+1 for Float type."),
]:
    rc, out, err = shell(line)
    lines = [l for l in err.splitlines() if l.startswith("distlab: rank 0:")]
    check("error: " + line, rc == 1 and len(lines) == 1 and lines[0].endswith(msg), out + err)

print("random: %d failed" % len(failures))
sys.exit(1 if failures else 0)
