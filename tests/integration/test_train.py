#!/usr/bin/env python3
"""`distlab train`, started as torchrun starts workers: one process per rank
with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (a free port) in its
environment, rank 0 serving the store.

  - 2 and then 4 ranks: one line per epoch and rank in torch's format, in
    order, flushed as they happen (stdout is a pipe), and the same final
    weights checksum on every rank;
  - the same seed and world size give the same checksum twice;
  - checkpoints: a rerun with the checkpoint of a finished run resumes at
    the next epoch, at the same and at another world size; a 2-rank run
    killed (SIGKILL, every rank) after some epochs and resumed ends with the
    checksum of an uninterrupted 2-rank run;
  - a corrupt or truncated checkpoint, or one in a directory that does not
    exist, ends every rank with exit status 1, and rank 0 says in one line
    which file and what is wrong;
  - SIGTERM ends every rank at once, by the signal, with one line each;
  - a rank killed mid-run: the others exit non-zero within the timeout,
    each with one line that names the dead rank;
  - missing variables: exit status 2 and one line;
  - no process is left behind (each carries a marker in its environment,
    looked for in /proc at the end).

usage: test_train.py DISTLAB_EXE
"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures, marked_process_map  # noqa: E402

EXE = os.path.abspath(sys.argv[1])
TAG = "train-" + uuid.uuid4().hex
TMP = tempfile.mkdtemp(prefix="distlab-train-test-")

EPOCH_RE = re.compile(r"^\[(\d+)\] epoch (\d+) \(rank = (\d+), local_rank = (\d+), "
                      r"world_size = (\d+)\) loss = (\d+\.\d{4})$")
RESUME_RE = re.compile(r"^\[(\d+)\] resuming from checkpoint (.+) at epoch (\d+)$")
FINAL_RE = re.compile(r"^\[(\d+)\] final weights checksum = ([0-9a-f]{16}) "
                      r"\(rank = (\d+), world_size = (\d+)\)$")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Stream:
    """A pipe read line by line on a thread, with each line's arrival time."""

    def __init__(self, f):
        self.f = f
        self.lines = []
        self.cv = threading.Condition()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        for line in self.f:
            with self.cv:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self.cv.notify_all()

    def wait_for(self, pattern, timeout):
        """The first line matching pattern, or None after timeout seconds."""
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for _, ln in self.lines:
                    if rx.search(ln):
                        return ln
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def text(self):
        self.t.join(10)
        return [ln for _, ln in self.lines]


class Rank:
    def __init__(self, rank, world, port, args, env_extra=None):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), DLTEST_TAG=TAG)
        env.pop("DISTLAB_TIMEOUT", None)
        env.update(env_extra or {})
        self.rank = rank
        self.p = subprocess.Popen([EXE, "train"] + args, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, text=True, errors="replace")
        self.out = Stream(self.p.stdout)
        self.err = Stream(self.p.stderr)
        self.ended = None

    def wait(self, timeout):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
            rc = "timeout"
        self.ended = time.monotonic()
        return rc

    def stdout(self):
        return self.out.text()

    def stderr(self):
        return self.err.text()


class World:
    """np ranks of `distlab train ARGS` on a free port."""

    def __init__(self, np, args, env_extra=None):
        self.port = free_port()
        self.np = np
        self.ranks = [Rank(r, np, self.port, args, env_extra) for r in range(np)]

    def wait(self, timeout=60):
        return [r.wait(timeout) for r in self.ranks]

    def kill(self, sig=signal.SIGKILL):
        for r in self.ranks:
            if r.p.poll() is None:
                r.p.send_signal(sig)

    def describe(self):
        s = []
        for r in self.ranks:
            s.append("rank %d rc=%s\n  stdout: %s\n  stderr: %s"
                     % (r.rank, r.p.returncode, "\n          ".join(r.stdout()),
                        "\n          ".join(r.stderr())))
        return "\n".join(s)


def parse(lines):
    """Epoch lines, resume lines and final lines of one rank's stdout."""
    epochs, resumes, finals, other = [], [], [], []
    for ln in lines:
        m = EPOCH_RE.match(ln)
        if m:
            epochs.append(m)
            continue
        m = RESUME_RE.match(ln)
        if m:
            resumes.append(m)
            continue
        m = FINAL_RE.match(ln)
        if m:
            finals.append(m)
            continue
        other.append(ln)
    return epochs, resumes, finals, other


