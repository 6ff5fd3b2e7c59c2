#!/usr/bin/env python3
"""Drive `distlab run PRIMITIVE` over a matrix of algorithms, rank counts,
dtypes, ops, counts and roots, and check every printed tensor against values
computed here from the definition of the collective.

usage: run_matrix.py DISTLAB_EXE PRIMITIVE [--quick] [--transport tcp]
                     [--backend mpi] [--verbose] [--jobs N]

With --transport T every run gets `--transport T`, over a smaller matrix:
every algorithm, a few rank counts, counts on both sides of the eager size.
With --backend B every run gets `--backend B` (e.g. mpi: the ranks start
under mpirun), over every dtype and every op the dtype allows; the values
are checked against the same model, so B agrees with the builtin backend.

Exit status 0 when every case matches, 1 otherwise (each failure is printed
with the exact command that reproduces it).
"""

import argparse
import concurrent.futures
import itertools
import math
import os
import re
import sys
import time
from fractions import Fraction

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlcheck as dc  # noqa: E402

NPS = [1, 2, 3, 4, 7, 8]
P2P_NPS = [2, 3, 4, 7, 8]
COUNTS = [1, 2, 5]

# Which algorithms implement what (the reference table, not read from distlab).
ALGOS = {
    "all_reduce": ["ring", "rd", "rhd", "direct", "linear", "share"],
    "all_gather": ["ring", "rd", "direct", "linear"],
    "reduce_scatter": ["ring", "rhd", "direct", "linear"],
    "broadcast": ["tree", "chain", "direct"],
    "reduce": ["tree", "chain", "direct"],
    "gather": ["tree", "direct"],
    "scatter": ["tree", "direct"],
    "all_to_all": ["direct", "pairwise", "linear"],
    "barrier": ["direct", "linear", "dissemination"],
}
# Algorithms that write into their peers' memory: shared memory only.
SHM_ONLY = ("share",)
P2P = ["send", "recv", "isend", "irecv", "pingpong"]
REDUCING = ("all_reduce", "reduce", "reduce_scatter")
ROOTED = {"broadcast": "src", "scatter": "src", "gather": "dst", "reduce": "dst",
          "send": "src", "isend": "src", "recv": "dst", "irecv": "dst"}
WIDE_INPUT = ("reduce_scatter", "all_to_all")  # input holds count * np elements

# Dtype rotation: the three everyday dtypes come up twice as often as the rest.
DTYPE_ROT = ["int64", "float32", "int32", "bool", "int8", "float16",
             "int64", "float32", "int32", "uint8", "bfloat16", "float64"]

# Known product bugs: (predicate over the case, note). A failing case that
# matches is reported as XFAIL and does not fail the run; one that passes is
# reported as XPASS so the entry can be removed.
KNOWN_BUGS = []


# ---------------------------------------------------------------- expectations

class F:
    """An expected floating-point element: an interval of acceptable values
    and, where it is exactly determined, the exact value."""

    def __init__(self, lo, hi, exact=None):
        self.lo, self.hi, self.exact = lo, hi, exact

    def ok(self, got):
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return False
        if math.isnan(got):
            return False
        slack = 6e-5 * max(1.0, abs(got)) if math.isfinite(got) else 0.0  # print rounding
        return self.lo - slack <= got <= self.hi + slack

    def __repr__(self):
        if self.exact is not None:
            return repr(self.exact)
        return "[%g..%g]" % (self.lo, self.hi)


def fexact(v):
    return F(v, v, v)


def ulp_unit(dtype):
    return 2.0 ** -dc.FLOAT_INFO[dtype][0]


def is_pow2(n):
    return n & (n - 1) == 0


