#!/usr/bin/env python3
"""distlab's shared-memory all_reduce as a fraction of the memory floor.

The floor (tests/bench/shm_floor.c) is the ideal zero-copy all_reduce: N
processes share one mapping that holds every rank's buffer, and each rank
sums its 1/N share straight out of all N buffers and writes the sum into
all N, so each byte is read once and written once. distlab's side is
`distlab bench all_reduce --np N -b SIZE -e SIZE --dtype float32 --json`
(builtin backend, shared memory). Both run float32 sum in place, with the
same warm-up and timed calls.

This machine's memory speed drifts from minute to minute, so the two sides
run in pairs (floor, distlab, floor, distlab, ...) and the script prints
the median of the pairs' ratios, floor time / distlab time: 1.0 means
distlab runs at the floor. Each child's output is collected whole before it
is parsed, so that nothing else runs beside a measurement.

The floor's ranks never wait for one another, which no all_reduce can do:
each call needs its peers' inputs, and its result needs every peer's
share. Each pair is therefore followed by the synced floor (`shm_floor ...
synced`: one barrier at the start of every call, the least a correct loop
needs), and the last column gives distlab's time as a fraction of that:
where ranks outnumber cores, that barrier is a round of context switches.

usage: shm_floor.py [--np N ...] [--sizes SIZE ...] [--pairs P] [-n ITERS] [-w WARMUP]
                    [--build DIR] [--distlab EXE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import add_build_arg, human, parse_size  # noqa: E402


def run_floor(exe, np, size, iters, warmup, synced=False):
    out = subprocess.run([exe, str(np), str(size), str(iters), str(warmup)] +
                         (["synced"] if synced else []), check=True,
                         capture_output=True, text=True).stdout
    return float(out.split()[1])


def run_distlab(exe, np, size, iters, warmup):
    out = subprocess.run([exe, "bench", "all_reduce", "--np", str(np), "-b", str(size), "-e",
                          str(size), "--dtype", "float32", "-n", str(iters), "-w", str(warmup),
                          "--transport", "shm", "--backend", "builtin", "--json"], check=True,
                         capture_output=True, text=True).stdout
    rows = json.loads(out)["rows"]
    if rows[0].get("wrong", 0):
        sys.exit(f"distlab bench reported {rows[0]['wrong']} wrong elements")
    return rows[0]["time_us"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--np", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--sizes", nargs="+", default=["16M"])
    ap.add_argument("--pairs", type=int, default=5, help="floor/distlab pairs per point")
    ap.add_argument("-n", type=int, default=20, help="timed calls per run")
    ap.add_argument("-w", type=int, default=5, help="warm-up calls per run")
    add_build_arg(ap)
    ap.add_argument("--distlab", help="the distlab binary to measure (default: BUILD/cli/distlab)")
    args = ap.parse_args()
    distlab = args.distlab or os.path.join(args.build, "cli", "distlab")
    floor = os.path.join(args.build, "tests", "bench", "shm_floor")
    for exe in (distlab, floor):
        if not os.path.exists(exe):
            sys.exit(f"{exe} is not built (ninja -C {args.build})")
    results = []
    for np in args.np:
        for size in (parse_size(s) for s in args.sizes):
            pairs = []
            for _ in range(args.pairs):
                pairs.append((run_floor(floor, np, size, args.n, args.w),
                              run_distlab(distlab, np, size, args.n, args.w),
                              run_floor(floor, np, size, args.n, args.w, synced=True)))
            results.append((np, size, pairs))
    # Everything is measured; only now is it turned into figures.
    print(f"all_reduce float32 sum in place, shared memory, {args.pairs} pairs of "
          f"{args.n} calls; busbw in GB/s; fraction = floor time / distlab time; "
          f"of synced = synced floor time / distlab time")
    print(f"{'np':>3} {'size':>9} {'floor us':>9} {'distlab us':>11} {'floor bw':>9} "
          f"{'distlab bw':>11} {'fraction':>9} {'range':>12} {'synced us':>10} {'of synced':>10}")
    for np, size, pairs in results:
        factor = 2.0 * (np - 1) / np
        tf = statistics.median(p[0] for p in pairs)
        td = statistics.median(p[1] for p in pairs)
        ts = statistics.median(p[2] for p in pairs)
        ratios = [p[0] / p[1] for p in pairs]
        synced = statistics.median(p[2] / p[1] for p in pairs)
        print(f"{np:>3} {human(size):>9} {tf:9.1f} {td:11.1f} {size / tf / 1e3 * factor:9.2f} "
              f"{size / td / 1e3 * factor:11.2f} {statistics.median(ratios):9.2f} "
              f"{min(ratios):5.2f}-{max(ratios):.2f} {ts:10.1f} {synced:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
