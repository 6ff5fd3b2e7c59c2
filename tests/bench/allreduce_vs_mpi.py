#!/usr/bin/env python3
"""distlab's all_reduce against OpenMPI's MPI_Allreduce, side by side.

Runs `distlab bench all_reduce` (builtin backend), the same on the mpi
backend (`--backend mpi`: MPI through distlab's harness) and the
mpi_allreduce reference (a bare MPI_Allreduce loop) over the same sizes
(float32, sum, in place), one after the other on this machine, and prints
the times, the bus bandwidths (nccl-tests' definition, 2(n-1)/n), the ratio
builtin/MPI of the bus bandwidth (above 1: distlab's engine is faster) and
the ratio of the times distlab-on-mpi / MPI (near 1: the harness adds
nothing to what MPI does).

Each repeat runs the sides back to back (a pair); the times printed are the
medians over the repeats, and the ratios the medians of each pair's ratio,
so that a drift of the machine during one repeat moves neither. With
--n-small, sizes up to --split run in a separate invocation with that many
iterations, so that a call of a microsecond is timed over enough calls.
--sides picks the sides (builtin, mpi-backend and the bare loop by default).

usage: allreduce_vs_mpi.py [--np N ...] [-b 8] [-e 64M] [-n ITERS] [-w WARMUP]
                           [--n-small ITERS --split 64K] [--sides builtin on-mpi]
                           [--build DIR] [--repeat R]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import add_build_arg, human, mpirun, parse_size, programs  # noqa: E402


def run_distlab(exe, np, lo, hi, iters, warmup, backend="builtin"):
    out = subprocess.run([exe, "bench", "all_reduce", "--np", str(np), "-b", str(lo), "-e",
                          str(hi), "-f", "2", "--dtype", "float32", "-n", str(iters), "-w",
                          str(warmup), "--json", "--backend", backend], check=True,
                         capture_output=True, text=True)
    doc = json.loads(out.stdout)
    return {row["size"]: row["time_us"] for row in doc["rows"]}


def run_mpi(exe, np, lo, hi, iters, warmup):
    cmd = mpirun(np) + [exe, str(lo), str(hi), str(iters), str(warmup)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    times = {}
    for line in out.stdout.split("\n"):
        parts = line.split()
        if len(parts) == 2:
            times[int(parts[0])] = float(parts[1])
    return times


def ranges(lo, hi, n, n_small, split):
    """(lo, hi, iters) invocations: the small sizes apart when n_small is set."""
    if not n_small or split < lo:
        return [(lo, hi, n)]
    if split >= hi:
        return [(lo, hi, n_small)]
    first = lo
    while first * 2 <= split:
        first *= 2
    return [(lo, first, n_small), (first * 2, hi, n)]


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--np", type=int, nargs="+", default=[2, 4])
    ap.add_argument("-b", default="8")
    ap.add_argument("-e", default="64M")
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("-w", type=int, default=5)
    ap.add_argument("--n-small", type=int, default=0,
                    help="iterations for the sizes up to --split (0: -n for all)")
    ap.add_argument("--split", default="64K")
    ap.add_argument("--sides", nargs="+", default=["builtin", "on-mpi"],
                    choices=["builtin", "on-mpi"],
                    help="distlab's sides to run beside the bare MPI loop")
    ap.add_argument("--repeat", type=int, default=3,
                    help="run each side this many times, in pairs; print medians")
    add_build_arg(ap)
    args = ap.parse_args()
    distlab, ref = programs(args.build, "mpi_allreduce")
    if ref is None:
        return 0
    lo, hi = parse_size(args.b), parse_size(args.e)
    runs = ranges(lo, hi, args.n, args.n_small, parse_size(args.split))
    for np in args.np:
        # side -> size -> [time per repeat]
        times = {"builtin": {}, "on-mpi": {}, "mpi": {}}
        for _ in range(args.repeat):
            for a, b, n in runs:
                # The sides alternate within a repeat, so that drifts in the
                # machine hit all of them alike.
                got = {}
                if "builtin" in args.sides:
                    got["builtin"] = run_distlab(distlab, np, a, b, n, args.w)
                if "on-mpi" in args.sides:
                    got["on-mpi"] = run_distlab(distlab, np, a, b, n, args.w, "mpi")
                got["mpi"] = run_mpi(ref, np, a, b, n, args.w)
                for side, rows in got.items():
                    for size, t in rows.items():
                        times[side].setdefault(size, []).append(t)
        factor = 2.0 * (np - 1) / np
        iters = " / ".join("%d (%s to %s)" % (n, human(a), human(b)) for a, b, n in runs)
        print(f"\nall_reduce float32 sum in place, np={np}, median of {args.repeat} paired runs "
              f"of {iters} iterations; busbw in GB/s")
        print(f"{'size':>10} {'builtin us':>11} {'on-mpi us':>10} {'mpi us':>9} "
              f"{'builtin':>8} {'on-mpi':>7} {'mpi':>7} {'bw builtin/mpi':>15} {'time on-mpi/mpi':>16}")
        nan = float("nan")
        for size in sorted(times["mpi"]):
            tm_runs = times["mpi"][size]
            td_runs = times["builtin"].get(size, [])
            tb_runs = times["on-mpi"].get(size, [])
            td, tb, tm = median(td_runs), median(tb_runs), median(tm_runs)
            bd, bb, bm = (size / t / 1e3 * factor if t == t else nan for t in (td, tb, tm))
            # Per pair: the builtin engine's bus bandwidth over MPI's (MPI's time over
            # the engine's; above 1: the engine is faster), and the mpi backend's time
            # over the bare loop's (above 1: the harness costs; at most 1.3 is the target).
            r_d = median([m / d for d, m in zip(td_runs, tm_runs)])
            r_b = median([b / m for b, m in zip(tb_runs, tm_runs)])
            print(f"{human(size):>10} {td:11.2f} {tb:10.2f} {tm:9.2f} {bd:8.2f} {bb:7.2f} "
                  f"{bm:7.2f} {r_d:15.2f} {r_b:16.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