def reduce_elem(vals, op, dtype):
    """Reduce one element over ranks; vals are values already in dtype."""
    n = len(vals)
    if dtype == "bool":
        if op in ("sum", "max", "bor"):
            return any(vals)
        if op in ("prod", "min", "band"):
            return all(vals)
        if op == "bxor":
            return sum(vals) % 2 == 1
        raise ValueError(op)
    if dtype in dc.INT_DTYPES:
        if op == "sum":
            return dc.wrap_int(sum(vals), dtype)
        if op == "prod":
            return dc.wrap_int(math.prod(vals), dtype)
        if op == "min":
            return min(vals)
        if op == "max":
            return max(vals)
        if op == "avg":
            s = dc.wrap_int(sum(vals), dtype)
            q = abs(s) // n
            return dc.wrap_int(-q if s < 0 else q, dtype)
        acc = vals[0]
        for v in vals[1:]:
            acc = {"band": acc & v, "bor": acc | v, "bxor": acc ^ v}[op]
        return dc.wrap_int(acc, dtype)
    # floating point: exact rational result, then an error bound for the
    # roundings an implementation may do (one per combining step, each in the
    # dtype: distlab computes half types in float32 and rounds each step).
    bits, maxf = dc.FLOAT_INFO[dtype]
    u = ulp_unit(dtype)
    if op in ("min", "max"):
        return fexact(min(vals) if op == "min" else max(vals))
    # whole numbers (the matrices' inputs mostly are) as Python's ints:
    # as exact as Fractions, and many times faster
    whole = all(math.isfinite(v) and float(v).is_integer() for v in vals)
    exact_vals = [int(v) for v in vals] if whole else [Fraction(v) for v in vals]
    if op in ("sum", "avg"):
        s = sum(exact_vals)
        mag = sum(abs(v) for v in exact_vals)
        err = 2 * n * u * float(mag)
        small_int = all(v == int(v) for v in exact_vals) and abs(s) <= 2 ** bits
        if op == "sum":
            val = s
            exact = small_int
        else:
            val = Fraction(s, n) if whole else s / n
            err = err / n + 2 * u * abs(float(val))
            exact = small_int and (is_pow2(n) or s % n == 0)
    else:  # prod
        val = math.prod(exact_vals)
        err = 2 * n * u * abs(float(val)) if abs(val) < 2 ** 1100 else math.inf
        exact = all(v == int(v) for v in exact_vals) and abs(val) <= 2 ** bits
    fval = float(val) if abs(val) < 2 ** 1100 else math.copysign(math.inf, val)
    if exact:
        r = dc.round_float(val, dtype)
        return F(r, r, r)
    lo, hi = fval - err, fval + err
    if hi > maxf:
        # may overflow: inf is right once even the smallest result is too big
        hi = math.inf
        if lo > maxf:
            lo = math.inf
    if lo < -maxf:
        lo = -math.inf
    return F(lo, hi)


def reduce_vectors(vectors, op, dtype):
    return [reduce_elem(list(col), op, dtype) for col in zip(*vectors)]


def rank_input(r, count, dtype):
    return [dc.convert(count * r + k + 1, dtype) for k in range(count)]


