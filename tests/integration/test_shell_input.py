#!/usr/bin/env python3
"""How the shell reads a script, and how it ends on a signal:
  - scripts of any length (tens of thousands of lines that each finish at
    once) run to the end without a crash;
  - standard input that is not a terminal is read and run line by line: a
    program piping commands in sees each answer before it closes the pipe,
    and --listen opens its port before standard input ends;
  - endless input (/dev/zero, a line with no end) and NUL bytes give a
    one-line error with bounded memory;
  - a script that ends while a collective is paused in step mode says so;
  - SIGTERM and SIGHUP stop the ranks, remove the session's token file and
    print one line.

usage: test_shell_input.py DISTLAB
"""
import os
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures  # noqa: E402

EXE = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="distlab-input-")


def shell(args, stdin=b"", np=2, timeout=120):
    p = subprocess.run([EXE, "shell", "--np", str(np), "--timeout", "10"] + args, input=stdin,
                       capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def children_of(pid):
    """The pids whose parent is pid (the ranks of a shell)."""
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(d))
    return kids


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def read_until(p, stream, pattern, timeout):
    """Reads stream (a pipe of p) until pattern matches; returns the text."""
    text = b""
    end = time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([stream], [], [], max(0.0, end - time.time()))
        if not r:
            break
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            break
        text += chunk
        if re.search(pattern, text.decode(errors="replace")):
            break
    return text.decode(errors="replace")


# ---- scripts of any length ----

path = os.path.join(TMP, "ranks.dl")
with open(path, "w") as f:
    f.write("ranks\n" * 20000)
rc, out, err = shell([path])
check("20000 lines of `ranks` from a file", rc == 0 and out.count("ready") == 40000,
      "rc=%d %s" % (rc, err))

rc, out, err = shell([], stdin=b"set check on\n" * 10000)
check("10000 lines of `set check on` on standard input", rc == 0, "rc=%d %s" % (rc, err))

rc, out, err = shell(["-k"], stdin=b"t = )\n" * 10000)
check("10000 malformed lines with -k: each fails, no crash",
      rc == 1 and err.count("failed: t = )") == 10000, "rc=%d %s" % (rc, err[-500:]))
# An open bracket joins the lines after it, as Python joins them: 10000
# lines of `t = (` are one statement, which fails once.
rc, out, err = shell(["-k"], stdin=b"t = (\n" * 10000)
check("10000 lines of an open bracket with -k: one statement, failing once, no crash",
      rc == 1 and err.count("failed: t = (") == 1 and "expected ')', found '='" in err,
      "rc=%d %s" % (rc, err[-500:]))

rnd = random.Random(7)
garbage = bytes(rnd.getrandbits(8) for _ in range(3_000_000))
rc, out, err = shell(["-k"], stdin=garbage)
check("3 MB of random bytes with -k: exit 1, no crash", rc == 1 and "line" in err,
      "rc=%d %s" % (rc, err[-500:]))

# ---- endless input, NUL bytes ----

