"""What the benchmark scripts under tests/bench/ share: sizes as typed
(8, 64K, 16M) and as printed, and how they start an MPI reference program."""
import os


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * mult[s[-1].upper()]) if s[-1].upper() in mult else int(s)


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}"
        n /= 1024
    return str(n)


def mpirun(np):
    """mpirun for np ranks as these scripts run it: ranks may outnumber the
    cores and are not pinned (as distlab's are not); as root it must be told
    it may run."""
    cmd = ["mpirun", "-np", str(np), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd
