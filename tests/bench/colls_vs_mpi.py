#!/usr/bin/env python3
"""Every collective of distlab's builtin engine against its OpenMPI twin, side by side.

For each collective and rank count, runs `distlab bench COLL --np N --json`
(builtin backend, float32, sum, root 0) and the mpi_colls reference (a bare
loop over the MPI call, see tests/bench/mpi_colls.c) over the same sizes with
the same warm-up and iteration counts, as OSU's micro-benchmarks pair them:

    broadcast MPI_Bcast, reduce MPI_Reduce, all_reduce MPI_Allreduce,
    all_gather MPI_Allgather, reduce_scatter MPI_Reduce_scatter_block,
    all_to_all MPI_Alltoall, gather MPI_Gather, scatter MPI_Scatter,
    barrier MPI_Barrier.

A size means what it means to `distlab bench` and nccl-tests, on both
sides: the whole output of all_gather and gather (size / n bytes from each
rank), the whole input of reduce_scatter, all_to_all and scatter (size / n
bytes to or from each rank), the one buffer of the others.

The two sides alternate, each run --repeat times, and the best (smallest)
time per size is kept: on a shared machine noise only ever adds time. With
--stat median the median of the runs is kept instead: on 2 cores where a
run's ranks land (two on one core, or the host moving cache lines more
slowly for a while) moves a small size by 2 to 25 times for the whole run,
so that the best of a few runs says which side was luckier; the median of
many (--repeat 10, -n 20000) says which is faster.
Iterations follow OSU's defaults: sizes up to 8 KiB run 1000 calls after
200 warm-up calls, larger ones 100 after 10, and from --split up
--iters-large / --warmup-large (5 / 2), so that a whole sweep stays short.
(100 calls of 0.1 us are 10 us, which one scheduler tick or a peer's late
start fills: the smallest sizes need the 1000.) -n / -w, when given, set
the calls of every size below --split. Every child's output is collected
first and parsed afterwards. Prints, per collective and rank count, size / distlab us /
mpi us / ratio (distlab / mpi: above 1, MPI is faster), then every
(collective, np, size) where MPI is more than 10% faster.

usage: colls_vs_mpi.py [--coll C ...] [--np N ...] [-b 8] [-e 64M] [--repeat R]
                       [--stat best|median]
                       [-n ITERS] [-w WARMUP] [--split 8M] [--iters-large N]
                       [--warmup-large N] [--build DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import add_build_arg, human, mpirun, parse_size, programs  # noqa: E402

COLLS = ["broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
         "gather", "scatter", "barrier"]
MPI_NAME = {"broadcast": "MPI_Bcast", "reduce": "MPI_Reduce", "all_reduce": "MPI_Allreduce",
            "all_gather": "MPI_Allgather", "reduce_scatter": "MPI_Reduce_scatter_block",
            "all_to_all": "MPI_Alltoall", "gather": "MPI_Gather", "scatter": "MPI_Scatter",
            "barrier": "MPI_Barrier"}


# OSU's LARGE_MESSAGE_SIZE: sizes above it run fewer calls.
OSU_LARGE = 8192


def distlab_cmd(exe, coll, np, lo, hi, iters, warmup):
    return [exe, "bench", coll, "--np", str(np), "-b", str(lo), "-e", str(hi), "-f", "2",
            "--dtype", "float32", "-n", str(iters), "-w", str(warmup), "--json", "--backend",
            "builtin"]


def mpi_cmd(exe, coll, np, lo, hi, iters, warmup):
    return mpirun(np) + [exe, coll, str(lo), str(hi), str(iters), str(warmup)]


def parse_distlab(text):
    return {row["size"]: row["time_us"] for row in json.loads(text)["rows"]}


def parse_mpi(text):
    times = {}
    for line in text.split("\n"):
        parts = line.split()
        if len(parts) == 2:
            times[int(parts[0])] = float(parts[1])
    return times


def run(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stderr.strip()}")
    return out.stdout


def ranges(args, coll):
    """(lo, hi, iters, warmup) sweeps that together cover -b..-e."""
    lo, hi = parse_size(args.b), parse_size(args.e)
    if coll == "barrier":
        return [(8, 8, args.n or 1000, args.w if args.w is not None else 200)]  # size 0
    below = parse_size(args.split) // 2
    if args.n is None and args.w is None:
        bands = [(OSU_LARGE, 1000, 200), (below, 100, 10)]
    else:
        bands = [(below, args.n or 100, args.w if args.w is not None else 10)]
    bands.append((hi, args.iters_large, args.warmup_large))
    out = []
    for top, iters, warmup in bands:
        if lo <= min(top, hi):
            out.append((lo, min(top, hi), iters, warmup))
            while lo <= min(top, hi):  # the next band starts at the next size
                lo *= 2
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--coll", nargs="+", default=COLLS, choices=COLLS)
    ap.add_argument("--np", type=int, nargs="+", default=[2, 3, 4])
    ap.add_argument("-b", default="8")
    ap.add_argument("-e", default="64M")
    ap.add_argument("-n", type=int, help="timed calls per size below --split (default: "
                    "1000 up to 8 KiB, 100 above, as OSU's)")
    ap.add_argument("-w", type=int, help="warm-up calls per size below --split (default: "
                    "200 up to 8 KiB, 10 above)")
    ap.add_argument("--split", default="8M")
    ap.add_argument("--iters-large", type=int, default=5)
    ap.add_argument("--warmup-large", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3,
                    help="run each side this many times and keep the best time per size")
    ap.add_argument("--stat", choices=["best", "median"], default="best",
                    help="what of the --repeat runs a size keeps: the best, or the median "
                    "(with many runs: on 2 cores a run's placement moves small sizes by "
                    "2 to 25 times, and the best of a few measures luck)")
    add_build_arg(ap)
    args = ap.parse_args()
    distlab, ref = programs(args.build, "mpi_colls")
    if ref is None:
        return 0

    # Run everything first; parse afterwards.
    raw = []  # (coll, np, side, text)
    for np in args.np:
        for coll in args.coll:
            for _ in range(args.repeat):
                # Alternate the sides so that drifts in the machine hit both.
                for lo, hi, iters, warmup in ranges(args, coll):
                    raw.append((coll, np, "d", run(distlab_cmd(distlab, coll, np, lo, hi, iters,
                                                               warmup))))
                    raw.append((coll, np, "m", run(mpi_cmd(ref, coll, np, lo, hi, iters,
                                                           warmup))))

    runs = {}  # (coll, np, side) -> size -> [time of each run]
    for coll, np, side, text in raw:
        times = parse_distlab(text) if side == "d" else parse_mpi(text)
        cell = runs.setdefault((coll, np, side), {})
        for size, t in times.items():
            cell.setdefault(size, []).append(t)
    keep = min if args.stat == "best" else statistics.median
    best = {key: {size: keep(ts) for size, ts in cell.items()} for key, cell in runs.items()}

    losses = []
    for np in args.np:
        for coll in args.coll:
            d, m = best.get((coll, np, "d"), {}), best.get((coll, np, "m"), {})
            print(f"\n{coll} vs {MPI_NAME[coll]}, np={np}, float32, {args.stat} of {args.repeat} "
                  f"runs; ratio = distlab / mpi (above 1: MPI is faster)")
            print(f"{'size':>10} {'distlab us':>11} {'mpi us':>10} {'ratio':>7}")
            for size in sorted(set(d) | set(m)):
                if size not in d or size not in m:
                    print(f"{human(size):>10} {'missing on one side':>30}")
                    continue
                ratio = d[size] / m[size] if m[size] > 0 else float("inf")
                print(f"{human(size):>10} {d[size]:11.2f} {m[size]:10.2f} {ratio:7.2f}")
                if ratio > 1.1:
                    losses.append((coll, np, size, d[size], m[size], ratio))

    print("\nwhere MPI is more than 10% faster:")
    if not losses:
        print("  nowhere")
    for coll, np, size, td, tm, ratio in losses:
        print(f"  {coll:>14} np={np} {human(size):>10}: distlab {td:.2f} us, mpi {tm:.2f} us, "
              f"ratio {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