def expected_sections(case, algo=None):
    """[(section, [(rank, name, expected)])]; expected is a list of element
    expectations, or a list of such lists for a tensor list, or a string for a
    free-text line or a value printed as text ("None"). algo is the schedule
    the run used (a reduce's other ranks depend on it)."""
    prim, np_, count, dtype, op, root = (case[k] for k in ("prim", "np", "count", "dtype", "op", "root"))
    if prim == "barrier":
        return [(None, [(r, None, "passed the barrier") for r in range(np_)])]
    if prim == "pingpong":
        # rank 0 adds one and sends, rank 1 adds one and sends back; every
        # rank's tensor after each leg, the last leg's under "after"
        legs = [("before", (0.0, 0.0)), ("after r0 += 1", (1.0, 0.0)),
                ("after r0 -> r1", (1.0, 1.0)), ("after r1 += 1", (1.0, 2.0)),
                ("after", (2.0, 2.0))]
        return [(label, [(r, "tensor", [vals[r] if r < 2 else 0.0]) for r in range(np_)])
                for label, vals in legs]
    if prim in WIDE_INPUT:
        ins = [rank_input(r, count * np_, dtype) for r in range(np_)]
        before = [(r, "input", ins[r]) for r in range(np_)]
        if prim == "reduce_scatter":
            outs = [reduce_vectors([v[r * count:(r + 1) * count] for v in ins], op, dtype)
                    for r in range(np_)]
        else:
            outs = [[x for s in range(np_) for x in ins[s][r * count:(r + 1) * count]]
                    for r in range(np_)]
        return [("before", before), ("after", [(r, "output", outs[r]) for r in range(np_)])]
    ins = [rank_input(r, count, dtype) for r in range(np_)]
    before = [(r, "tensor", ins[r]) for r in range(np_)]
    if prim == "scatter":
        # outputs of zeros; the root's list holds rank i's usual tensor for i
        zero = [dc.convert(0, dtype)] * count
        before = []
        for r in range(np_):
            before.append((r, "tensor", zero))
            if r == root:
                before.append((r, "scatter_list", ins))
        return [("before", before), ("after", [(r, "tensor", ins[r]) for r in range(np_)])]
    if prim == "all_reduce":
        red = reduce_vectors(ins, op, dtype)
        after = [(r, "tensor", red) for r in range(np_)]
    elif prim == "reduce":
        red = reduce_vectors(ins, op, dtype)
        after = [(r, "tensor", red if r == root else ins[r]) for r in range(np_)]
        if algo == "chain":
            # in place along root+n-1 -> ... -> root+1 -> root: the rank at
            # place v keeps the partial over places v..n-1 (sums for avg)
            part_op = "sum" if op == "avg" else op
            for r in range(np_):
                v = (r - root) % np_
                if r != root:
                    behind = [ins[(root + u) % np_] for u in range(v, np_)]
                    after[r] = (r, "tensor", reduce_vectors(behind, part_op, dtype))
    elif prim in ("broadcast", "send", "isend"):
        after = [(r, "tensor", ins[root]) for r in range(np_)]
    elif prim == "gather":
        after = [(r, "gather_list", ins if r == root else "None") for r in range(np_)]
    elif prim in ("recv", "irecv"):
        after = [(root, "recv_list", ins)]
    elif prim == "all_gather":
        after = [(r, "tensor_list", ins) for r in range(np_)]
    else:
        raise ValueError(prim)
    return [("before", before), ("after", after)]


# ---------------------------------------------------------------- checking

def elem_ok(exp, got, dtype):
    if isinstance(exp, F):
        return exp.ok(got)
    if dtype == "bool":
        return isinstance(got, bool) and got == exp
    if dtype in dc.FLOAT_DTYPES:  # copied values: exact, up to the 4 printed digits
        return isinstance(got, float) and fexact(exp).ok(got)
    return isinstance(got, int) and not isinstance(got, bool) and got == exp


def exact_values(exp):
    """The exact values of an expected vector, or None where not determined."""
    out = []
    for e in exp:
        if isinstance(e, F):
            if e.exact is None:
                return None
            out.append(e.exact)
        else:
            out.append(e)
    return out


def check_tensor(t, exp, dtype, where):
    """Compare a parsed Tensor with the expected element list."""
    errs = []
    if not isinstance(t, dc.Tensor):
        return ["%s: expected a tensor, got %r" % (where, t)]
    want_suffix = None
    if len(exp) == 0:
        want_suffix = None if dtype == "float32" else dtype
    elif dtype not in dc.DEFAULT_PRINT_DTYPES:
        want_suffix = dtype
    if t.dtype_suffix != want_suffix:
        errs.append("%s: dtype suffix %r, expected %r" % (where, t.dtype_suffix, want_suffix))
    vals = t.values
    if any(isinstance(v, list) for v in vals):
        return errs + ["%s: expected a 1-D tensor, got nested %r" % (where, vals)]
    if Ellipsis in vals:
        i = vals.index(Ellipsis)
        if len(exp) <= dc.THRESHOLD:
            errs.append("%s: summarised ('...') although it has only %d elements" % (where, len(exp)))
        pairs = list(zip(vals[:i], exp[:i])) + list(zip(vals[i + 1:][::-1], exp[::-1]))
        if i != dc.EDGEITEMS or len(vals) != 2 * dc.EDGEITEMS + 1:
            errs.append("%s: summary shows %d items, expected %d + ... + %d" %
                        (where, len(vals) - 1, dc.EDGEITEMS, dc.EDGEITEMS))
    else:
        if len(vals) != len(exp):
            return errs + ["%s: %d elements, expected %d" % (where, len(vals), len(exp))]
        if len(exp) > dc.THRESHOLD:
            errs.append("%s: %d elements printed in full, torch summarises above %d" %
                        (where, len(exp), dc.THRESHOLD))
        pairs = list(zip(vals, exp))
    if dtype in dc.INT_DTYPES and t.float_tokens:
        errs.append("%s: float-looking numbers in an integer tensor" % where)
    if dtype in dc.FLOAT_DTYPES and t.int_tokens:
        errs.append("%s: integer-looking numbers (no '.') in a float tensor" % where)
    bad = [(k, g, e) for k, (g, e) in enumerate(pairs) if not elem_ok(e, g, dtype)]
    if bad:
        show = ", ".join("[%d] got %r want %r" % b for b in bad[:4])
        errs.append("%s: %d wrong element(s): %s%s" % (where, len(bad), show,
                                                      " ..." if len(bad) > 4 else ""))
    return errs


