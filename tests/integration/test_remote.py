#!/usr/bin/env python3
"""Remote ranks: `distlab shell --listen` and `distlab worker --join`, on this
one host (loopback), with the data moving through shared memory (one host),
over TCP everywhere (--transport tcp, or DISTLAB_TRANSPORT=tcp while the flag
is missing) and mixed (the worker pretends to be another host with
DISTLAB_HOST_ID: shared memory within each "host", TCP between them).

  - a script waits (--expect-ranks) for a worker's 2 ranks beside 2 local
    ones, all_reduce over the 4 is checked, `ranks` names the worker's ranks;
  - --expect-ranks gives up with a clear error when nobody joins;
  - a worker with a wrong token (or a token file others can read) exits
    non-zero with one line; garbage bytes, an oversize frame header, a frame
    that does not answer the challenge are dropped with at most one line
    each; the session goes on as if nothing happened;
  - `kill 3` on a worker's rank, and a SIGKILL of it from outside, are
    reported within 2 s naming pid and host; `respawn` brings the 4 back;
  - the worker killed: its ranks die with it and are reported; `respawn`
    goes on without it;
  - the shell killed: the worker stops its ranks and exits 1 with a message.

The interactive shell is driven through a pseudo-terminal so that commands
can be given while workers come and go.

usage: test_remote.py DISTLAB_EXE
"""

import os
import pty
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures, lines_of  # noqa: E402

EXE = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="distlab-remote-test-")


class Stream:
    """A pipe read by a thread; text is kept with arrival times."""

    def __init__(self, f):
        self.f = f
        self.text = ""
        self.times = []  # (offset, time) per chunk
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while True:
            try:
                d = os.read(self.f.fileno(), 65536)
            except OSError:
                break
            if not d:
                break
            with self.lock:
                self.times.append((len(self.text), time.monotonic()))
                self.text += d.decode(errors="replace")

    def wait(self, pattern, timeout, start=0):
        """(match, arrival time) of pattern in the text after start, or None."""
        end = time.monotonic() + timeout
        rx = re.compile(pattern)
        while True:
            with self.lock:
                m = rx.search(self.text, start)
                if m:
                    when = max([t for off, t in self.times if off <= m.start()] or [0])
                    return m, when
            if time.monotonic() > end:
                return None
            time.sleep(0.02)

    def mark(self):
        with self.lock:
            return len(self.text)

    def finish(self):
        """Waits for the end of the stream (once its process has exited)."""
        self.t.join(5)


