"""What the benchmark scripts under tests/bench/ share: sizes as typed
(8, 64K, 16M) and as printed, the build they measure, and how they find and
start an MPI reference program."""
import os
import shutil


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
    cores; they are bound as mpirun binds them by default (each to a core
    where they fit the cores, as distlab's are, else not at all; distlab
    also binds ranks that split evenly over the cores); as root it must be
    told it may run."""
    cmd = ["mpirun", "-np", str(np), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def add_build_arg(ap):
    """--build: the meson build directory whose distlab and reference
    programs a script runs (default: the source tree's build/)."""
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                     "build"))


def programs(build, name):
    """distlab's path in build and the bare MPI program tests/bench/NAME's,
    or None for the second after saying why the comparison is skipped."""
    return os.path.join(build, "cli", "distlab"), mpi_reference(build, name)


def mpi_reference(build, name):
    """The path of the bare MPI program tests/bench/NAME in build, or None
    after saying why the comparison is skipped (no mpirun, or not built)."""
    ref = os.path.join(build, "tests", "bench", name)
    if not shutil.which("mpirun") or not os.path.exists(ref):
        print("skipped: OpenMPI (mpirun) or the %s reference is not built" % name)
        return None
    return ref