def check_item(text, exp, dtype, where, is_list):
    """Parse and check one printed value (a tensor or a list of tensors)."""
    try:
        v = dc.parse_value(text)
    except dc.ParseError as e:
        return ["%s: cannot parse %r: %s" % (where, text, e)]
    errs = []
    if is_list:
        if not isinstance(v, list):
            return ["%s: expected a list of tensors, got %r" % (where, text)]
        if len(v) != len(exp):
            return ["%s: list of %d tensors, expected %d" % (where, len(v), len(exp))]
        for i, (t, e) in enumerate(zip(v, exp)):
            errs += check_tensor(t, e, dtype, "%s[%d]" % (where, i))
        exacts = [exact_values(e) for e in exp]
        if not errs and all(x is not None for x in exacts):
            want = dc.list_repr(exacts, dtype)
            if not dc.same_text_modulo_indent(want, text):
                errs.append("%s: printed\n%s\n    torch prints\n%s" % (where, text, want))
    else:
        errs += check_tensor(v, exp, dtype, where)
        ex = exact_values(exp)
        if not errs and ex is not None:
            want = dc.torch_repr(ex, dtype)
            if not dc.same_text_modulo_indent(want, text):
                errs.append("%s: printed\n%s\n    torch prints\n%s" % (where, text, want))
    return errs


class Explain:
    """Step counts from `distlab explain`, to check the run header against."""

    def __init__(self, exe):
        self.exe = exe
        self.cache = {}

    def steps(self, case, algo):
        key = (case["prim"], algo, case["np"], case["count"], case["dtype"], case["op"], case["root"])
        if key not in self.cache:
            argv = [self.exe, "explain", case["prim"], "--algo", algo, "--np", str(case["np"]),
                    "--count", str(case["count"]), "--dtype", case["dtype"]]
            if case["prim"] in REDUCING:
                argv += ["--op", case["op"]]
            if case["prim"] in ROOTED:
                argv += ["--root", str(case["root"])]
            if case["prim"] == "barrier":
                argv = argv[:7]
            r = dc.run(argv, timeout=30)
            m = re.search(r"^steps (\d+)\b", r.out, re.M)
            self.cache[key] = (int(m.group(1)) if r.rc == 0 and m else None, r.cmd)
        return self.cache[key]


def header_regex(case):
    prim = case["prim"]
    backend = case.get("backend") or "builtin"
    parts = [re.escape(prim), "np=%d" % case["np"], "backend=" + backend]
    if prim not in P2P and backend != "builtin":
        parts.append(r"call=(?P<call>\S+(?: \S+)*?)")  # the library's own call
    elif prim not in P2P:
        parts.append(r"algo=(?P<algo>[a-z_]+) \((?P<steps>\d+) steps?\)")
    if prim not in ("barrier", "pingpong"):
        parts += ["dtype=" + case["dtype"], "count=%d" % case["count"]]
    if prim in REDUCING:
        parts.append("op=" + case["op"])
    if prim in ROOTED:
        parts.append("%s=%d" % (ROOTED[prim], case["root"]))
    return re.compile("^" + "  ".join(parts) + "$")


