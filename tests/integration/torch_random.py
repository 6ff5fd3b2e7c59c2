#!/usr/bin/env python3
"""What real torch prints for the random-number cases of test_random.py.

Each case is a distlab shell line and the torch code it stands for. Run
with a Python that has torch (Debian: apt-get install python3-torch), this
script runs the torch side of every case, once per rank, and writes what
torch prints as JSON: the checked-in expectations, torch_random.json, that
test_random.py compares distlab's output with when no torch is at hand.

torch has two float32 randn kernels for 16 and more elements, chosen by
the CPU (AVX2 or not) or by ATEN_CPU_CAPABILITY; their values can differ
in the last bit, so the cases run under both (the "avx2" and "default"
expectations; they differ only where the kernels do).

usage: torch_random.py [--out FILE]     (default: print to standard output)
Regenerate the checked-in file with:
  python3 tests/integration/torch_random.py --out tests/integration/torch_random.json
"""
import json
import os
import subprocess
import sys
import torch_out

# name, np, distlab line, the variables to compare (each as distlab prints
# it after "NAME = "), and torch code that calls show() once per variable,
# in the same order. The code runs in a fresh process per rank, with torch,
# rank and world_size defined.
CASES = [
    # torch.rand after manual_seed: several seeds, as torch takes them.
    ("rand5_seed0", 1, "manual_seed(0); t = rand(5)", ["t"],
     "torch.manual_seed(0); show(torch.rand(5))"),
    ("rand_print_seed42", 1, "manual_seed(42); t = rand(4); print t", ["t", "t"],
     "torch.manual_seed(42); t = torch.rand(4); show(t); show(t)"),
    ("rand_seed1", 1, "manual_seed(1); t = rand(3)", ["t"],
     "torch.manual_seed(1); show(torch.rand(3))"),
    ("rand_seed123456789", 1, "manual_seed(123456789); t = rand(3)", ["t"],
     "torch.manual_seed(123456789); show(torch.rand(3))"),
    ("rand_seed_negative", 1, "manual_seed(-1); t = rand(3)", ["t"],
     "torch.manual_seed(-1); show(torch.rand(3))"),
    ("rand_seed_2_32_plus_5", 1, "manual_seed(4294967301); t = rand(3)", ["t"],
     "torch.manual_seed(4294967301); show(torch.rand(3))"),
    ("rand_seed_keyword", 1, "manual_seed(seed=7); t = rand(3)", ["t"],
     "torch.manual_seed(seed=7); show(torch.rand(3))"),
    # A stream continues from call to call, across the 624-word state too.
    ("rand_two_calls", 1, "manual_seed(3); a = rand(3); t = rand(4)", ["a", "t"],
     "torch.manual_seed(3); show(torch.rand(3)); show(torch.rand(4))"),
    ("rand_past_one_twist", 1, "manual_seed(0); a = rand(700); t = rand(3)", ["t"],
     "torch.manual_seed(0); torch.rand(700); show(torch.rand(3))"),
    # Sizes: varargs, a tuple, a list, size=, 2-D; other dtypes.
    ("rand_2d", 1, "manual_seed(0); t = rand(2, 3)", ["t"],
     "torch.manual_seed(0); show(torch.rand(2, 3))"),
    ("rand_tuple", 1, "manual_seed(0); t = rand((2, 3))", ["t"],
     "torch.manual_seed(0); show(torch.rand((2, 3)))"),
    ("rand_list_size_kw", 1, "manual_seed(0); a = rand([3]); t = rand(size=(2, 2))", ["a", "t"],
     "torch.manual_seed(0); show(torch.rand([3])); show(torch.rand(size=(2, 2)))"),
    ("rand_float64", 1, "manual_seed(0); t = rand(2, 3, dtype=float64)", ["t"],
     "torch.manual_seed(0); show(torch.rand(2, 3, dtype=torch.float64))"),
    ("rand_float16", 1, "manual_seed(0); t = rand(4, dtype=float16)", ["t"],
     "torch.manual_seed(0); show(torch.rand(4, dtype=torch.float16))"),
    ("rand_bfloat16", 1, "manual_seed(0); t = rand(4, dtype=bfloat16)", ["t"],
     "torch.manual_seed(0); show(torch.rand(4, dtype=torch.bfloat16))"),
    ("rand_scalar_and_empty", 1, "manual_seed(0); a = rand(()); t = rand(0)", ["a", "t"],
     "torch.manual_seed(0); show(torch.rand(())); show(torch.rand(0))"),
    # seed=S: a generator of its own; the rank's stream goes on untouched.
    ("rand_seed_kwarg", 1, "manual_seed(9); a = rand(2); b = rand(3, seed=4); t = rand(2)",
     ["a", "b", "t"],
     "torch.manual_seed(9); show(torch.rand(2)); "
     "show(torch.rand(3, generator=torch.Generator().manual_seed(4))); show(torch.rand(2))"),
    # randn: below 16 elements pairs with a kept second value (which outlives
    # the call and a rand in between), 16 and more in blocks of 16.
    ("randn3", 1, "manual_seed(0); t = randn(3)", ["t"],
     "torch.manual_seed(0); show(torch.randn(3))"),
    ("randn16", 1, "manual_seed(0); t = randn(16)", ["t"],
     "torch.manual_seed(0); show(torch.randn(16))"),
    ("randn17", 1, "manual_seed(0); t = randn(17)", ["t"],
     "torch.manual_seed(0); show(torch.randn(17))"),
    ("randn100", 1, "manual_seed(0); t = randn(100)", ["t"],
     "torch.manual_seed(0); show(torch.randn(100))"),
    ("randn100_seed31", 1, "manual_seed(31); t = randn(100)", ["t"],
     "torch.manual_seed(31); show(torch.randn(100))"),
    ("randn_two_calls", 1, "manual_seed(0); a = randn(3); t = randn(3)", ["a", "t"],
     "torch.manual_seed(0); show(torch.randn(3)); show(torch.randn(3))"),
    ("randn_kept_value_across_rand", 1, "manual_seed(5); a = randn(5); b = rand(2); t = randn(1)",
     ["a", "b", "t"],
     "torch.manual_seed(5); show(torch.randn(5)); show(torch.rand(2)); show(torch.randn(1))"),
    ("randn_2d", 1, "manual_seed(0); a = randn(2, 3); t = randn(4, 5)", ["a", "t"],
     "torch.manual_seed(0); show(torch.randn(2, 3)); show(torch.randn(4, 5))"),
    ("randn_float64", 1, "manual_seed(0); a = randn(3, dtype=float64); t = randn(17, dtype=float64)",
     ["a", "t"],
     "torch.manual_seed(0); show(torch.randn(3, dtype=torch.float64)); "
     "show(torch.randn(17, dtype=torch.float64))"),
    # randint: both signatures, keywords, small and large ranges, dtypes.
    ("randint_small", 1, "manual_seed(0); t = randint(0, 10, (8,))", ["t"],
     "torch.manual_seed(0); show(torch.randint(0, 10, (8,)))"),
    ("randint_high_size", 1, "manual_seed(0); t = randint(10, (2, 3))", ["t"],
     "torch.manual_seed(0); show(torch.randint(10, (2, 3)))"),
    ("randint_keywords", 1,
     "manual_seed(0); a = randint(-5, 5, size=(6,)); t = randint(low=3, high=9, size=[4])",
     ["a", "t"],
     "torch.manual_seed(0); show(torch.randint(-5, 5, size=(6,))); "
     "show(torch.randint(low=3, high=9, size=[4]))"),
    ("randint_large_range", 1, "manual_seed(0); t = randint(0, 1099511627776, (4,))", ["t"],
     "torch.manual_seed(0); show(torch.randint(0, 2**40, (4,)))"),
    ("randint_whole_int64", 1,
     "manual_seed(0); t = randint(-9223372036854775807 - 1, 9223372036854775807, (3,))", ["t"],
     "torch.manual_seed(0); show(torch.randint(-2**63, 2**63 - 1, (3,)))"),
    ("randint_int32_uint8", 1,
     "manual_seed(0); a = randint(-100, 100, (5,), dtype=int32); t = randint(0, 256, (5,), "
     "dtype=uint8)", ["a", "t"],
     "torch.manual_seed(0); show(torch.randint(-100, 100, (5,), dtype=torch.int32)); "
     "show(torch.randint(0, 256, (5,), dtype=torch.uint8))"),
    ("randint_float32_wide", 1, "manual_seed(0); t = randint(0, 2147483648, (4,), dtype=float32)",
     ["t"],
     "torch.manual_seed(0); show(torch.randint(0, 2**31, (4,), dtype=torch.float32))"),
    ("randint_float64_wide", 1,
     "manual_seed(0); t = randint(0, 8589934592, (4,), dtype=float64)", ["t"],
     "torch.manual_seed(0); show(torch.randint(0, 2**33, (4,), dtype=torch.float64))"),
    # randperm: torch's shuffle, continuing the stream; dtypes; n= and seed=.
    ("randperm10_seed42", 1, "manual_seed(42); t = randperm(10)", ["t"],
     "torch.manual_seed(42); show(torch.randperm(10))"),
    ("randperm_stream", 1, "manual_seed(3); a = rand(2); b = randperm(6); t = rand(2)",
     ["a", "b", "t"],
     "torch.manual_seed(3); show(torch.rand(2)); show(torch.randperm(6)); show(torch.rand(2))"),
    ("randperm_large", 1, "manual_seed(7); a = randperm(1000); t = a[990:]", ["t"],
     "torch.manual_seed(7); show(torch.randperm(1000)[990:])"),
    ("randperm_dtypes", 1,
     "manual_seed(0); a = randperm(6, dtype=float32); b = randperm(256, dtype=uint8); "
     "t = randperm(n=5, dtype=bfloat16)", ["a", "t"],
     "torch.manual_seed(0); show(torch.randperm(6, dtype=torch.float32)); "
     "torch.randperm(256, dtype=torch.uint8); show(torch.randperm(n=5, dtype=torch.bfloat16))"),
    ("randperm_seed_kwarg_and_empty", 1, "a = randperm(6, seed=5); t = randperm(0)", ["a", "t"],
     "show(torch.randperm(6, generator=torch.Generator().manual_seed(5))); "
     "show(torch.randperm(0))"),
    # Ranks: each starts seeded with its rank; seed= takes any expression.
    ("ranks_default_seed", 4, "t = rand(3); s = initial_seed()", ["t", "s"],
     "torch.manual_seed(rank); show(torch.rand(3)); show(torch.initial_seed())"),
    ("ranks_seed_rank", 4, "t = rand(3, seed=rank)", ["t"],
     "torch.manual_seed(rank); show(torch.rand(3))"),
    ("ranks_seed_expression", 4, "t = randn(2, 2, seed=10*rank + world_size)", ["t"],
     "torch.manual_seed(10 * rank + world_size); show(torch.randn(2, 2))"),
    ("ranks_manual_seed_expression", 4, "manual_seed(100 + rank); t = randint(0, 100, (5,))", ["t"],
     "torch.manual_seed(100 + rank); show(torch.randint(0, 100, (5,)))"),
]

