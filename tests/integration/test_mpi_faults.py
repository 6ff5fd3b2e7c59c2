#!/usr/bin/env python3
"""The mpi backend's blocking collectives when something goes wrong.

A synchronous collective on the mpi backend is one blocking MPI call, which
cannot be cancelled; a watchdog thread of the rank ends the rank when the
call times out or is interrupted, and mpirun then ends the job. These
checks drive the real binary under mpirun:

  (a) a collective that one rank never joins: the rank in it times out,
      with one line naming the timeout, and everything ends (run, and the
      shell where only rank 0 calls all_reduce with the checks off);
  (b) Ctrl-C during a blocked collective: SIGINT to `distlab run` ends the
      job with its one line and 130; in the shell, the rank in the call
      ends with one line saying it was interrupted;
  (c) a rank killed during a collective is reported by rank, pid and
      signal.

Each ends within the subprocess's timeout (no hang) and leaves no process
behind. No timings are asserted.

usage: test_mpi_faults.py DISTLAB_EXE

Exits 77 (skipped) when mpirun is missing or the binary has no mpi backend.
"""

import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlcheck as dc  # noqa: E402
from dlcheck import check, failures  # noqa: E402

EXE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/cli/distlab"

# Every process this test starts carries this mark in its environment, so
# that leftovers are told apart from other tests' processes running beside.
MARK = "DISTLAB_TEST_MPI_FAULTS_MARK=%d-%d" % (os.getpid(), time.time_ns())


def env_with(extra=None):
    e = dict(os.environ)
    e.update(extra or {})
    name, _, value = MARK.partition("=")
    e[name] = value
    return e


def start(argv, env=None, stdin=subprocess.DEVNULL):
    return subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env_with(env), start_new_session=True)


