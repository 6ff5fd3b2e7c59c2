#!/usr/bin/env python3
"""The benchmark scripts under tests/bench/ run and say what they measure.

Each script runs once with the smallest sizes and iteration counts (a few
seconds in all; the figures themselves mean nothing at these counts), and
its table is read back:

- shm_floor.py: a row per np, and its two fractions are the floor's time
  and the synced floor's time over distlab's, as printed beside them;
- colls_vs_mpi.py (with Open MPI built): a table per collective with a row
  per size, each ratio distlab's time over MPI's, and the summary of rows
  where MPI is more than 10% faster;
- allreduce_vs_mpi.py (with Open MPI built): a row per size, its `bw
  builtin/mpi` MPI's time over the engine's and its `time on-mpi/mpi` the
  mpi backend's time over the bare loop's;
- the floor program refuses a malformed call in one usage line;
- cuda_share.sh (on a machine with a GPU and NVIDIA's MPS): a row per
  collective, its ratio the time-sliced median over the MPS one.

A ratio read the wrong way round (a label that says one thing and a figure
that is the other) is what this catches: every benchmark figure in
docs/benchmarks.md comes from these tables. Without Open MPI the MPI parts
are skipped, with the reason.

usage: test_bench_scripts.py DISTLAB_EXE
"""

import argparse
import os
import shutil
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlcheck as dc  # noqa: E402

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench")

failures = []


def fail(r, what):
    failures.append("%s\n    $ %s\n    rc=%s\n    stdout: %s\n    stderr: %s" %
                    (what, r.cmd if r else "", r.rc if r else "",
                     r.out.strip()[-800:] if r else "", r.err.strip()[-600:] if r else ""))


def script(name, *args):
    return dc.run([sys.executable, os.path.join(BENCH, name)] + list(args), timeout=180)


def close(ratio, num, den, printed_digits):
    """Whether a printed ratio is num / den, given that num and den were
    printed rounded (to printed_digits decimals)."""
    if den <= 0:
        return False
    half = 0.5 * 10 ** -printed_digits
    lo = max(num - half, 0) / (den + half)
    hi = (num + half) / max(den - half, 1e-9)
    return lo - 0.011 <= ratio <= hi + 0.011


def rows_after(lines, header_start):
    """The data rows (split) of the table whose header line starts with
    header_start (stripped), up to the first blank line."""
    out = []
    for i, line in enumerate(lines):
        if line.strip().startswith(header_start):
            for row in lines[i + 1:]:
                if not row.strip():
                    break
                out.append(row.split())
            break
    return out


def check_floor(build):
    r = script("shm_floor.py", "--np", "2", "3", "--sizes", "64K", "--pairs", "1", "-n", "2",
               "-w", "1", "--build", build)
    if r.rc != 0:
        return fail(r, "shm_floor.py failed")
    rows = rows_after(r.out.splitlines(), "np")
    if [row[0] for row in rows] != ["2", "3"]:
        return fail(r, "shm_floor.py: expected one row for np 2 and one for np 3")
    for row in rows:
        # np, size (2 words), floor us, distlab us, floor bw, distlab bw,
        # fraction, range, synced us, of synced
        if len(row) != 11:
            return fail(r, "shm_floor.py: a row of %d fields, expected 11: %s" % (len(row), row))
        floor, distlab, fraction = float(row[3]), float(row[4]), float(row[7])
        synced, of_synced = float(row[9]), float(row[10])
        if not close(fraction, floor, distlab, 1):
            fail(r, "shm_floor.py: fraction %s is not floor / distlab (%s / %s)" %
                 (fraction, floor, distlab))
        if not close(of_synced, synced, distlab, 1):
            fail(r, "shm_floor.py: of synced %s is not synced / distlab (%s / %s)" %
                 (of_synced, synced, distlab))
    exe = os.path.join(build, "tests", "bench", "shm_floor")
    r = dc.run([exe, "2", "65536", "2", "1", "sycned"], timeout=30)
    if r.rc != 2 or r.out or len(r.err.strip().splitlines()) != 1 or "usage" not in r.err:
        fail(r, "shm_floor with a misspelt 'synced': expected one usage line and exit 2")


