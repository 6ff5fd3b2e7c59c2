#!/usr/bin/env python3
"""A shell that listens for workers, run with few descriptors (ulimit -n 256),
under a flood of connections that never say a word: 300 to each of its
listening ports (the port for workers, the control port, the store).

  - a worker still joins within a few seconds and all_reduce over the 4
    ranks is right;
  - every silent connection is closed by the shell: the oldest at once
    (beyond the cap), the rest at the deadline (DISTLAB_AUTH_TIMEOUT: 6 s here,
    where it is 10 s by default), and the worker joins before it;
  - the shell says a few lines about it, not one per connection.

Loopback only; the flood is bounded.

usage: test_flood.py DISTLAB_EXE
"""

import os
import pty
import re
import resource
import select
import socket
import subprocess
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures  # noqa: E402

EXE = os.path.abspath(sys.argv[1])
FD_LIMIT = 256
N_SILENT = 300
DEADLINE_S = 6


class Stream:
    """A pipe read by a thread."""

    def __init__(self, f):
        self.f = f
        self.text = ""
        self.lock = threading.Lock()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            try:
                d = os.read(self.f.fileno(), 65536)
            except OSError:
                break
            if not d:
                break
            with self.lock:
                self.text += d.decode(errors="replace")

    def wait(self, pattern, timeout, start=0):
        end = time.monotonic() + timeout
        rx = re.compile(pattern)
        while True:
            with self.lock:
                m = rx.search(self.text, start)
            if m or time.monotonic() > end:
                return m
            time.sleep(0.02)

    def mark(self):
        with self.lock:
            return len(self.text)


def low_fd_limit():
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, hard))


def listening_ports(pid):
    """The TCP ports pid listens on (from /proc)."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def closed(s):
    """Whether the peer has closed s (reads what it sent first)."""
    try:
        while True:
            d = s.recv(4096)
            if not d:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 3 * N_SILENT + 100
    if hard < need:
        print("skipped: %d descriptors needed, the hard limit is %d" % (need, hard))
        return 77
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))

    master, slave = pty.openpty()
    env = dict(os.environ, DISTLAB_AUTH_TIMEOUT=str(DEADLINE_S))
    env.pop("DISTLAB_TRANSPORT", None)
    env.pop("DISTLAB_HOST_ID", None)
    sh = subprocess.Popen([EXE, "shell", "--listen", "127.0.0.1:0", "--np", "2",
                           "--timeout", "10"], stdin=slave, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, close_fds=True,
                          preexec_fn=low_fd_limit)
    os.close(slave)
    out, err = Stream(sh.stdout), Stream(sh.stderr)

    def drain_pty():
        while True:
            try:
                r, _, _ = select.select([master], [], [], 0.5)
                if r and not os.read(master, 4096):
                    return
            except OSError:
                return
    threading.Thread(target=drain_pty, daemon=True).start()

    def send(line):
        os.write(master, (line + "\n").encode())

    silent = []
    worker = None
    try:
        m = err.wait(r"distlab worker --join (\S+) --token-file (\S+)", 15)
        if m is None:
            check("the shell prints its join command", False, err.text)
            return 1
        addr, token_file = m.group(1), m.group(2)
        # The ranks are up once a statement runs.
        mark = out.mark()
        send("t = ones(1); all_reduce t")
        if out.wait(r"rank 1: t = tensor\(\[2\.\]\)", 20, mark) is None:
            check("the session works before the flood", False, out.text + err.text)
            return 1
        ports = listening_ports(sh.pid)
        check("the shell listens on 3 ports (workers, control, store)", len(ports) >= 3,
              ports)

        mark_err = err.mark()
        t_flood = time.monotonic()
        for port in ports:
            for _ in range(N_SILENT):
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.setblocking(False)
                silent.append(s)

        # Beyond the cap, the oldest go at once, before the deadline; the
        # newest wait for it.
        end = t_flood + DEADLINE_S - 1
        early = 0
        while time.monotonic() < end:
            early = sum(closed(s) for s in silent)
            if early >= len(silent) // 2:
                break
            time.sleep(0.05)
        check("silent connections beyond the cap are dropped at once, the newest kept",
              len(silent) // 2 <= early < len(silent) and time.monotonic() < end,
              "%d of %d closed %.1f s after the flood" % (early, len(silent),
                                                         time.monotonic() - t_flood))

        # A worker joins through the flood: the world restarts with 4.
        t0 = time.monotonic()
        worker = subprocess.Popen([EXE, "worker", "--join", addr, "--token-file", token_file,
                                   "--nproc", "2", "--timeout", "10"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, env=env)
        wt = Stream(worker.stderr)
        joined = err.wait(r"worker 1 joined from", 10, mark_err)
        check("a worker joins during the flood, before the deadline",
              joined is not None and time.monotonic() - t_flood < DEADLINE_S,
              "%.1f s\n%s\nworker: %s" % (time.monotonic() - t0, err.text[mark_err:], wt.text))
        mark = out.mark()
        send("t = ones(1) * (rank + 1); all_reduce t")
        m = out.wait(r"rank 3: t = tensor\(\[10\.\]\)", 15, mark)
        check("all_reduce over the 4 ranks during the flood", m is not None,
              out.text[mark:] + err.text[mark_err:] + "\nworker: " + wt.text)

        # By the deadline, all.
        end = t_flood + DEADLINE_S + 4
        left = list(silent)
        while left and time.monotonic() < end:
            left = [s for s in left if not closed(s)]
            time.sleep(0.2)
        check("every silent connection is closed after the deadline", not left,
              "%d of %d still open %.1f s after the flood" % (len(left), len(silent),
                                                               time.monotonic() - t_flood))
        said = [l for l in err.text[mark_err:].splitlines() if "dropped" in l or "accept" in l]
        check("a few lines about the flood, not one per connection",
              0 < len(said) <= 12, "\n".join(said[:20]))
        check("the shell is still running", sh.poll() is None, err.text[mark_err:])
        mark = out.mark()
        send("t = ones(1) * (rank + 1); all_reduce t")
        m = out.wait(r"rank 3: t = tensor\(\[10\.\]\)", 15, mark)
        check("the session works after the flood", m is not None, out.text[mark:])
    finally:
        for s in silent:
            s.close()
        try:
            send("quit")
        except OSError:
            pass
        try:
            sh.wait(15)
        except subprocess.TimeoutExpired:
            sh.kill()
            sh.wait()
        if worker is not None:
            try:
                worker.wait(15)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        os.close(master)
    print("flood: %d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