def case_argv(exe, case):
    argv = [exe, "run", case["prim"], "--np", str(case["np"])]
    if case.get("transport"):
        argv += ["--transport", case["transport"]]
    if case.get("backend"):
        argv += ["--backend", case["backend"]]
    if case.get("algo"):
        argv += ["--algo", case["algo"]]
    if case["prim"] not in ("barrier", "pingpong"):
        argv += ["--dtype", case["dtype"], "--count", str(case["count"])]
    if case["prim"] in REDUCING:
        argv += ["--op", case["op"]]
    if case["prim"] in ROOTED:
        argv += ["--root", str(case["root"])]
    return argv


def check_case(exe, case, explain):
    argv = case_argv(exe, case)
    # --transport must win over the environment: were it dropped on the way
    # to the ranks, they would refuse this one and the case would fail.
    env = {"DISTLAB_TRANSPORT": "pigeon"} if case.get("transport") else None
    res = dc.run(argv, timeout=90, env_extra=env)
    errs = []
    if res.rc != 0:
        return res, ["exit status %s, expected 0; stderr: %s" % (res.rc, res.err.strip()[:2000])]
    if res.err.strip():
        errs.append("unexpected stderr: %s" % res.err.strip()[:500])
    lines = res.out.rstrip("\n").split("\n")
    hre = header_regex(case)
    m = hre.match(lines[0])
    used_algo = case.get("algo")
    if m and "algo" in m.groupdict():
        used_algo = m.group("algo")
    if not m:
        errs.append("header %r does not match %r" % (lines[0], hre.pattern))
    elif case["prim"] in P2P or case.get("backend"):
        pass  # no schedule to compare with `distlab explain`
    else:
        algo = m.group("algo")
        if case.get("algo") and algo != case["algo"]:
            errs.append("header names algo=%s, asked for %s" % (algo, case["algo"]))
        if algo not in ALGOS[case["prim"]]:
            errs.append("header names algo=%s, which does not implement %s (those that do: %s)"
                        % (algo, case["prim"], ", ".join(ALGOS[case["prim"]])))
        else:
            steps, ecmd = explain.steps(case, algo)
            if steps is None:
                errs.append("could not read the step count from: %s" % ecmd)
            elif steps != int(m.group("steps")):
                errs.append("header says %s steps, `%s` says %d" % (m.group("steps"), ecmd, steps))
    try:
        got = dc.split_output(lines[1:])
    except dc.ParseError as e:
        return res, errs + [str(e)]
    want = expected_sections(case, used_algo)
    gs = [s for s, _ in got]
    ws = [s for s, _ in want]
    if gs != ws:
        return res, errs + ["sections %r, expected %r" % (gs, ws)]
    for (sec, gitems), (_, witems) in zip(got, want):
        gkeys = [(r, n) for r, n, _ in gitems]
        wkeys = [(r, n) for r, n, _ in witems]
        if gkeys != wkeys:
            errs.append("%s: printed items (rank, name) %s, expected %s (rank order, and nothing "
                        "for ranks that should print nothing)" % (sec or "output", gkeys, wkeys))
            continue
        for (r, name, text), (_, _, exp) in zip(gitems, witems):
            where = "%s rank %d %s" % (sec or "output", r, name)
            if name is None or isinstance(exp, str):
                if text != exp:
                    errs.append("%s: %r, expected %r" % (where, text, exp))
                continue
            dtype = "float32" if case["prim"] == "pingpong" else case["dtype"]
            errs += check_item(text, exp, dtype, where, name.endswith("_list"))
    return res, errs


# ---------------------------------------------------------------- the matrix

def roots_for(prim, np_):
    if prim not in ROOTED:
        return [0]
    return sorted({0, np_ - 1})


def next_valid_dtype(op, k):
    for j in range(len(DTYPE_ROT)):
        d = DTYPE_ROT[(k + j) % len(DTYPE_ROT)]
        if dc.op_valid(op, d):
            return d
    raise AssertionError


