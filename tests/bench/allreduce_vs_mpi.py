#!/usr/bin/env python3
"""distlab's all_reduce against OpenMPI's MPI_Allreduce, side by side.

Runs `distlab bench all_reduce` (builtin backend), the same on the mpi
backend (`--backend mpi`: MPI through distlab's harness) and the
mpi_allreduce reference (a bare MPI_Allreduce loop) over the same sizes
(float32, sum, in place), one after the other on this machine, and prints
the times, the bus bandwidths (nccl-tests' definition, 2(n-1)/n), the ratio
builtin/MPI of the bus bandwidth (above 1: distlab's engine is faster) and
the ratio distlab-on-mpi/MPI (near 1: the harness measures what MPI does).

usage: allreduce_vs_mpi.py [--np N ...] [-b 8] [-e 64M] [-n ITERS] [-w WARMUP]
                           [--build DIR] [--repeat R]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * mult[s[-1].upper()]) if s[-1].upper() in mult else int(s)


def run_distlab(exe, np, lo, hi, iters, warmup, backend="builtin"):
    out = subprocess.run([exe, "bench", "all_reduce", "--np", str(np), "-b", str(lo), "-e",
                          str(hi), "-f", "2", "--dtype", "float32", "-n", str(iters), "-w",
                          str(warmup), "--json", "--backend", backend], check=True,
                         capture_output=True, text=True)
    doc = json.loads(out.stdout)
    return {row["size"]: row["time_us"] for row in doc["rows"]}


def run_mpi(exe, np, lo, hi, iters, warmup):
    cmd = ["mpirun", "-np", str(np), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += [exe, str(lo), str(hi), str(iters), str(warmup)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    times = {}
    for line in out.stdout.split("\n"):
        parts = line.split()
        if len(parts) == 2:
            times[int(parts[0])] = float(parts[1])
    return times


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}"
        n /= 1024
    return str(n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--np", type=int, nargs="+", default=[2, 4])
    ap.add_argument("-b", default="8")
    ap.add_argument("-e", default="64M")
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("-w", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3,
                    help="run each side this many times and keep the best time per size")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                     "build"))
    args = ap.parse_args()
    distlab = os.path.join(args.build, "cli", "distlab")
    ref = os.path.join(args.build, "tests", "bench", "mpi_allreduce")
    if not shutil.which("mpirun") or not os.path.exists(ref):
        print("skipped: OpenMPI (mpirun) or the mpi_allreduce reference is not built")
        return 0
    lo, hi = parse_size(args.b), parse_size(args.e)
    for np in args.np:
        best_d, best_b, best_m = {}, {}, {}
        for _ in range(args.repeat):
            # Alternate the sides so that drifts in the machine hit all of them.
            for size, t in run_distlab(distlab, np, lo, hi, args.n, args.w).items():
                best_d[size] = min(t, best_d.get(size, t))
            for size, t in run_distlab(distlab, np, lo, hi, args.n, args.w, "mpi").items():
                best_b[size] = min(t, best_b.get(size, t))
            for size, t in run_mpi(ref, np, lo, hi, args.n, args.w).items():
                best_m[size] = min(t, best_m.get(size, t))
        factor = 2.0 * (np - 1) / np
        print(f"\nall_reduce float32 sum in place, np={np}, best of {args.repeat} runs "
              f"of {args.n} iterations; busbw in GB/s")
        print(f"{'size':>10} {'builtin us':>11} {'on-mpi us':>10} {'mpi us':>9} "
              f"{'builtin':>8} {'on-mpi':>7} {'mpi':>7} {'builtin/mpi':>12} {'on-mpi/mpi':>11}")
        for size in sorted(best_d):
            if size not in best_m or size not in best_b:
                continue
            td, tb, tm = best_d[size], best_b[size], best_m[size]
            bd, bb, bm = (size / t / 1e3 * factor for t in (td, tb, tm))
            print(f"{human(size):>10} {td:11.2f} {tb:10.2f} {tm:9.2f} {bd:8.2f} {bb:7.2f} "
                  f"{bm:7.2f} {tm / td:12.2f} {tm / tb:11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