def run_ok(name, np, args, first_epoch, last_epoch, resumed_from=None):
    """Runs a world to its end and checks its output; returns the checksum."""
    w = World(np, args)
    rcs = w.wait(120)
    ok = check("%s: every rank exits 0" % name, rcs == [0] * np, w.describe())
    sums = set()
    for r in w.ranks:
        out = r.stdout()
        epochs, resumes, finals, other = parse(out)
        pid = r.p.pid
        want = list(range(first_epoch, last_epoch))
        got = [int(m.group(2)) for m in epochs]
        good = (got == want and not other
                and all(int(m.group(1)) == pid and int(m.group(3)) == r.rank
                        and int(m.group(4)) == r.rank and int(m.group(5)) == np for m in epochs))
        ok &= check("%s: rank %d prints epochs %d..%d in torch's format" %
                    (name, r.rank, first_epoch, last_epoch - 1), good, "\n".join(out))
        if resumed_from is None:
            ok &= check("%s: rank %d does not resume" % (name, r.rank), not resumes,
                        "\n".join(out))
        else:
            ok &= check("%s: rank %d resumes from %s at epoch %d" % (name, r.rank,
                                                                     resumed_from, first_epoch),
                        len(resumes) == 1 and resumes[0].group(2) == resumed_from
                        and int(resumes[0].group(3)) == first_epoch
                        and out.index(resumes[0].group(0)) == 0, "\n".join(out))
        ok &= check("%s: rank %d prints its final checksum last" % (name, r.rank),
                    len(finals) == 1 and out[-1] == finals[0].group(0)
                    and int(finals[0].group(3)) == r.rank, "\n".join(out))
        if finals:
            sums.add(finals[0].group(2))
        ok &= check("%s: rank %d says nothing on stderr" % (name, r.rank), not r.stderr(),
                    "\n".join(r.stderr()))
    check("%s: the same final checksum on every rank" % name, len(sums) == 1, sums)
    return sums.pop() if len(sums) == 1 else None


def test_plain():
    s2 = run_ok("np=2", 2, ["--epochs", "4"], 0, 4)
    s4 = run_ok("np=4", 4, ["--epochs", "4"], 0, 4)
    check("np=2 and np=4 train differently", s2 != s4, (s2, s4))
    again = run_ok("np=2 again", 2, ["--epochs", "4"], 0, 4)
    check("the same seed and world size give the same checksum", s2 == again, (s2, again))
    other = run_ok("np=2 seed 1", 2, ["--epochs", "4", "--seed", "1"], 0, 4)
    check("another seed gives another checksum", other != s2, (other, s2))


def test_torchrun_env():
    """As torchrun starts workers: LOCAL_RANK (here every rank alone on its
    node) and the elastic variables, with which each restart gets its own
    keys in the store."""
    w = World(2, ["--epochs", "2"], env_extra={
        "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "TORCHELASTIC_RESTART_COUNT": "3",
        "TORCHELASTIC_MAX_RESTARTS": "5", "TORCHELASTIC_RUN_ID": "x" * 100})
    rcs = w.wait(60)
    lines = [parse(r.stdout())[0] for r in w.ranks]
    check("torchrun's environment: local_rank from LOCAL_RANK",
          rcs == [0, 0] and all(len(e) == 2 and all(m.group(4) == "0" for m in e)
                                for e in lines), w.describe())


def test_lines_flushed():
    """The epoch lines arrive one by one, as the epochs end, through a pipe."""
    w = World(2, ["--epochs", "3", "--sleep", "0.5"])
    w.wait(60)
    times = [t for t, ln in w.ranks[0].out.lines if EPOCH_RE.match(ln)]
    check("epoch lines arrive as the epochs end (not at exit)",
          len(times) == 3 and times[1] - times[0] > 0.3 and times[2] - times[1] > 0.3,
          w.describe())


def test_resume():
    ck = os.path.join(TMP, "resume.ckpt")
    run_ok("checkpointed np=2", 2, ["--epochs", "3", "--checkpoint", ck], 0, 3)
    check("the checkpoint exists, and no temporary file beside it",
          os.path.exists(ck) and [f for f in os.listdir(TMP) if ".tmp." in f] == [],
          os.listdir(TMP))
    run_ok("resumed np=2", 2, ["--epochs", "5", "--checkpoint", ck], 3, 5, resumed_from=ck)
    run_ok("resumed np=4", 4, ["--epochs", "7", "--checkpoint", ck], 5, 7, resumed_from=ck)
    run_ok("resumed np=1, nothing left to do", 1, ["--epochs", "7", "--checkpoint", ck], 7, 7,
           resumed_from=ck)