def build_cases(prim, quick=False):
    cases = []

    def add(**kw):
        c = dict(prim=prim, algo=None, np=2, count=2, dtype="int64", op="sum", root=0)
        c.update(kw)
        cases.append(c)

    if prim in P2P:
        for i, np_ in enumerate(P2P_NPS):
            if prim == "pingpong":
                add(np=np_, dtype="float32", count=1)
                continue
            for j, root in enumerate(roots_for(prim, np_)):
                for k in range(3):
                    idx = i * 6 + j * 3 + k
                    add(np=np_, root=root, dtype=DTYPE_ROT[idx % len(DTYPE_ROT)],
                        count=COUNTS[(idx + k) % len(COUNTS)])
        if prim != "pingpong":
            add(np=3, root=2, count=0, dtype="int32")
            add(np=2, root=1, count=1200, dtype="float32")
        return cases

    algos = ALGOS[prim] + [None]
    combo = 0
    for algo in algos:
        for np_ in NPS:
            for root in roots_for(prim, np_):
                if prim == "barrier":
                    add(algo=algo, np=np_)
                elif prim in REDUCING:
                    for i, op in enumerate(dc.ALL_OPS):
                        # quick: two ops a combination, turning with it, so
                        # that every algorithm still meets every op
                        if quick and (i - combo) % (len(dc.ALL_OPS) // 2):
                            continue
                        add(algo=algo, np=np_, root=root, op=op,
                            dtype=next_valid_dtype(op, combo * 5 + i),
                            count=COUNTS[(combo + i) % len(COUNTS)])
                else:
                    for i in range(1 if quick else 3):
                        add(algo=algo, np=np_, root=root,
                            dtype=DTYPE_ROT[(combo * 3 + i) % len(DTYPE_ROT)],
                            count=COUNTS[(combo + i) % len(COUNTS)])
                combo += 1
    if prim in REDUCING:
        # every algorithm with every valid (dtype, op) pair, on a non-power-of-two np
        for j, algo in enumerate(algos):
            if quick and algo is not None:
                continue
            np_ = [3, 7, 5][j % 3]
            for d, op in itertools.product(dc.ALL_DTYPES, dc.ALL_OPS):
                if dc.op_valid(op, d):
                    add(algo=algo, np=np_, op=op, dtype=d, count=5, root=roots_for(prim, np_)[-1])
        # values that overflow / wrap / round: big inputs, 8 ranks
        for j, (d, op) in enumerate([("int8", "prod"), ("uint8", "prod"), ("int32", "prod"),
                                     ("float16", "prod"), ("bfloat16", "prod"), ("int8", "sum"),
                                     ("int8", "avg"), ("uint8", "avg"), ("float16", "sum"),
                                     ("bfloat16", "sum"), ("bfloat16", "avg"), ("int64", "prod")]):
            add(algo=algos[j % len(algos)], np=8, count=5 if d != "int64" else 37, op=op,
                dtype=d, root=roots_for(prim, 8)[-1])
    elif prim != "barrier" and not quick:
        # every algorithm with every dtype
        for j, algo in enumerate(algos):
            np_ = [3, 7, 5][j % 3]
            for d in dc.ALL_DTYPES:
                add(algo=algo, np=np_, dtype=d, count=5, root=roots_for(prim, np_)[-1])
    if prim != "barrier":
        # counts that do not split evenly over the ranks (chunks, pipeline pieces)
        for j, algo in enumerate(algos):
            for k, (np_, count) in enumerate([(3, 37), (4, 13), (8, 37), (7, 64)]):
                if quick and k:
                    continue
                add(algo=algo, np=np_, count=count, dtype=["int32", "float32", "int64"][(j + k) % 3],
                    op=["sum", "max", "prod", "avg"][(j + k) % 4], root=roots_for(prim, np_)[-1])
        # empty tensors, and tensors long enough for torch to summarise (> 1000)
        for j, algo in enumerate(algos):
            add(algo=algo, np=3, count=0, dtype=["int64", "float32", "bool", "int8"][j % 4],
                root=roots_for(prim, 3)[-1])
        big = 300 if prim in WIDE_INPUT else 1001
        add(algo=algos[0], np=4, count=big, dtype="float32", root=roots_for(prim, 4)[-1])
        add(algo=algos[-2], np=4, count=big, dtype="int32", root=0)
        # one full line of values: torch moves the dtype suffix to a line of its own
        for j, (d, n) in enumerate([("int32", 18), ("float16", 14), ("int8", 18)]):
            add(algo=algos[j % len(algos)], np=2, count=n // 2 if prim in WIDE_INPUT else n,
                dtype=d, op="max", root=1)
        # large vectors (only the ends are printed), one per algorithm
        big = 8193 if prim in WIDE_INPUT else 65537
        for j, algo in enumerate(algos):
            add(algo=algo, np=[8, 7][j % 2], count=big, dtype=["int32", "float64"][j % 2],
                root=roots_for(prim, 8)[-1] if j % 2 == 0 else 0)
    # more ranks than the matrix's usual 8
    add(algo=None, np=16, count=3, dtype="int32", root=15)
    return cases


def transport_cases(prim, transport):
    """A pass over another transport: every algorithm on a few rank counts,
    small counts (sent eagerly) and larger ones (sent from the buffer)."""
    cases = []

    def add(**kw):
        c = dict(prim=prim, algo=None, np=2, count=2, dtype="int64", op="sum", root=0,
                 transport=transport)
        c.update(kw)
        cases.append(c)

    if prim in P2P:
        for np_ in (2, 3, 5):
            for root in roots_for(prim, np_):
                if prim == "pingpong":
                    add(np=np_, dtype="float32", count=1)
                    break
                add(np=np_, root=root, dtype="int32", count=5)
        if prim != "pingpong":
            add(np=2, root=1, count=1200, dtype="float32")
            add(np=8, root=7, count=3, dtype="int64")
        return cases
    nps = [2, 3, 5, 4]
    for j, algo in enumerate(ALGOS[prim] + [None]):
        if algo in SHM_ONLY and transport == "tcp":
            continue  # refused (invalid_cases)
        np_ = nps[j % len(nps)]
        root = roots_for(prim, np_)[-1]
        if prim == "barrier":
            add(algo=algo, np=np_)
            continue
        ops = ["sum", "max"] if prim in REDUCING else ["sum"]
        add(algo=algo, np=np_, root=root, count=3, dtype="int32", op=ops[j % len(ops)])
        add(algo=algo, np=np_ + 2, root=0, count=1000 if prim in WIDE_INPUT else 4099,
            dtype=["float32", "int64"][j % 2], op=ops[(j + 1) % len(ops)])
    if prim != "barrier":
        add(np=8, root=7, count=37, dtype="int32")
    return cases


def backend_cases(prim, backend, quick=False):
    """A pass on another backend: every dtype, and every op each dtype
    allows, over a few rank counts and counts. Quick: every dtype with two
    of its ops in turn, so that every op still runs (each case is an
    mpirun, about 0.6 s here, and the whole product is 50 of them)."""
    cases = []
    nps = [2, 3, 4, 1, 5]
    counts = [1, 5, 1000, 2]

    def add(**kw):
        c = dict(prim=prim, algo=None, np=2, count=2, dtype="int64", op="sum", root=0,
                 backend=backend)
        c.update(kw)
        cases.append(c)

    if prim in P2P:
        for np_ in (2, 3):
            for root in roots_for(prim, np_):
                if prim == "pingpong":
                    add(np=np_, dtype="float32", count=1)
                    break
                add(np=np_, root=root, dtype="int32", count=5)
        if prim != "pingpong":
            add(np=2, root=1, count=1200, dtype="float64")
        return cases
    if prim == "barrier":
        for np_ in (1, 2, 5):
            add(np=np_)
        return cases
    k = 0
    turn = 0
    for d in dc.ALL_DTYPES:
        ops = [op for op in dc.ALL_OPS if dc.op_valid(op, d)] if prim in REDUCING else ["sum"]
        if quick and len(ops) > 2:
            ops = [ops[turn % len(ops)], ops[(turn + 1) % len(ops)]]
            turn += 2
        for op in ops:
            np_ = nps[k % len(nps)]
            add(np=np_, dtype=d, op=op, count=counts[k % len(counts)],
                root=roots_for(prim, np_)[-1])
            k += 1
    return cases


def invalid_cases(exe, prim):
    """Runs that must be refused with exit status 2 and one line on stderr."""
    out = []
    if prim in P2P:
        out.append(([exe, "run", prim, "--np", "1"], prim))
    if prim in REDUCING:
        algos = ALGOS[prim]
        k = 0
        for d in dc.ALL_DTYPES:
            for op in dc.ALL_OPS:
                if not dc.op_valid(op, d):
                    out.append(([exe, "run", prim, "--np", "2", "--algo", algos[k % len(algos)],
                                 "--dtype", d, "--op", op], op))
                    k += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exe")
    ap.add_argument("primitive")
    # DLTEST_QUICK=1 (CI's sanitizer pass, where every run is several times
    # slower) asks for the smaller matrix too; the full one runs unsanitized.
    ap.add_argument("--quick", action="store_true", default=os.environ.get("DLTEST_QUICK") == "1",
                    help="a smaller matrix (also with DLTEST_QUICK=1)")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every command")
    ap.add_argument("--max-failures", type=int, default=20)
    ap.add_argument("--jobs", "-j", type=int, default=2, help="cases run at a time (default 2)")
    ap.add_argument("--transport", help="run every case with --transport T (a smaller matrix)")
    ap.add_argument("--backend", help="run every case with --backend B (every dtype and op)")
    a = ap.parse_args()
    prim = a.primitive
    if prim not in ALGOS and prim not in P2P:
        print("unknown primitive %r" % prim, file=sys.stderr)
        return 2
    t0 = time.monotonic()
    explain = Explain(a.exe)
    failures, xfails, xpasses = [], [], []
    if a.backend:
        cases = backend_cases(prim, a.backend, a.quick)
    elif a.transport:
        cases = transport_cases(prim, a.transport)
    else:
        cases = build_cases(prim, a.quick)
    # Two cases at a time: a case is a chain of processes starting and
    # waiting for each other (this script, distlab, its ranks), which keeps
    # one core busy only part of the time. The results are read in order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        results = list(pool.map(lambda c: check_case(a.exe, c, explain), cases))
    for case, (res, errs) in zip(cases, results):
        if a.verbose:
            print("%s  %.2fs  %s" % ("ok  " if not errs else "FAIL", res.secs, res.cmd))
        known = [note for pred, note in KNOWN_BUGS if pred(case)]
        if errs and known:
            xfails.append((res.cmd, known[0]))
        elif errs:
            failures.append((res.cmd, errs))
        elif known:
            xpasses.append((res.cmd, known[0]))
    n_inv = 0
    invalid = invalid_cases(a.exe, prim)
    if a.transport:
        invalid = [([a.exe, "run", prim, "--np", "2", "--transport", "pigeon"], "pigeon")]
        invalid += [([a.exe, "run", prim, "--np", "2", "--algo", algo, "--transport", "tcp"],
                     "shared memory") for algo in ALGOS.get(prim, []) if algo in SHM_ONLY
                    and a.transport == "tcp"]
    if a.backend:
        invalid = [([a.exe, "run", prim, "--np", "2", "--backend", "pigeon"], "pigeon")]
    for argv, word in invalid:
        n_inv += 1
        res = dc.run(argv, timeout=30)
        errs = []
        if res.rc != 2:
            errs.append("exit status %s, expected 2" % res.rc)
        lines = res.err.strip("\n").split("\n")
        if len(lines) != 1 or not lines[0]:
            errs.append("stderr should be one line, got %r" % res.err)
        elif word not in lines[0]:
            errs.append("stderr %r does not name %r" % (lines[0], word))
        if res.out:
            errs.append("refused run printed on stdout: %r" % res.out[:200])
        if a.verbose:
            print("%s  %s" % ("ok  " if not errs else "FAIL", res.cmd))
        if errs:
            failures.append((res.cmd, errs))
    for cmd, errs in failures[:a.max_failures]:
        print("FAIL: %s" % cmd)
        for e in errs:
            print("    " + e.replace("\n", "\n    "))
    if len(failures) > a.max_failures:
        print("... and %d more failures" % (len(failures) - a.max_failures))
    for cmd, note in xfails:
        print("XFAIL (known bug: %s): %s" % (note, cmd))
    for cmd, note in xpasses:
        print("XPASS (known bug no longer seen, remove it: %s): %s" % (note, cmd))
    total = len(cases) + n_inv
    print("%-15s %4d cases (%d runs + %d refusals): %d failed, %d xfail, %d xpass  %.1f s" %
          (prim, total, len(cases), n_inv, len(failures), len(xfails), len(xpasses),
           time.monotonic() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
