#!/usr/bin/env python3
"""What real torch prints for the float sums and means of test_math.py.

Each case is one line that both torch and the shell run as written: a
seeded randn tensor of some size, scale and dtype (float32, float64,
float16, bfloat16), and its sum or mean, whole or along the last
dimension, printed as a list of Python floats (every bit shows). Run with
a Python that has torch (Debian: apt-get install python3-torch); it writes
the checked-in expectations, torch_sums.json, which test_math.py compares
the shell's output with. torch splits a sum of more than 32767 elements
among its threads, so the sizes stay below that.

Regenerate the checked-in file with:
  python3 tests/integration/torch_sums.py --out tests/integration/torch_sums.json
"""
import json
import random
import torch_out


def cases():
    rng = random.Random(1)
    out = []
    for _ in range(200):
        n = rng.choice([rng.randint(1, 40), rng.randint(1, 400), rng.randint(1, 20000)])
        dt = rng.choice(["float32", "float64", "float16", "bfloat16"])
        op = rng.choice(["sum()", "mean()", "sum(-1)", "mean(dim=1)"])
        shape = ("(%d, %d)" % (rng.randint(1, 5), max(1, n // 5)) if op.endswith("1)")
                 else "(%d,)" % n)
        out.append("torch.manual_seed(%d); x = (torch.randn%s * %g).to(torch.%s); "
                   "print(x.%s.tolist())" % (rng.randint(0, 10**6), shape,
                                              10 ** rng.randint(-3, 6), dt, op))
    return out


def main():
    import torch
    lines = cases()
    want = []
    for line in lines:
        printed = []
        exec(line, {"torch": torch, "print": lambda v: printed.append(repr(v))})
        want.append(printed[0])
    doc = {"torch": torch.__version__, "cases": [{"line": l, "want": w} for l, w in zip(lines, want)]}
    text = json.dumps(doc, indent=1) + "\n"
    torch_out.write(text)


if __name__ == "__main__":
    main()
