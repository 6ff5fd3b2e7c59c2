#!/usr/bin/env python3
"""distlab's start-up against mpirun's, side by side.

Times `distlab run all_reduce --np N` (the whole job: spawning the ranks,
connecting them, one all_reduce, the report, every rank gone) for N in 4,
16, 64 and 128, and `mpirun -np N mpi_hello` (MPI_Init, a barrier,
MPI_Finalize) for N in 4 and 64, R runs each, interleaved so that both see
the same machine. All output is collected first and parsed afterwards.
Prints the median wall times, the ratios mpirun/distlab at 4 and 64 ranks
(above 1: distlab starts faster) and distlab's np128/np64 (2: cost linear
in the number of ranks).

Builds nothing: run `ninja -C DIR` first.

usage: startup.py [--build DIR] [--runs R]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import mpirun  # noqa: E402

DISTLAB_NP = (4, 16, 64, 128)
MPI_NP = (4, 64)


def timed(cmd):
    """Runs cmd, returns (seconds, returncode, output)."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    return time.perf_counter() - t0, p.returncode, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="meson build directory (default build)")
    ap.add_argument("--runs", type=int, default=8, help="runs of each job (default 8)")
    args = ap.parse_args()

    distlab = os.path.join(args.build, "cli", "distlab")
    hello = os.path.join(args.build, "tests", "bench", "mpi_hello")
    for exe in (distlab, hello):
        if not os.access(exe, os.X_OK):
            sys.exit(f"startup.py: {exe} is missing: build {args.build} first")

    jobs = [(f"distlab --np {n}", [distlab, "run", "all_reduce", "--np", str(n)])
            for n in DISTLAB_NP]
    jobs += [(f"mpirun -np {n}", mpirun(n) + [hello]) for n in MPI_NP]

    # Run everything first; parse afterwards.
    results = {name: [] for name, _ in jobs}
    for _ in range(args.runs):
        for name, cmd in jobs:
            results[name].append(timed(cmd))

    med = {}
    for name, cmd in jobs:
        bad = [r for r in results[name] if r[1] != 0]
        if bad:
            sys.exit(f"startup.py: `{' '.join(cmd)}` exited {bad[0][1]}:\n"
                     f"{bad[0][2].decode(errors='replace')[-2000:]}")
        med[name] = statistics.median(r[0] for r in results[name])

    print(f"median of {args.runs} runs, wall time of the whole job")
    print(f"{'job':<20} {'median ms':>10}")
    for name, _ in jobs:
        print(f"{name:<20} {med[name] * 1e3:10.1f}")
    for n in MPI_NP:
        ratio = med[f"mpirun -np {n}"] / med[f"distlab --np {n}"]
        print(f"mpirun/distlab at np {n}: {ratio:.1f}x")
    print(f"distlab np128/np64: {med['distlab --np 128'] / med['distlab --np 64']:.2f}x")


if __name__ == "__main__":
    main()
