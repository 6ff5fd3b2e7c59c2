#!/usr/bin/env python3
"""Self-test of the integration harness (dlcheck.py): its torch-repr
formatter against reprs torch itself prints, its parser on them, and its
dtype arithmetic. Needs no distlab binary; guards the checks the other
tests rely on."""

import math
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlcheck as dc  # noqa: E402

NAN, INF = math.nan, math.inf

# (values, dtype, what torch prints)
REPRS = [
    ([1, 2], "int64", "tensor([1, 2])"),
    ([16, 20], "int64", "tensor([16, 20])"),
    ([9, 12], "int64", "tensor([ 9, 12])"),
    ([1, 2], "int32", "tensor([1, 2], dtype=torch.int32)"),
    ([28, 80, -94], "int8", "tensor([ 28,  80, -94], dtype=torch.int8)"),
    ([1.0, 2.0], "float32", "tensor([1., 2.])"),
    ([1.0, 2.0], "float16", "tensor([1., 2.], dtype=torch.float16)"),
    ([1.12345], "float64", "tensor([1.1235], dtype=torch.float64)"),
    ([2.5, 3.5, 4.5], "float32", "tensor([2.5000, 3.5000, 4.5000])"),
    ([1.0, 3e6], "float32", "tensor([1.0000e+00, 3.0000e+06])"),
    ([1e-5, 1.0], "float32", "tensor([1.0000e-05, 1.0000e+00])"),
    ([NAN, 1.0], "float32", "tensor([nan, 1.])"),
    ([INF, 1.5], "float32", "tensor([   inf, 1.5000])"),
    ([0.0, 0.0], "float32", "tensor([0., 0.])"),
    ([True, False], "bool", "tensor([ True, False])"),
    ([True, True], "bool", "tensor([True, True])"),
    ([], "float32", "tensor([])"),
    ([], "int64", "tensor([], dtype=torch.int64)"),
    ([], "bool", "tensor([], dtype=torch.bool)"),
    ([float(i) for i in range(10)], "float32",
     "tensor([0., 1., 2., 3., 4., 5., 6., 7., 8., 9.])"),
    ([float(i) for i in range(30)], "float32",
     "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
     "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
     "        28., 29.])"),
    (list(range(2000)), "int64", "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
    ([float(i) for i in range(1, 31)], "float64",
     "tensor([ 1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13., 14.,\n"
     "        15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27., 28.,\n"
     "        29., 30.], dtype=torch.float64)"),
]


def main():
    fails = []
    for vals, dtype, want in REPRS:
        got = dc.torch_repr(vals, dtype)
        if got != want:
            fails.append("torch_repr(%r, %s):\n  got  %r\n  want %r" % (vals[:8], dtype, got, want))
        t = dc.parse_value(want)
        flat = t.values
        if Ellipsis not in flat:
            same = len(flat) == len(vals) and all(
                (math.isnan(a) and math.isnan(b)) if isinstance(b, float) and math.isnan(b)
                else a == b or abs(a - b) <= 6e-5 * max(1.0, abs(b))
                for a, b in zip(flat, vals))
            if not same:
                fails.append("parse_value(%r) gave %r" % (want, flat))
        want_suffix = dtype if (dtype not in dc.DEFAULT_PRINT_DTYPES or
                                (not vals and dtype != "float32")) else None
        if t.dtype_suffix != want_suffix:
            fails.append("parse_value(%r): dtype %r" % (want, t.dtype_suffix))
    lst = dc.parse_value("[tensor([1, 2]), tensor([3., 4.], dtype=torch.float16), []]")
    if not (len(lst) == 3 and lst[0].values == [1, 2] and lst[1].dtype_suffix == "float16"
            and lst[2] == []):
        fails.append("parse_value of a list gave %r" % (lst,))
    if dc.parse_value("tensor([[1, 2],\n        [3, 4]])").values != [[1, 2], [3, 4]]:
        fails.append("parse_value of a 2-D tensor")
    for text in ("tensor([1, 2)", "tensor([1 2])", "tensor([1, 2]) x", "[tensor([1])"):
        try:
            dc.parse_value(text)
            fails.append("parse_value(%r) should fail" % text)
        except dc.ParseError:
            pass
    ok = dc.same_text_modulo_indent("tensor([1,\n        2])", "tensor([1,\n                2])")
    bad = dc.same_text_modulo_indent("tensor([1,\n        2,\n        3])",
                                     "tensor([1,\n          2,\n         3])")
    if not ok or bad:
        fails.append("same_text_modulo_indent")
    arith = [
        (dc.wrap_int(128, "int8"), -128), (dc.wrap_int(-1, "uint8"), 255),
        (dc.wrap_int(2 ** 63, "int64"), -2 ** 63), (dc.convert(300, "uint8"), 44),
        (dc.convert(257, "bfloat16"), 256.0), (dc.convert(259, "bfloat16"), 260.0),
        (dc.convert(2049, "float16"), 2048.0), (dc.convert(70000, "float16"), INF),
        (dc.round_float(16777217, "float32"), 16777216.0), (dc.convert(0, "bool"), False),
    ]
    for got, want in arith:
        if got != want:
            fails.append("arithmetic: got %r want %r" % (got, want))
    for f in fails:
        print("FAIL: " + f)
    print("dlcheck self-test: %d checks, %d failures" % (len(REPRS) * 3 + 8 + len(arith), len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