class Shell:
    """An interactive shell on a pty (stdout and stderr are pipes)."""

    def __init__(self, args, env=None):
        self.master, slave = pty.openpty()
        self.p = subprocess.Popen([EXE, "shell", "--timeout", "10"] + args, stdin=slave,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, close_fds=True)
        os.close(slave)
        self.out = Stream(self.p.stdout)
        self.err = Stream(self.p.stderr)
        threading.Thread(target=self.drain_pty, daemon=True).start()
        m = self.err.wait(r"(distlab worker --join (\S+) --token-file (\S+))", 10)
        if m is None:
            raise RuntimeError("no join command from the shell: " + self.err.text)
        self.join_cmd, self.addr, self.token_file = m[0].group(1), m[0].group(2), m[0].group(3)

    def drain_pty(self):
        while True:
            try:
                r, _, _ = select.select([self.master], [], [], 0.5)
                if r and not os.read(self.master, 4096):
                    return
            except OSError:
                return

    def send(self, line):
        os.write(self.master, (line + "\n").encode())

    def quit(self):
        try:
            self.send("quit")
        except OSError:
            pass
        try:
            return self.p.wait(15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait()
        finally:
            os.close(self.master)


class Worker:
    def __init__(self, addr, token_file, nproc, env=None):
        self.p = subprocess.Popen([EXE, "worker", "--join", addr, "--token-file", token_file,
                                   "--nproc", str(nproc)], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        self.err = Stream(self.p.stderr)

    def wait(self, timeout=15):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = None
        self.err.finish()
        return rc

    def children(self):
        """The worker's rank processes."""
        pids = []
        try:
            for task in os.listdir("/proc/%d/task" % self.p.pid):
                with open("/proc/%d/task/%s/children" % (self.p.pid, task)) as f:
                    pids += [int(x) for x in f.read().split()]
        except OSError:
            pass
        return pids


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[-1][0] not in "ZX"
    except OSError:
        return False


def wait_dead(pids, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def env_with(**kv):
    env = dict(os.environ)
    env.pop("DISTLAB_TRANSPORT", None)
    env.pop("DISTLAB_HOST_ID", None)
    env.update(kv)
    return env


def transport_args():
    """--transport tcp when the shell has the flag, else the environment."""
    h = subprocess.run([EXE, "shell", "--help"], capture_output=True, text=True).stdout
    if "--transport" in h:
        return ["--transport", "tcp"], env_with(), "--transport tcp"
    return [], env_with(DISTLAB_TRANSPORT="tcp"), "DISTLAB_TRANSPORT=tcp (no --transport flag yet)"


# ---- a script waits for a worker: all_reduce over 2 local + 2 remote ranks ----

def scripted_join(name, shell_args, shell_env, worker_env):
    script = "t = arange(2) + 1 + 2*rank; all_reduce t op=sum; ranks"
    p = subprocess.Popen([EXE, "shell", "--listen", "127.0.0.1:0", "--np", "2", "--timeout", "10",
                          "--expect-ranks", "4", "--expect-timeout", "30", "-c", script]
                         + shell_args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=shell_env)
    err = Stream(p.stderr)
    out = Stream(p.stdout)
    m = err.wait(r"distlab worker --join (\S+) --token-file (\S+)", 10)
    if m is None:
        p.kill()
        check(name, False, "no join command: " + err.text)
        return
    w = Worker(m[0].group(1), m[0].group(2), 2, env=worker_env)
    try:
        rc = p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    wrc = w.wait()
    out.finish()
    err.finish()
    want = ["rank %d: t = tensor([%d, %d])" % (r, 1 + 2 * r, 2 + 2 * r) for r in range(4)]
    want += ["rank %d: t = tensor([16, 20])" % r for r in range(4)]
    got = lines_of(out.text)
    rows = [l for l in got if re.match(r"^\d+\s+\d+\s", l)]
    check(name + ": all_reduce over 2 local + 2 remote ranks",
          rc == 0 and got[:8] == want, "rc=%s\n%s\n%s\nworker:\n%s" % (rc, out.text, err.text,
                                                                       w.err.text))
    check(name + ": `ranks` shows the worker's ranks",
          len(rows) == 4 and all("worker" not in r for r in rows[:2])
          and all("(worker 1)" in r and "ready" in r for r in rows[2:]), out.text)
    check(name + ": the worker leaves when the session ends",
          wrc == 0 and "ended the session" in w.err.text, "rc=%s %s" % (wrc, w.err.text))


scripted_join("shared memory", [], env_with(), env_with())
targs, tenv, how = transport_args()
print("tcp variant runs with " + how, flush=True)
scripted_join("tcp everywhere", targs, tenv, env_with())
scripted_join("mixed hosts", [], env_with(), env_with(DISTLAB_HOST_ID="pretend-host-b"))

# ---- --expect-ranks gives up ----

t0 = time.monotonic()
p = subprocess.run([EXE, "shell", "--listen", "0", "--np", "2", "--expect-ranks", "3",
                    "--expect-timeout", "1", "-c", "barrier"], capture_output=True, text=True,
                   timeout=30)
check("--expect-ranks times out with a clear error",
      p.returncode == 1 and "--expect-ranks 3: the world has 2 ranks after 1 s" in p.stderr
      and "distlab worker --join" in p.stderr and time.monotonic() - t0 < 10, p.stderr)
p = subprocess.run([EXE, "shell", "--np", "0", "-c", "barrier"], capture_output=True, text=True,
                   timeout=30)
check("--np 0 needs --listen", p.returncode == 2 and "--listen" in p.stderr, p.stderr)

# ---- the shell's own token file ----

bad_tf = os.path.join(TMP, "open-token")
with open(bad_tf, "w") as f:
    f.write("0123456789abcdef0123456789abcdef\n")
os.chmod(bad_tf, 0o644)
p = subprocess.run([EXE, "shell", "--listen", "0", "--token-file", bad_tf, "-c", "barrier"],
                   capture_output=True, text=True, timeout=30)
check("the shell refuses a token file others can read",
      p.returncode == 1 and "readable by others" in p.stderr, p.stderr)

# ---- an interactive session: strangers, kills, a dying worker ----

sh = Shell(["--listen", "127.0.0.1:0", "--np", "2"], env=env_with())
tf_mode = os.stat(sh.token_file).st_mode & 0o777
check("a fresh token file is private", tf_mode == 0o600, oct(tf_mode))

# A wrong token.
wrong = os.path.join(TMP, "wrong-token")
with open(wrong, "w") as f:
    f.write("not-the-session-token-but-long\n")
os.chmod(wrong, 0o600)
mark = sh.err.mark()
w = Worker(sh.addr, wrong, 2)
rc = w.wait()
wlines = lines_of(w.err.text)
check("a wrong token: the worker exits non-zero with one line",
      rc not in (0, None) and len(wlines) == 1 and "did not let us join" in wlines[0],
      "rc=%s %r" % (rc, w.err.text))
m = sh.err.wait(r"dropped a connection from [^\n]*: wrong token", 5, mark)
check("a wrong token: one line in the shell", m is not None, sh.err.text[mark:])

# A token file that others can read: refused before connecting.
os.chmod(wrong, 0o644)
w = Worker(sh.addr, wrong, 1)
rc = w.wait()
check("a token file others can read: the worker refuses it",
      rc == 1 and "readable by others" in w.err.text, w.err.text)

# Strangers on the listening port.
host, port = sh.addr.rsplit(":", 1)


def stranger(payload):
    """Sends payload; returns whether the shell hung up within 3 s."""
    s = socket.create_connection((host, int(port)), timeout=3)
    try:
        s.sendall(payload)
        end = time.monotonic() + 3
        while time.monotonic() < end:
            d = s.recv(4096)
            if not d:
                return True
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    finally:
        s.close()


def frame(obj):
    j = obj.encode()
    return struct.pack(">II", 4 + len(j), len(j)) + j


mark = sh.err.mark()
cases = [
    ("garbage bytes", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("an oversize frame header", struct.pack(">II", 200 << 20, 2) + b"{}"),
    ("a frame that does not answer the challenge",
     frame('{"type":"hello","rank":0,"token":"guess"}')),
    ("random bytes", bytes(range(256)) * 4),
]
for what, payload in cases:
    check("the shell drops %s" % what, stranger(payload))
time.sleep(0.3)
said = [l for l in lines_of(sh.err.text[mark:]) if l.startswith("distlab")]
check("at most one line in the shell per dropped connection",
      len(said) <= len(cases) and all("dropped a connection" in l or "frame" in l
                                      for l in said), "\n".join(said))

# The session did not notice.
mark = sh.out.mark()
sh.send("t = ones(1) * (rank + 1); all_reduce t")
m = sh.out.wait(r"rank 1: t = tensor\(\[3\.\]\)", 15, mark)
check("after the strangers, the session works", m is not None, sh.out.text[mark:])

# A worker joins with 2 ranks: the world restarts with 4.
mark_err = sh.err.mark()
w = Worker(sh.addr, sh.token_file, 2)
joined = sh.err.wait(r"worker 1 joined from", 10, mark_err)
check("a worker joins the session", joined is not None, sh.err.text[mark_err:] + w.err.text)
mark = sh.out.mark()
sh.send("t = ones(1) * (rank + 1); all_reduce t")
m = sh.out.wait(r"rank 3: t = tensor\(\[10\.\]\)", 20, mark)
check("all_reduce over the restarted world of 4", m is not None,
      sh.out.text[mark:] + sh.err.text[mark_err:])

# `kill 3`: the worker kills it, the shell reports it with pid and host.
mark_err = sh.err.mark()
t0 = time.monotonic()
sh.send("kill 3")
m = sh.err.wait(r"rank 3 \(pid (\d+) on ([^,]+), worker 1\) was killed by signal 9 \(SIGKILL\)",
                10, mark_err)
check("`kill 3` on a worker's rank is reported within 2 s, naming pid and host",
      m is not None and m[1] - t0 < 2.0, sh.err.text[mark_err:])
if m is not None:
    check("the pid reported is the worker's rank's", not alive(int(m[0].group(1))))
mark = sh.out.mark()
sh.send("ranks")
m = sh.out.wait(r"\n\s*3\s+\d+\s+\S+ \(worker 1\)\s+dead \(SIGKILL\)", 5, mark)
check("`ranks` shows the remote rank dead", m is not None, sh.out.text[mark:])

mark = sh.out.mark()
sh.send("respawn")
sh.send("t = ones(1) * (rank + 1); all_reduce t")
m = sh.out.wait(r"rank 3: t = tensor\(\[10\.\]\)", 20, mark)
check("`respawn` brings the 4 ranks back", m is not None, sh.out.text[mark:] + sh.err.text)

# A SIGKILL from outside to the worker's rank 3.
mark = sh.out.mark()
sh.send("ranks")
m = sh.out.wait(r"\n\s*3\s+(\d+)\s+\S+ \(worker 1\)\s+ready", 5, mark)
check("`ranks` gives the remote rank's pid", m is not None, sh.out.text[mark:])
if m is not None:
    pid = int(m[0].group(1))
    check("that pid is a child of the worker", pid in w.children(), w.children())
    mark_err = sh.err.mark()
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    m = sh.err.wait(r"rank 3 \(pid %d on [^,]+, worker 1\) was killed by signal 9" % pid, 10,
                    mark_err)
    check("an outside SIGKILL of a worker's rank is reported within 2 s",
          m is not None and m[1] - t0 < 2.0, sh.err.text[mark_err:])
mark = sh.out.mark()
sh.send("respawn")
sh.send("t = ones(1) * (rank + 1); all_reduce t")
m = sh.out.wait(r"rank 3: t = tensor\(\[10\.\]\)", 20, mark)
check("`respawn` after an outside kill", m is not None, sh.out.text[mark:] + sh.err.text)

# The worker dies: its ranks die with it and are reported lost.
ranks_of_worker = w.children()
mark_err = sh.err.mark()
t0 = time.monotonic()
w.p.kill()
w.wait()
m = sh.err.wait(r"worker 1 on \S+ went away", 5, mark_err)
m2 = sh.err.wait(r"rank 3 \(pid \d+ on [^,]+, worker 1\) was lost with worker 1", 5, mark_err)
check("a dead worker is reported, and its ranks", m is not None and m2 is not None
      and m2[1] - t0 < 2.0, sh.err.text[mark_err:])
check("a dead worker's ranks die with it", wait_dead(ranks_of_worker, 5), ranks_of_worker)
mark = sh.out.mark()
sh.send("respawn")
sh.send("t = ones(1) * (rank + 1); all_reduce t")
m = sh.out.wait(r"rank 1: t = tensor\(\[3\.\]\)", 20, mark)
check("`respawn` goes on without the dead worker", m is not None
      and "rank 2:" not in sh.out.text[mark:], sh.out.text[mark:] + sh.err.text)

rc = sh.quit()
check("the shell quits cleanly", rc == 0, "rc=%s %s" % (rc, sh.err.text[-2000:]))
check("its own token file is removed", not os.path.exists(sh.token_file), sh.token_file)

# ---- the shell goes away: the worker stops its ranks and says so ----

sh = Shell(["--listen", "127.0.0.1:0", "--np", "1"], env=env_with())
w = Worker(sh.addr, sh.token_file, 2)
sh.err.wait(r"worker 1 joined", 10)
mark = sh.out.mark()
sh.send("t = ones(1); all_reduce t")
sh.out.wait(r"rank 2: t = tensor\(\[3\.\]\)", 20, mark)
kids = w.children()
sh.p.kill()
rc = w.wait()
check("the shell gone: the worker exits 1 with a clear message",
      rc == 1 and "lost the shell at" in w.err.text, "rc=%s %s" % (rc, w.err.text))
check("the shell gone: the worker's ranks are stopped", len(kids) == 2 and wait_dead(kids, 5),
      kids)
sh.quit()

for f in os.listdir(TMP):
    os.unlink(os.path.join(TMP, f))
os.rmdir(TMP)
print("remote: %d failed" % len(failures))
sys.exit(1 if failures else 0)