p = subprocess.Popen(["/usr/bin/time", "-f", "maxrss=%M", EXE, "shell", "--np", "2"],
                     stdin=open("/dev/zero", "rb"), stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
try:
    out, err = p.communicate(timeout=30)
    err = err.decode()
    rss = int(re.search(r"maxrss=(\d+)", err).group(1))
    check("/dev/zero: one line naming the limit, bounded memory",
          p.returncode == 1 and "line 1 is longer than 1048576 bytes" in err and rss < 100_000,
          err)
except subprocess.TimeoutExpired:
    p.kill()
    check("/dev/zero: one line naming the limit, bounded memory", False, "hung")

p = subprocess.Popen([EXE, "shell", "--np", "1"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
try:
    chunk = b"x" * 65536
    for _ in range(40):  # 2.5 MiB with no newline; the shell gives up at 1 MiB
        p.stdin.write(chunk)
    p.stdin.close()
except BrokenPipeError:
    pass
try:
    out, err = p.communicate(timeout=30)
    check("an endless line: 'longer than' error", p.returncode == 1
          and b"line 1 is longer than" in err, err)
except subprocess.TimeoutExpired:
    p.kill()
    check("an endless line: 'longer than' error", False, "hung")

rc, out, err = shell([], stdin=b"t = ones(1)\nt = 1\x002\nprint t\n", np=1)
check("a NUL byte fails its line", rc == 1 and "line 2 contains a NUL byte" in err
      and "t = tensor([1.])" in out and "value" not in out, out + err)
rc, out, err = shell(["-k"], stdin=b"t\x00 = 1\nprint 3\n", np=1)
check("a NUL byte with -k: the next line runs", rc == 1 and "line 1 contains a NUL byte" in err
      and "value = 3" in out, out + err)

rc, out, err = shell([], stdin=b"x = 1 \x1b[31mred\n", np=1)
check("a failed line is echoed with its control bytes escaped",
      rc == 1 and "line 1 failed: x = 1 \\e[31mred" in err and "\x1b" not in err, repr(err))
rc, out, err = shell([], stdin=b"bogus " + b"y" * 100000 + b"\n", np=1)
echo = [l for l in err.splitlines() if "line 1 failed" in l]
check("a long failed line is echoed cut", len(echo) == 1 and len(echo[0]) < 400
      and "(100006 bytes)" in echo[0], repr(err[-500:]))

# ---- line by line ----

p = subprocess.Popen([EXE, "shell", "--np", "2", "--timeout", "10"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
p.stdin.write(b"t = arange(2) + rank; all_reduce t\n")
p.stdin.flush()
got = read_until(p, p.stdout, r"rank 1: t = tensor\(\[1, 3\]\)", 20)
check("a piped line runs before standard input ends", "rank 1: t = tensor([1, 3])" in got, got)
p.stdin.write(b"print t\n")
p.stdin.flush()
got = read_until(p, p.stdout, r"rank 1: t = tensor\(\[1, 3\]\)", 20)
check("and the next one too", "rank 1: t = tensor([1, 3])" in got, got)
p.stdin.close()
p.wait(timeout=30)
check("EOF ends the shell", p.returncode == 0, p.returncode)

p = subprocess.Popen([EXE, "shell", "--np", "1", "--listen", "127.0.0.1:0"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
got = read_until(p, p.stderr, r"distlab worker --join \S+", 20)
check("--listen opens its port before standard input ends", "--join 127.0.0.1:" in got, got)
p.stdin.close()
p.wait(timeout=30)

# ---- step mode in a script ----

rc, out, err = shell(["-c", "step on; t = arange(2) + rank; all_reduce t; print t"])
check("a script ending while paused says so and fails",
      rc == 1 and "the script ended while all_reduce is paused before step 1/" in err, out + err)
rc, out, err = shell(["-c", "step on; t = arange(2) + rank; all_reduce t; print t\ncontinue"])
check("`continue` on a later line finishes the paused line",
      rc == 0 and out.count("rank 1: t = tensor([1, 3])") >= 1, out + err)

# ---- SIGTERM and SIGHUP ----

for sig, code in ((signal.SIGTERM, 143), (signal.SIGHUP, 129)):
    name = signal.Signals(sig).name
    p = subprocess.Popen([EXE, "shell", "--np", "2", "--listen", "127.0.0.1:0"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got = read_until(p, p.stderr, r"--token-file (\S+)", 20)
    m = re.search(r"--token-file (\S+)", got)
    token = m.group(1) if m else None
    p.stdin.write(b"barrier\n")
    p.stdin.flush()
    time.sleep(1.0)
    ranks = children_of(p.pid)
    p.send_signal(sig)
    try:
        p.wait(timeout=15)  # standard input stays open: the signal alone ends the shell
        err = p.stderr.read().decode()
    except subprocess.TimeoutExpired:
        p.kill()
        err = "hung"
    p.stdin.close()
    time.sleep(0.3)
    check("%s: one line, exit %d" % (name, code),
          p.returncode == code and "stopping the ranks and leaving" in err, "%s %s" % (p.returncode, err))
    check("%s: the token file is removed" % name, token is not None and not os.path.exists(token),
          token)
    check("%s: the ranks are gone" % name, len(ranks) == 2 and not any(alive(r) for r in ranks),
          ranks)

# SIGINT on a script: it stops where it was, saying so in one line, 130.
with tempfile.NamedTemporaryFile("w", suffix=".dlab", delete=False) as f:
    f.write("x = 1\nfor i in range(100000000):\n    x = x + 1\n")
    script = f.name
p = subprocess.Popen([EXE, "shell", "--np", "2", script], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
read_until(p, p.stdout, r"rank 1: x = 1", 20)
time.sleep(0.5)
p.send_signal(signal.SIGINT)
try:
    p.wait(timeout=15)
    err = p.stderr.read().decode()
except subprocess.TimeoutExpired:
    p.kill()
    err = "hung"
os.unlink(script)
check("SIGINT on a script: one line naming the line it stopped at, exit 130",
      p.returncode == 130 and err == "distlab: %s: interrupted by SIGINT at line 2; stopping the "
      "ranks\n" % script, "%s %r" % (p.returncode, err))

print("shell_input: %d failed" % len(failures))
sys.exit(1 if failures else 0)
