#!/usr/bin/env python3
"""One size of each collective under two values of a variable, against MPI, interleaved.

Compares two settings of one of distlab's environment variables (such as
DISTLAB_SHM_FENCE=always and auto) with the same binary, and both with the
mpi_colls reference, for one message size per collective. Each round runs,
for every collective, `distlab bench` with the first value, then with the
second, then the MPI loop, one after the other; the script prints each
side's median over the rounds and the ratios. Alternating within a round
means that the slow and fast phases of a shared machine fall on all three
alike, where two sweeps run minutes apart compare two phases.

A size means what it means to colls_vs_mpi.py. Every child's output is
collected first and parsed afterwards.

usage: env_vs_mpi.py VAR VALUE_A VALUE_B [--coll C ...] [--np N] [--size 16]
                     [--rounds 8] [-n 200000] [-w 1000] [--build DIR]
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import add_build_arg, parse_size, programs  # noqa: E402
from colls_vs_mpi import (COLLS, distlab_cmd, mpi_cmd, parse_distlab,  # noqa: E402
                          parse_mpi, run)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("var", help="the environment variable, e.g. DISTLAB_SHM_FENCE")
    ap.add_argument("a", help="its first value (the baseline)")
    ap.add_argument("b", help="its second value")
    ap.add_argument("--coll", nargs="+", default=COLLS, choices=COLLS)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--size", default="16")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("-n", type=int, default=200000)
    ap.add_argument("-w", type=int, default=1000)
    add_build_arg(ap)
    args = ap.parse_args()
    distlab, ref = programs(args.build, "mpi_colls")
    if ref is None:
        return 0
    size = parse_size(args.size)

    # Run everything first; parse afterwards.
    raw = []  # (coll, side, text)
    for _ in range(args.rounds):
        for coll in args.coll:
            sz = 8 if coll == "barrier" else size  # a barrier moves nothing
            for side in (args.a, args.b):
                env = dict(os.environ, **{args.var: side})
                cmd = distlab_cmd(distlab, coll, args.np, sz, sz, args.n, args.w)
                raw.append((coll, side, run(cmd, env)))
            raw.append((coll, "mpi", run(mpi_cmd(ref, coll, args.np, sz, sz, args.n, args.w))))

    times = {}
    for coll, side, text in raw:
        parsed = parse_mpi(text) if side == "mpi" else parse_distlab(text)
        times.setdefault((coll, side), []).extend(parsed.values())
    print(f"np={args.np}, {args.size} B, float32, median of {args.rounds} interleaved rounds "
          f"of {args.n} calls (us)")
    a, b = f"{args.var}={args.a}", f"{args.var}={args.b}"
    print(f"{'collective':>14} {a:>26} {b:>26} {'mpi':>8} {'b/a':>6} {'b/mpi':>6}")
    for coll in args.coll:
        ta, tb, tm = (statistics.median(times[(coll, s)]) for s in (args.a, args.b, "mpi"))
        print(f"{coll:>14} {ta:>26.3f} {tb:>26.3f} {tm:>8.3f} {tb / ta:>6.2f} {tb / tm:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