def finish(p, timeout=60, stdin_text=None):
    """(rc, out, err), or rc None when it did not end in time (then killed)."""
    try:
        out, err = p.communicate(input=stdin_text, timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err


def marked_processes():
    """Processes this test started (ranks, mpirun, controllers) still alive."""
    return dc.marked_processes(MARK)


def none_left(what):
    """Waits a little for the processes to go, then checks that none is left."""
    for _ in range(50):
        left = marked_processes()
        if not left:
            break
        time.sleep(0.1)
    check("%s: no rank and no mpirun is left behind" % what, not left, left)
    for line in left:
        try:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        except OSError:
            pass


def ranks_in_collective(n, timeout=30):
    """Waits until n marked `distlab rank` processes exist (the job is up)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if sum(1 for l in marked_processes() if " rank" in l and "mpirun" not in l) >= n:
            return True
        time.sleep(0.1)
    return False


def lines_with(text, word):
    return [l for l in text.splitlines() if word in l]


if shutil.which("mpirun") is None:
    print("skipped: mpirun (openmpi-bin) is not installed")
    sys.exit(77)
rc, out, _ = finish(start([EXE, "backends", "--json"]))
if rc != 0 or '"mpi"' not in out or re.search(r'"mpi":\s*\{\s*"built":\s*false', out):
    print("skipped: this distlab has no mpi backend")
    sys.exit(77)

# ---- (a) a collective that one rank never joins ----
# Rank 1 hangs as it begins its first step (it never calls MPI_Allreduce)
# while it goes on beating; the others wait in the blocking call.
rc, out, err = finish(start([EXE, "run", "all_reduce", "--np", "3", "--backend", "mpi",
                             "--timeout", "3"], env={"DISTLAB_FAULT": "1:1:hang"}))
check("(a) run: a rank that never joins fails the run, in bounded time",
      rc is not None and rc != 0, "rc %s\n%s%s" % (rc, out, err))
timeouts = lines_with(err, "timed out after 3 s") + lines_with(err, "not responding")
check("(a) run: one line names the timeout (3 s) or the rank that stopped answering",
      len(timeouts) >= 1 and all(l.startswith("distlab: ") for l in timeouts), err)
none_left("(a) run")

# The shell, with the checks off so that nothing stops rank 0 before MPI:
# only rank 0 calls all_reduce; rank 1 is idle, beating, never in the call.
script = "t = ones(2)\nset check off\nif rank == 0:\n    all_reduce t\nprint t\n"
rc, out, err = finish(start([EXE, "shell", "--np", "2", "--backend", "mpi", "--timeout", "3"],
                            stdin=subprocess.PIPE), stdin_text=script)
said = lines_with(err, "timed out after 3 s on the mpi backend")
check("(a) shell: the statement fails and the shell ends, in bounded time",
      rc is not None and rc != 0, "rc %s\n%s%s" % (rc, out, err))
check("(a) shell: one line names rank 0, all_reduce and the timeout",
      len(said) == 1 and re.match(r"distlab: rank 0 \(pid \d+\) exited with code 124 during "
                                  r"all_reduce.*all_reduce timed out after 3 s", said[0]),
      err)
none_left("(a) shell")

# ---- (b) Ctrl-C during a blocked collective ----
p = start([EXE, "run", "all_reduce", "--np", "3", "--backend", "mpi", "--timeout", "60"],
          env={"DISTLAB_FAULT": "1:1:hang"})
up = ranks_in_collective(3)
time.sleep(1.0)  # inside the blocked all_reduce (past MPI_Init)
os.kill(p.pid, signal.SIGINT)
rc, out, err = finish(p)
check("(b) run: the ranks were up before the signal", up, err)
check("(b) run: SIGINT ends the job with 130, in bounded time", rc == 130,
      "rc %s\n%s%s" % (rc, out, err))
said = lines_with(err, "interrupted")
check("(b) run: one line says it was interrupted by SIGINT during all_reduce",
      len(said) == 1 and "SIGINT" in said[0] and "all_reduce" in said[0], err)
none_left("(b) run")

# The shell at a terminal: Ctrl-C interrupts the statement on the ranks
# running it (a signal to each); rank 0 is blocked in MPI_Allreduce, which
# cannot be cancelled, so its watchdog ends it with one line. (A shell
# reading a script ends at SIGINT instead, as bash does.)
class Terminal:
    """The shell on a pseudo-terminal, its output gathered by a thread."""

    def __init__(self, argv):
        master, slave = pty.openpty()
        self.master = master
        self.text = ""
        self.lock = threading.Lock()
        self.p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                  env=env_with({"TERM": "dumb", "NO_COLOR": "1"}),
                                  start_new_session=True, close_fds=True)
        os.close(slave)
        self.thread = threading.Thread(target=self.gather, daemon=True)
        self.thread.start()

    def gather(self):
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.text += data.decode(errors="replace")

    def wait_for(self, pattern, timeout=30, since=0):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            with self.lock:
                if re.search(pattern, self.text[since:]):
                    return True
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        with self.lock:
            return re.search(pattern, self.text[since:]) is not None

    def type(self, line):
        os.write(self.master, (line + "\r").encode())

    def close(self, timeout=30):
        try:
            os.write(self.master, b"\x04")
        except OSError:
            pass
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        self.thread.join(5)
        os.close(self.master)
        return self.p.returncode


term = Terminal([EXE, "shell", "--np", "2", "--backend", "mpi", "--timeout", "60"])
ready = term.wait_for(r"distlab>")
for line in ["t = ones(2)", "set check off"]:
    term.type(line)
    time.sleep(0.5)
term.type("if rank == 0:")
time.sleep(0.3)
term.type("    all_reduce t")
time.sleep(0.3)
term.type("")
time.sleep(1.5)  # rank 0 is in MPI_Allreduce, alone
os.kill(term.p.pid, signal.SIGINT)
said = term.wait_for(r"rank 0 \(pid \d+\) exited with code 130 during all_reduce[^\n]*"
                     r"all_reduce interrupted \(Ctrl-C\) on the mpi backend")
alive = term.p.poll() is None
rc = term.close()
lines = [l for l in term.text.splitlines() if "interrupted (Ctrl-C) on the mpi backend" in l]
check("(b) shell: the prompt came", ready, term.text)
check("(b) shell: one line names rank 0, all_reduce and Ctrl-C",
      said and len(lines) == 1, term.text)
check("(b) shell: the shell itself lives on after Ctrl-C, and ends at Ctrl-D",
      alive and rc is not None, "rc %s\n%s" % (rc, term.text))
none_left("(b) shell")

# ---- (c) a rank killed during a collective ----
rc, out, err = finish(start([EXE, "run", "all_reduce", "--np", "3", "--backend", "mpi",
                             "--timeout", "20"], env={"DISTLAB_FAULT": "2:1"}))
check("(c) run: a killed rank fails the run, in bounded time",
      rc is not None and rc != 0, "rc %s\n%s%s" % (rc, out, err))
check("(c) run: the death names rank 2, its pid, SIGKILL and the collective",
      re.search(r"^distlab: rank 2 \(pid \d+\) was killed by signal 9 \(SIGKILL\) during "
                r"all_reduce", err, re.M) is not None, err)
none_left("(c) run")

rc, out, err = finish(start([EXE, "bench", "all_reduce", "--np", "2", "--backend", "mpi",
                             "-b", "8", "-e", "1M", "-n", "50", "--timeout", "20"],
                            env={"DISTLAB_FAULT": "1:40"}))
check("(c) bench: a rank killed mid-benchmark fails it, in bounded time",
      rc is not None and rc != 0, "rc %s\n%s%s" % (rc, out, err))
check("(c) bench: the death names rank 1, SIGKILL and all_reduce",
      re.search(r"^distlab: rank 1 \(pid \d+\) was killed by signal 9 \(SIGKILL\) during "
                r"all_reduce", err, re.M) is not None, err)
none_left("(c) bench")

# ---- (d) mpirun that cannot start the ranks ----
# A host that does not resolve: mpirun's help message is cut to its first
# sentence (its twenty lines of possible causes are at DISTLAB_LOG=debug),
# and the ranks that never started are one line.
rc, out, err = finish(start([EXE, "run", "all_reduce", "--np", "4", "--backend", "mpi",
                             "--host", "nosuchhost.invalid", "--timeout", "20"]))
lines = err.splitlines()
check("(d) run: mpirun failing to start fails the run, in a few lines",
      rc == 1 and 2 <= len(lines) <= 5 and "This usually is caused by" not in err
      and all(l.startswith(("mpirun: ", "distlab: ")) for l in lines)
      and "distlab: ranks 1-3 never joined the world: they never connected" in lines
      and "(pid 0)" not in err, "rc %s\n%s" % (rc, err))
rc, out, err = finish(start([EXE, "run", "all_reduce", "--np", "4", "--backend", "mpi",
                             "--host", "nosuchhost.invalid", "--timeout", "20"],
                            env={"DISTLAB_LOG": "debug"}))
check("(d) run: DISTLAB_LOG=debug shows mpirun's whole message",
      rc == 1 and ("This usually is caused by" in err or not lines_with(err, "ORTE was unable")),
      err[-2000:])
with tempfile.NamedTemporaryFile("w", suffix=".hosts", delete=False) as hf:
    hf.write("localhost slots=2\n")
rc, out, err = finish(start([EXE, "run", "all_reduce", "--np", "4", "--backend", "mpi",
                             "--hostfile", hf.name, "--timeout", "20"]))
os.unlink(hf.name)
check("(d) run: too few slots: mpirun's first sentence keeps what its colon announces",
      rc == 1 and re.search(r"^mpirun: There are not enough slots available in the system to "
                            r"satisfy the 4 slots that were requested by the application: \S+$",
                            err, re.M) is not None and len(err.splitlines()) <= 4, err)
none_left("(d) run")

print("%d checks failed" % len(failures) if failures else "all checks passed")
sys.exit(1 if failures else 0)