KERNELS = ["avx2", "default"]


def run_case(code, rank, world_size):
    """What torch shows for one case on one rank: a list of texts."""
    import torch  # noqa: F401  (the case code uses it)
    shown = []
    env = {"torch": torch, "rank": rank, "world_size": world_size,
           "show": lambda v: shown.append(str(v))}
    exec(code, env)
    return shown


def child():
    """Runs every case under the ATEN_CPU_CAPABILITY it was started with."""
    import warnings
    warnings.simplefilter("ignore")
    out = {}
    for name, np_, _line, _names, code in CASES:
        out[name] = [run_case(code, r, np_) for r in range(np_)]
    json.dump(out, sys.stdout)


def generate(python=sys.executable):
    """Every case's expectations, {"torch": version, "cases": [...]}, by
    running this script's child mode under each kernel."""
    results = {}
    version = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    for kernel in KERNELS:
        env = dict(os.environ, ATEN_CPU_CAPABILITY=kernel)
        p = subprocess.run([python, os.path.abspath(__file__), "--child"], env=env,
                           capture_output=True, text=True, check=True)
        results[kernel] = json.loads(p.stdout)
    cases = []
    for name, np_, line, names, _code in CASES:
        case = {"name": name, "np": np_, "line": line, "names": names}
        for kernel in KERNELS:
            case[kernel] = results[kernel][name]
        if case["default"] == case["avx2"]:
            case["torch"] = case.pop("avx2")
            del case["default"]
        cases.append(case)
    return {"torch": version, "cases": cases}


def main():
    if sys.argv[1:] == ["--child"]:
        child()
        return
    data = generate()
    text = json.dumps(data, indent=1) + "\n"
    torch_out.write(text)


if __name__ == "__main__":
    main()