def test_killed_and_resumed():
    """A 2-rank run killed after some epochs and resumed at the same world
    size ends where an uninterrupted one does: batches depend on (seed,
    epoch, rank) alone and the checkpoint holds the weights exactly."""
    args = ["--epochs", "6", "--steps-per-epoch", "20"]
    whole = run_ok("uninterrupted np=2", 2, args, 0, 6)
    ck = os.path.join(TMP, "killed.ckpt")
    w = World(2, args + ["--checkpoint", ck, "--sleep", "0.4"])
    seen = w.ranks[0].out.wait_for(r"\] epoch 2 ", 60)
    w.kill(signal.SIGKILL)
    rcs = w.wait(30)
    check("killed run: every rank died by SIGKILL after epoch 2",
          seen is not None and rcs == [-signal.SIGKILL] * 2, w.describe())
    printed = [int(m.group(2)) for m in parse(w.ranks[0].stdout())[0]]
    w2 = World(2, args + ["--checkpoint", ck])
    w2.wait(120)
    out = w2.ranks[0].stdout()
    resumes = parse(out)[1]
    at = int(resumes[0].group(3)) if resumes else -1
    # The checkpoint of an epoch is in place before rank 0 prints its line;
    # the next one may have been saved too before the kill landed.
    check("killed run: resumed after the last epoch rank 0 printed (or the next)",
          printed and at in (printed[-1] + 1, printed[-1] + 2), (printed, out))
    sums = set()
    for r in w2.ranks:
        finals = parse(r.stdout())[2]
        sums.add(finals[0].group(2) if finals else None)
    check("killed and resumed: the checksum of the uninterrupted run",
          sums == {whole}, (sums, whole, w2.describe()))


def run_refused(name, ck, words):
    w = World(2, ["--epochs", "3", "--checkpoint", ck, "--timeout", "10"])
    rcs = w.wait(60)
    check("%s: every rank exits 1" % name, rcs == [1, 1], w.describe())
    err = w.ranks[0].stderr()
    check("%s: rank 0 says so in one line, naming the file" % name,
          len(err) == 1 and ck in err[0] and all(x in err[0] for x in words), err)
    check("%s: no rank trains, the others say nothing" % name,
          all(not parse(r.stdout())[0] for r in w.ranks)
          and all(not r.stderr() for r in w.ranks[1:]), w.describe())


def test_corrupt_checkpoint():
    ck = os.path.join(TMP, "corrupt.ckpt")
    run_ok("checkpoint to damage", 1, ["--epochs", "1", "--checkpoint", ck], 0, 1)
    with open(ck, "rb") as f:
        good = f.read()
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x40
    with open(ck, "wb") as f:
        f.write(bad)
    run_refused("flipped bit", ck, ["checksum mismatch"])
    with open(ck, "wb") as f:
        f.write(good[:len(good) - 10])
    run_refused("truncated", ck, ["truncated"])
    with open(ck, "wb") as f:
        f.write(b"epoch=3\n")
    run_refused("not a checkpoint", ck, ["not a distlab checkpoint"])
    run_refused("no such directory", os.path.join(TMP, "nodir", "x.ckpt"),
                ["cannot write to directory"])
    with open(ck, "wb") as f:
        f.write(good)
    run_ok("the good file again", 2, ["--epochs", "2", "--checkpoint", ck], 1, 2,
           resumed_from=ck)


def test_sigterm():
    w = World(2, ["--epochs", "1000", "--sleep", "0.2"])
    seen = w.ranks[1].out.wait_for(r"\] epoch 1 ", 60)
    t0 = time.monotonic()
    w.kill(signal.SIGTERM)
    rcs = w.wait(30)
    secs = max(r.ended for r in w.ranks) - t0
    check("SIGTERM: every rank ends by SIGTERM within 2 s",
          seen is not None and rcs == [-signal.SIGTERM] * 2 and secs < 2,
          "%.1f s\n%s" % (secs, w.describe()))
    check("SIGTERM: one line each on stderr",
          all(r.stderr() == ["distlab train rank %d: terminated (SIGTERM)" % r.rank]
              for r in w.ranks), w.describe())