def check_colls(build):
    r = script("colls_vs_mpi.py", "--coll", "scatter", "all_reduce", "--np", "2", "-b", "8",
               "-e", "16", "-n", "20", "-w", "2", "--repeat", "1", "--build", build)
    if r.rc != 0:
        return fail(r, "colls_vs_mpi.py failed")
    lines = r.out.splitlines()
    for coll, mpi_name in (("scatter", "MPI_Scatter"), ("all_reduce", "MPI_Allreduce")):
        title = [i for i, line in enumerate(lines)
                 if line.startswith("%s vs %s, np=2" % (coll, mpi_name))]
        if not title:
            fail(r, "colls_vs_mpi.py: no table for %s at np=2" % coll)
            continue
        rows = rows_after(lines[title[0]:], "size")
        if not rows or any(len(row) != 5 for row in rows):
            fail(r, "colls_vs_mpi.py: %s rows malformed: %s" % (coll, rows))
            continue
        for row in rows:
            dl, mpi, ratio = float(row[2]), float(row[3]), float(row[4])
            if not close(ratio, dl, mpi, 2):
                fail(r, "colls_vs_mpi.py: %s %s: ratio %s is not distlab / mpi (%s / %s)" %
                     (coll, " ".join(row[:2]), ratio, dl, mpi))
    if not any(line.startswith("where MPI is more than 10% faster") for line in lines):
        fail(r, "colls_vs_mpi.py: no summary of the rows where MPI is faster")


def check_allreduce(build):
    r = script("allreduce_vs_mpi.py", "--np", "2", "-b", "8", "-e", "16", "-n", "20", "-w", "2",
               "--repeat", "1", "--build", build)
    if r.rc != 0:
        return fail(r, "allreduce_vs_mpi.py failed")
    rows = rows_after(r.out.splitlines(), "size")
    if [" ".join(row[:2]) for row in rows] != ["8 B", "16 B"]:
        return fail(r, "allreduce_vs_mpi.py: expected rows for 8 B and 16 B")
    for row in rows:
        # size (2 words), builtin us, on-mpi us, mpi us, 3 busbw, 2 ratios
        if len(row) != 10:
            return fail(r, "allreduce_vs_mpi.py: a row of %d fields, expected 10" % len(row))
        builtin, on_mpi, mpi = float(row[2]), float(row[3]), float(row[4])
        if not close(float(row[8]), mpi, builtin, 2):
            fail(r, "allreduce_vs_mpi.py: bw builtin/mpi %s is not mpi / builtin time (%s / %s)"
                 % (row[8], mpi, builtin))
        if not close(float(row[9]), on_mpi, mpi, 2):
            fail(r, "allreduce_vs_mpi.py: time on-mpi/mpi %s is not on-mpi / mpi (%s / %s)" %
                 (row[9], on_mpi, mpi))


def gpus():
    if shutil.which("nvidia-smi") is None:
        return 0
    r = dc.run(["nvidia-smi", "-L"], timeout=30)
    return sum(1 for l in r.out.splitlines() if l.startswith("GPU "))


def check_cuda_share(build):
    """cuda_share.sh: a row per collective, its ratio the time-sliced
    median over the MPS one, and bench saw the MPS server."""
    r = dc.run(["bash", os.path.join(BENCH, "cuda_share.sh"), "-B", build, "-N", "-r", "1",
                "-c", "all_reduce"], timeout=300)
    if r.rc == 77:
        print("skipped: cuda_share.sh (%s)" % r.err.strip())
        return
    rows = rows_after(r.out.splitlines(), "collective")
    if r.rc != 0 or len(rows) != 1 or rows[0][0] != "all_reduce":
        return fail(r, "cuda_share.sh: one all_reduce row")
    row = rows[0]
    a, b, ratio = float(row[1]), float(row[2]), float(row[3])
    if not close(ratio, a, b, 2):
        fail(r, "cuda_share.sh: ratio %s is not %s / %s" % (ratio, a, b))
    if "did not see MPS" in r.out:
        fail(r, "cuda_share.sh: distlab bench did not note the MPS server")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    a = ap.parse_args()
    build = os.path.dirname(os.path.dirname(os.path.abspath(a.exe)))
    check_floor(build)
    mpi_colls = os.path.join(build, "tests", "bench", "mpi_colls")
    if shutil.which("mpirun") is None or not os.path.exists(mpi_colls):
        print("skipped: colls_vs_mpi.py and allreduce_vs_mpi.py (this build has no Open MPI)")
    else:
        check_colls(build)
        check_allreduce(build)
    if gpus() == 0:
        print("skipped: cuda_share.sh and nccl_overhead.sh (no GPU here)")
    else:
        check_cuda_share(build)
    for f in failures:
        print("FAIL: " + f)
    print("bench scripts: %s" % ("ok" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