def test_peer_dies(np, victim):
    timeout = 10
    w = World(np, ["--epochs", "1000", "--sleep", "0.2", "--timeout", str(timeout)])
    seen = w.ranks[victim].out.wait_for(r"\] epoch 1 ", 60)
    t0 = time.monotonic()
    w.ranks[victim].p.kill()
    others = [r for r in w.ranks if r.rank != victim]
    rcs = [r.wait(timeout + 20) for r in others]
    w.ranks[victim].wait(10)
    secs = max(r.ended for r in others) - t0
    name = "np=%d, rank %d killed" % (np, victim)
    check("%s: the others exit 1 within the timeout (%d s)" % (name, timeout),
          seen is not None and rcs == [1] * len(others) and secs < timeout,
          "%.1f s\n%s" % (secs, w.describe()))
    for r in others:
        err = r.stderr()
        check("%s: rank %d says so in one line" % (name, r.rank),
              len(err) == 1 and ("rank %d" % victim) in err[0] and "died" in err[0], err)


def test_env():
    env = dict(os.environ, DLTEST_TAG=TAG)
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "DISTLAB_STORE"):
        env.pop(k, None)
    r = subprocess.run([EXE, "train"], env=env, capture_output=True, text=True, timeout=30)
    err = r.stderr.strip().split("\n")
    check("no RANK: exit 2 and one line", r.returncode == 2 and len(err) == 1
          and "RANK is not set" in err[0], (r.returncode, r.stderr))
    env.update(RANK="0", WORLD_SIZE="x")
    r = subprocess.run([EXE, "train"], env=env, capture_output=True, text=True, timeout=30)
    check("WORLD_SIZE=x: exit 2 and one line", r.returncode == 2
          and len(r.stderr.strip().split("\n")) == 1 and "WORLD_SIZE" in r.stderr,
          (r.returncode, r.stderr))
    for port in ("99999", "0"):
        env.update(WORLD_SIZE="1", MASTER_PORT=port)
        r = subprocess.run([EXE, "train"], env=env, capture_output=True, text=True, timeout=30)
        check("MASTER_PORT=%s: exit 2 and one line naming it" % port, r.returncode == 2
              and r.stderr == "distlab train: error: MASTER_PORT=%s is not a port (1 to 65535)\n"
              % port, (r.returncode, r.stderr))
    env.update(WORLD_SIZE="1", MASTER_PORT=str(free_port()), LOCAL_RANK="one")
    r = subprocess.run([EXE, "train"], env=env, capture_output=True, text=True, timeout=30)
    check("LOCAL_RANK=one: exit 2 and one line", r.returncode == 2
          and len(r.stderr.strip().split("\n")) == 1 and "LOCAL_RANK" in r.stderr,
          (r.returncode, r.stderr))
    r = subprocess.run([EXE, "train", "--epochs", "-1"], env=env, capture_output=True,
                       text=True, timeout=30)
    check("--epochs -1: exit 2", r.returncode == 2 and "--epochs" in r.stderr,
          (r.returncode, r.stderr))
    r = subprocess.run([EXE, "train", "--help"], env=env, capture_output=True, text=True,
                       timeout=30)
    check("--help names every flag", r.returncode == 0 and all(
        f in r.stdout for f in ("--epochs", "--steps-per-epoch", "--batch", "--lr", "--sleep",
                                "--checkpoint", "--seed", "--timeout")), r.stdout)


def tagged_procs():
    """The pids of this test's processes, zombies included."""
    return list(marked_process_map("DLTEST_TAG=" + TAG, zombies=True))


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) == 2 else 2
    try:
        test_env()
        test_plain()
        test_torchrun_env()
        test_lines_flushed()
        test_resume()
        test_killed_and_resumed()
        test_corrupt_checkpoint()
        test_sigterm()
        test_peer_dies(2, 1)
        test_peer_dies(4, 0)
    finally:
        left = []
        end = time.monotonic() + 5
        while time.monotonic() < end:
            left = tagged_procs()
            if not left:
                break
            time.sleep(0.1)
        check("no process left behind", not left, left)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for f in os.listdir(TMP):
            os.unlink(os.path.join(TMP, f))
        os.rmdir(TMP)
    if failures:
        print("%d failure(s): %s" % (len(failures), ", ".join(failures)))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
