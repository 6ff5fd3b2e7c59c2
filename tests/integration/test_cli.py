#!/usr/bin/env python3
"""distlab's command line: help and version, every usage error (exit status 2,
one line on stderr that names the problem and, where it can, lists what is
accepted), `explain` and `explain --list`, `run`'s exact output for torch's
examples (scatter, gather, all_gather, reduce, ping-pong), a `bench --json`
smoke run, and sizes: a tensor past the old frame limit, sizes refused for
memory or arena, and bench sizes below one element.
Also the environment a rank reads (DISTLAB_TIMEOUT, DISTLAB_FAULT,
DISTLAB_CONTROL) and what is said when a worker or a rank cannot reach its
peer, and that an argument echoed in an error can neither drive the
terminal nor flood it.

usage: test_cli.py DISTLAB_EXE [--version X.Y.Z]
"""

import argparse
import concurrent.futures
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlcheck as dc  # noqa: E402
from run_matrix import ALGOS, P2P  # noqa: E402

COLLECTIVES = ["broadcast", "scatter", "gather", "reduce", "all_gather", "all_reduce",
               "reduce_scatter", "all_to_all", "barrier"]
PRIMITIVES = ["send", "recv", "isend", "irecv"] + COLLECTIVES + ["pingpong"]
RING_NEIGHBOURS_4 = {"r0 -> r1", "r1 -> r2", "r2 -> r3", "r3 -> r0"}


class Checker:
    def __init__(self, exe):
        self.exe = exe
        self.n = 0
        self.failures = []

    def fail(self, res, msg):
        self.failures.append((res.cmd if res else "-", msg))

    def run(self, *args, **kw):
        return dc.run([self.exe] + list(args), timeout=kw.get("timeout", 60),
                      env_extra=kw.get("env"))

    def ok(self, args, stdout_has=(), stdout_re=None):
        """The command exits 0, prints to stdout and nothing to stderr."""
        self.n += 1
        r = self.run(*args)
        if r.rc != 0:
            self.fail(r, "exit status %s, expected 0; stderr %r" % (r.rc, r.err))
        elif not r.out.strip():
            self.fail(r, "printed nothing on stdout")
        elif r.err.strip():
            self.fail(r, "unexpected stderr %r" % r.err)
        for s in stdout_has:
            if s not in r.out:
                self.fail(r, "stdout lacks %r" % s)
        if stdout_re and not re.search(stdout_re, r.out, re.M):
            self.fail(r, "stdout does not match %r: %r" % (stdout_re, r.out[:300]))
        return r

    def usage_error(self, args, names=(), lists=(), env=None):
        """The command exits 2 without output on stdout and with one line on
        stderr that contains every string in names and every accepted value in
        lists."""
        self.n += 1
        r = self.run(*args, env=env)
        if r.rc != 2:
            self.fail(r, "exit status %s, expected 2 (usage error); stdout %r stderr %r"
                      % (r.rc, r.out[:200], r.err[:300]))
            return r
        lines = r.err.rstrip("\n").split("\n")
        if len(lines) != 1 or not lines[0].strip():
            self.fail(r, "stderr should be exactly one line, got %r" % r.err)
            return r
        line = lines[0]
        if not line.startswith("distlab"):
            self.fail(r, "error line does not start with 'distlab': %r" % line)
        for s in names:
            if s not in line:
                self.fail(r, "error line does not name %r: %r" % (s, line))
        missing = [v for v in lists if not re.search(r"\b%s\b" % re.escape(v), line)]
        if missing:
            self.fail(r, "error line does not list %s: %r" % (", ".join(missing), line))
        if r.out:
            self.fail(r, "usage error printed on stdout: %r" % r.out[:200])
        return r


def check_help(c, version):
    r = c.ok(["--help"], stdout_has=["run", "bench", "explain", "usage"])
    c.ok(["help"], stdout_has=["usage"])
    # `distlab help run` is `distlab run --help`.
    r = c.ok(["help", "run"], stdout_has=["usage: distlab run", "--np"])
    if "commands" in r.out.lower() and "bench" in r.out and "usage: distlab COMMAND" in r.out:
        c.fail(r, "help run printed the top-level help: %r" % r.out[:200])
    c.ok(["-h"], stdout_has=["usage"])
    r = c.ok(["--version"], stdout_re=r"^distlab \d+\.\d+\.\d+\S*$")
    if version and r.out.strip() != "distlab " + version:
        c.fail(r, "version %r, the project's is %r" % (r.out.strip(), version))
    r = c.ok(["run", "--help"], stdout_has=["--np", "--algo", "--dtype", "--count", "--op",
                                           "--root", "--timeout"])
    for p in PRIMITIVES:
        if p not in r.out:
            c.fail(r, "run --help does not mention %s" % p)
    for d in dc.ALL_DTYPES:
        if d not in r.out:
            c.fail(r, "run --help does not mention dtype %s" % d)
    for op in dc.ALL_OPS:
        if op not in r.out:
            c.fail(r, "run --help does not mention op %s" % op)
    c.ok(["run", "all_reduce", "--help"], stdout_has=["--np"])
    c.ok(["bench", "--help"], stdout_has=["busbw"])
    c.ok(["explain", "--help"], stdout_has=["--list", "--symbolic"])
    # The symbolic view: a partial sum travelling round the ring, and the
    # tree's scratch buffer while it holds the gathered chunks.
    c.ok(["explain", "all_reduce", "--algo", "ring", "--np", "4", "--count", "4", "--symbolic"],
         stdout_has=["  r1  in  [a0+b0, b1, b2, b3]", "  r3  in  [a0+b0+c0+d0, b1+c1+d1, c2+d2, d3]",
                     "  r0  in  [a0+b0+c0+d0, a1+b1+c1+d1, a2+b2+c2+d2, a3+b3+c3+d3]"])
    c.ok(["explain", "gather", "--algo", "tree", "--np", "4", "--count", "1", "--symbolic"],
         stdout_has=["  r2  tmp [c0, d0]", "  r0  out [a0, b0, c0, d0]"])
    c.ok(["rank", "--help"], stdout_has=["RANK"])
    # explain's default over TCP is run's over TCP (ring at 40 KB, not share).
    r = c.run("run", "all_reduce", "--np", "2", "--count", "5000", "--transport", "tcp")
    algo = re.search(r"algo=(\S+)", r.out)
    c.ok(["explain", "all_reduce", "--np", "2", "--count", "5000", "--transport", "tcp"],
         stdout_has=["all_reduce with %s:" % (algo.group(1) if algo else "?")])
    # Every rank connects to the ranks below it at once: 96 over TCP, where
    # the first rank once refused the connections past 32 in their handshake.
    c.ok(["run", "all_reduce", "--np", "96", "--count", "1", "--transport", "tcp"],
         stdout_has=["rank 95: tensor = tensor([4656])"])


def check_usage_errors(c):
    E = c.usage_error
    E(["frobnicate"], names=["frobnicate"], lists=["run", "bench", "explain", "rank"])
    E(["help", "frobnicate"], names=["frobnicate"], lists=["run", "bench", "explain", "rank"])
    for cmd in ("run", "bench"):
        E([cmd, "all_reduce", "--bogus"], names=["--bogus"])
        E([cmd, "all_reduce", "-Z"], names=["-Z"])
        E([cmd, "all_reduce", "--np"], names=["--np"])  # value missing
        E([cmd, "all_reduce", "--dtype", "float128"], names=["float128"], lists=dc.ALL_DTYPES)
        E([cmd, "all_reduce", "--op", "mean"], names=["mean"], lists=dc.ALL_OPS)
        E([cmd, "all_reduce", "--algo", "bogo"], names=["bogo"], lists=ALGOS["all_reduce"])
        E([cmd, "all_reduce", "--np", "0"], names=["--np", "0"])
        E([cmd, "all_reduce", "--np", "-3"], names=["--np", "-3"])
        E([cmd, "all_reduce", "--np", "two"], names=["--np", "two"])
        E([cmd, "broadcast", "--np", "4", "--root", "4"], names=["--root", "4"])
        E([cmd, "reduce", "--np", "2", "--root", "-1"], names=["--root", "-1"])
        E([cmd, "all_reduce", "--timeout", "0"], names=["--timeout"])
        E([cmd, "all_reduce", "--timeout", "soon"], names=["--timeout", "soon"])
        E([cmd, "all_reduce", "--timeout", "inf"], names=["--timeout", "inf"])
        E([cmd, "all_reduce", "--timeout", "1e18"], names=["--timeout", "1e18", "86400"])
        E([cmd, "all_reduce", "-np", "2"], names=["--np N, with two dashes"])
    for size in ("0x10", "nan", "inf"):
        E(["bench", "all_reduce", "-b", size], names=["-b", size])
    E(["bench", "all_reduce", "-f", "1.0000001"], names=["-f 1.0000001"])
    E(["explain", "all_reduce", "--algo", ","], names=["--algo", "no algorithm"],
      lists=ALGOS["all_reduce"])
    E(["explain", "broadcast", "--np", "2,4", "--root", "3"], names=["--root 3", "--np 2"])
    E(["run"], names=[], lists=PRIMITIVES)
    E(["run", "bcast"], names=["bcast"], lists=PRIMITIVES)
    E(["run", "all_reduce_x"], names=["all_reduce_x"], lists=PRIMITIVES)
    E(["run", "all_reduce", "extra"], names=["extra"])
    E(["run", "all_reduce", "--count", "-1"], names=["--count", "-1"])
    E(["run", "all_reduce", "--count", "1.5"], names=["--count", "1.5"])
    E(["run", "gather", "--np", "3", "--root", "3"], names=["--root", "3"])
    E(["bench", "scatter", "--lists", "some"], names=["--lists", "some"])
    E(["run", "scatter", "--lists", "apart"], names=["--lists"])
    E(["run", "send", "--np", "2", "--root", "2"], names=["--root", "2"])
    E(["run", "recv", "--np", "3", "--root", "7"], names=["--root", "7"])
    for p in P2P:
        E(["run", p, "--np", "1"], names=[p])
        E(["run", p, "--np", "2", "--algo", "ring"], names=["--algo"])
        E(["bench", p], names=[p])
    # an algorithm that exists but does not implement the collective: named,
    # with every algorithm that does
    for coll, algos in ALGOS.items():
        for other in sorted({a for v in ALGOS.values() for a in v} - set(algos)):
            for cmd in (["run", coll, "--np", "4", "--algo", other],
                        ["explain", coll, "--np", "4", "--algo", other]):
                E(cmd, names=[other, coll], lists=algos)
    # bitwise ops are for integers and bool only; bool has no average
    for d in dc.FLOAT_DTYPES:
        for op in dc.BITWISE_OPS:
            E(["run", "all_reduce", "--np", "2", "--dtype", d, "--op", op], names=[op, d])
    E(["run", "reduce_scatter", "--np", "2", "--dtype", "bfloat16", "--op", "bxor"],
      names=["bxor", "bfloat16"])
    E(["run", "all_reduce", "--np", "2", "--dtype", "bool", "--op", "avg"], names=["avg", "bool"])
    E(["bench", "all_reduce", "--np", "2", "--dtype", "float32", "--op", "bor"],
      names=["bor", "float32"])
    E(["bench", "all_reduce", "--count", "4"], names=["--count"])
    E(["bench", "all_reduce", "-b", "64", "-e", "8"], names=["-b"])
    E(["bench", "all_reduce", "-b", "lots"], names=["-b", "lots"])
    E(["bench", "all_reduce", "-f", "inf"], names=["-f", "inf"])
    # NCCL has no bitwise ops: refused before any rank starts (where the
    # nccl module cannot load, the backend itself is refused, as ever).
    r = E(["run", "all_reduce", "--np", "2", "--backend", "nccl", "--op", "band", "--dtype",
           "int32"], names=["nccl"])
    if "bitwise ops (band) are not supported by NCCL" not in r.err and "not support" not in r.err:
        c.fail(r, "nccl with band not refused for its op: %r" % r.err)
    E(["bench", "all_reduce", "-b", "8", "-e", "64M", "-f", "1"],
      names=["-f 1", "more than 10000 sizes"])
    # bench takes collectives only, and says so.
    for args in (["bench"], ["bench", "foo"]):
        r = E(args, lists=COLLECTIVES)
        if any(re.search(r"\b%s\b" % p, r.err) for p in ("send", "recv", "pingpong")):
            c.fail(r, "bench offers primitives it refuses: %r" % r.err)
    r = E(["run", "all_reduc"], names=["all_reduc"], lists=PRIMITIVES)
    if "did you mean 'all_reduce'?" not in r.err:
        c.fail(r, "no suggestion for a near-miss primitive: %r" % r.err)
    E(["explain"])  # (does not list the collectives, unlike `run` with no primitive)
    E(["explain", "send"], names=["send"], lists=COLLECTIVES)
    E(["explain", "pingpong"], names=["pingpong"], lists=COLLECTIVES)
    E(["explain", "all_reduce", "--algo", "bogo"], names=["bogo"], lists=ALGOS["all_reduce"])
    for nps in ("2,,4", ",2", "2,"):
        E(["explain", "all_reduce", "--np", nps], names=["--np", "empty world size", nps])
    E(["explain", "all_reduce", "--np", "2,300"], names=["--np", "300"])
    E(["scenario", "run", "all_reduce", "--np", "300"], names=["--np", "300"])
    E(["demo"], names=["distlab demo elastic"])
    E(["demo", "fireworks"], names=["'fireworks'", "elastic"])
    E(["explain", "broadcast", "--np", "4", "--root", "9"], names=["--root", "9"])
    E(["explain", "all_reduce", "--np", "0"], names=["--np"])
    E(["explain", "all_reduce", "--dtype", "float8"], names=["float8"], lists=dc.ALL_DTYPES)
    E(["explain", "--list", "extra"], names=["extra"])
    E(["explain", "all_reduce", "--list"], names=["all_reduce"])
    E(["explain", "all_reduce", "--transport", "udp"], names=["--transport", "udp"])
    E(["explain", "all_reduce", "--algo", "share", "--transport", "tcp"], names=["share", "tcp"])
    # An unknown short flag names the word typed, not the word before it;
    # a long flag typed with one dash points to its two.
    for args, word in ((["explain", "all_reduce", "-np", "4"], "-np"),
                       (["shell", "-np", "2"], "-np"),
                       (["demo", "elastic", "-epochs", "3"], "-epochs"),
                       (["launch", "-xyz", "--", "true"], "-xyz"),
                       (["worker", "-q"], "-q"),
                       (["train", "-Z"], "-Z"),
                       (["backends", "-Zq"], "-Zq")):
        r = E(args, names=["'%s'" % word])
        before = args[args.index(word) - 1]
        if "'%s'" % before in r.err:
            c.fail(r, "names %r, the word before the flag: %r" % (before, r.err))
    E(["explain", "all_reduce", "-np", "4"], names=["--np, with two dashes"])
    # `distlab rank PRIMITIVE` outside a launcher points to the command that exists
    r = E(["rank", "bench", "all_reduce"], names=["distlab bench all_reduce"])
    if "distlab run bench" in r.err:
        c.fail(r, "suggests `distlab run bench`, which does not exist: %r" % r.err)
    E(["rank", "run", "all_reduce"], names=["distlab run all_reduce"])
    E(["rank", "all_reduce"], names=["distlab run all_reduce"])


def check_echoed_arguments(c):
    """An argument echoed in an error: control bytes escaped, a long one cut."""
    E = c.usage_error
    for args in (["run", "\x1b[31mfoo"], ["\x1b]0;title\x07"],
                 ["run", "all_reduce", "--np", "\x1b[2J"],
                 ["run", "all_reduce", "--dtype=\x1b[1mf"], ["explain", "\x9b31m\x01"]):
        r = E(args)
        if any(ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f for ch in r.err.rstrip("\n")):
            c.fail(r, "control bytes echoed raw: %r" % r.err)
        elif "\\e" not in r.err and "\\x" not in r.err:
            c.fail(r, "control bytes not shown escaped: %r" % r.err)
    long_arg = "a" * 100000
    for args in (["run", long_arg], ["run", "all_reduce", "--np", long_arg], [long_arg]):
        r = E(args, names=["a" * 40, "...", "100000 bytes"])
        if len(r.err) > 400:
            c.fail(r, "a 100 KB argument echoed at length %d" % len(r.err))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def check_environment(c):
    """DISTLAB_TIMEOUT, DISTLAB_FAULT, DISTLAB_SHM_COPY, DISTLAB_SHM_FENCE, DISTLAB_BIND,
    DISTLAB_LOG and DISTLAB_ARENA_MB are refused when malformed, by every command that
    starts ranks or is one, DISTLAB_AUTH_TIMEOUT by those and by launch and demo,
    DISTLAB_TRANSPORT by those that start ranks, and DISTLAB_FAULT
    for a rank the job lacks; DISTLAB_CONTROL likewise; the rank honours DISTLAB_TIMEOUT;
    a refused connection is called so."""
    E = c.usage_error
    cmds = [["run", "all_reduce", "--np", "2"], ["bench", "all_reduce", "--np", "2"],
            ["shell", "-c", "barrier"], ["rank"],
            ["worker", "--join", "127.0.0.1:1", "--token-file", "/nonexistent"]]
    for value in ("abc", "-1", "0", "nan", "5s", "\x1b[31m"):
        for cmd in cmds:
            r = E(cmd, names=["DISTLAB_TIMEOUT", "seconds"], env={"DISTLAB_TIMEOUT": value})
            if value.isprintable() and "'%s'" % value not in r.err:
                c.fail(r, "the value %r is not named: %r" % (value, r.err))
    # (variable, malformed values, what the line must name, the commands that check it)
    # --transport wins over DISTLAB_TRANSPORT (run_matrix.py --transport checks that), so
    # only the commands that start ranks check it.
    malformed = [
        ("DISTLAB_FAULT", ("garbage", "1", "1:x", "-1:2", "1:0", "1:2:3", ":3", "1:2:explode",
                           "1:2:"), "RANK:STEP", cmds),
        ("DISTLAB_SHM_COPY", ("yes", "1", "ON"), "auto, on or off", cmds),
        ("DISTLAB_SHM_FENCE", ("never", "on", "ALWAYS"), "auto or always", cmds),
        ("DISTLAB_BIND", ("socket", "1", "CORE", "core,none"), "auto, core or none", cmds),
        ("DISTLAB_TRANSPORT", ("pigeon", "SHM", "shm,tcp"), "auto, shm or tcp", cmds[:3]),
        ("DISTLAB_LOG", ("loud", "3", "WARN"), "error, warn, info or debug", cmds),
        ("DISTLAB_ARENA_MB", ("abc", "0", "-5", "12x"), "MiB", cmds),
        # every command may listen: launch and the demo check it too (a
        # --help past -- is the launched command's)
        ("DISTLAB_AUTH_TIMEOUT", ("abc", "0", "0.05", "-1", "3601", "2s"), "seconds",
         cmds + [["launch", "--standalone", "--", "true"], ["demo", "elastic"],
                 ["launch", "--standalone", "--", "prog", "--help"]]),
    ]
    for var, values, form, checked_by in malformed:
        for value in values:
            for cmd in checked_by:
                E(cmd, names=[var, "'%s'" % value, form], env={var: value})
    # A fault for a rank the job does not have would never fire.
    for cmd in cmds[:2]:
        E(cmd, names=["DISTLAB_FAULT=5:99:stop", "rank 5", "2 ranks"],
          env={"DISTLAB_FAULT": "5:99:stop"})
    # So would one past the steps of a run's collective (4 ring steps at
    # np 3, one call on the mpi backend).
    E(["run", "all_reduce", "--np", "3", "--algo", "ring"],
      names=["DISTLAB_FAULT=1:5", "step 5", "all_reduce (ring) at --np 3 has 4 steps"],
      env={"DISTLAB_FAULT": "1:5"})
    E(["run", "all_reduce", "--np", "2", "--backend", "mpi"],
      names=["DISTLAB_FAULT=1:2:stop", "mpi backend", "1 step"], env={"DISTLAB_FAULT": "1:2:stop"})
    # Well-formed values still run.
    c.ok(["run", "all_reduce", "--np", "2", "--count", "2"])
    c.n += 1
    r = c.run("bench", "all_reduce", "--np", "2", "-b", "8", "-e", "8", "-n", "5", "-w", "1",
              env={"DISTLAB_TIMEOUT": "20", "DISTLAB_FAULT": "1:999:stop", "DISTLAB_LOG": "error",
                   "DISTLAB_TRANSPORT": "tcp", "DISTLAB_ARENA_MB": "2048"})
    if r.rc != 0:
        c.fail(r, "valid DISTLAB_TIMEOUT and DISTLAB_FAULT refused: %r" % r.err)
    for value in ("auto", "on", "off"):
        c.n += 1
        r = c.run("run", "broadcast", "--np", "3", "--count", "1024",
                  env={"DISTLAB_SHM_COPY": value})
        if r.rc != 0 or r.out.count("tensor([   1,    2,    3,  ..., 1022, 1023, 1024])") != 4:
            c.fail(r, "DISTLAB_SHM_COPY=%s: broadcast of 8 KiB: %r" % (value, r.out + r.err))
    for value in ("auto", "always"):
        c.n += 1
        r = c.run("run", "all_reduce", "--np", "3", "--count", "2", env={"DISTLAB_SHM_FENCE": value})
        if r.rc != 0 or r.out.count("tensor([ 9, 12])") != 3:
            c.fail(r, "DISTLAB_SHM_FENCE=%s: all_reduce: %r" % (value, r.out + r.err))
    for value in ("auto", "core", "none"):
        c.n += 1
        r = c.run("run", "all_reduce", "--np", "3", "--count", "2", env={"DISTLAB_BIND": value})
        if r.rc != 0 or r.out.count("tensor([ 9, 12])") != 3:
            c.fail(r, "DISTLAB_BIND=%s: all_reduce: %r" % (value, r.out + r.err))

    rank_env = {"DISTLAB_TOKEN": "0123456789abcdef0123456789abcdef", "RANK": "0",
                "WORLD_SIZE": "1"}
    for value in ("garbage", "host:", "host:0", "host:99999", ":5000", "1.2.3.4:5x"):
        r = E(["rank"], names=["DISTLAB_CONTROL", "'%s'" % value, "malformed", "HOST:PORT"],
              env=dict(rank_env, DISTLAB_CONTROL=value))
        if "not set" in r.err:
            c.fail(r, "a malformed DISTLAB_CONTROL called unset: %r" % r.err)

    # A controller that never answers: the rank gives up after DISTLAB_TIMEOUT.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    try:
        c.n += 1
        addr = "127.0.0.1:%d" % silent.getsockname()[1]
        t0 = time.monotonic()
        r = c.run("rank", timeout=60,
                  env=dict(rank_env, DISTLAB_CONTROL=addr, DISTLAB_TIMEOUT="1"))
        secs = time.monotonic() - t0
        if r.rc in (0, "timeout") or secs > 10:
            c.fail(r, "DISTLAB_TIMEOUT=1: the rank exited %s after %.1f s" % (r.rc, secs))
    finally:
        silent.close()

    # Nobody listens: "connection refused", not "connection closed".
    with tempfile.TemporaryDirectory() as d:
        tf = os.path.join(d, "token")
        with open(tf, "w") as f:
            f.write("0123456789abcdef0123456789abcdef\n")
        os.chmod(tf, 0o600)
        # A port bound but not listening refuses connections, and nobody
        # else can take it meanwhile (a free port could be taken by then).
        held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        c.n += 1
        r = c.run("worker", "--join", "127.0.0.1:%d" % port, "--token-file", tf,
                  "--timeout", "1")
        lines = r.err.strip().split("\n")
        if r.rc != 1 or len(lines) != 1 or "connection refused" not in lines[0]:
            c.fail(r, "expected exit 1 and one line saying 'connection refused': %s %r"
                   % (r.rc, r.err))
        c.n += 1
        r = c.run("rank", env=dict(rank_env, DISTLAB_CONTROL="127.0.0.1:%d" % port,
                                   DISTLAB_TIMEOUT="1"))
        if r.rc in (0, "timeout") or "connection refused" not in r.err:
            c.fail(r, "expected 'connection refused': %s %r" % (r.rc, r.err))
        held.close()


def check_explain(c):
    r = c.ok(["explain", "all_reduce", "--algo", "ring", "--np", "4"])
    text = r.out
    steps = re.findall(r"^step (\d+)/(\d+)\s+(\S+)\s*$", text, re.M)
    if [int(s[0]) for s in steps] != [1, 2, 3, 4, 5, 6] or {s[1] for s in steps} != {"6"}:
        c.fail(r, "expected steps 1/6 .. 6/6, got %r" % (steps,))
    else:
        phases = [s[2] for s in steps]
        if phases != ["reduce-scatter"] * 3 + ["all-gather"] * 3:
            c.fail(r, "phases %r, expected 3 x reduce-scatter then 3 x all-gather" % phases)
        blocks = re.split(r"^step \d+/\d+.*$", text, flags=re.M)[1:]
        for k, b in enumerate(blocks):
            # The ring's picture (core/sched/ring.c): rank r sends chunk r - k,
            # then r + 1 - k, of 8 int64 cut in 4 (2 elements, 16 B), in place.
            lines = [ln for ln in b.split("\n") if ln.startswith("  r")]
            want = []
            for src in range(4):
                ch = (src - k) % 4 if k < 3 else (src + 1 - (k - 3)) % 4
                want.append("  r%d -> r%d  chunk %d  %-6s  16 B  in[%d:%d] -> in[%d:%d]" % (
                    src, (src + 1) % 4, ch, "reduce" if k < 3 else "copy",
                    2 * ch, 2 * ch + 2, 2 * ch, 2 * ch + 2))
            if lines != want:
                c.fail(r, "step %d prints\n%s\nexpected\n%s" %
                       (k + 1, "\n".join(lines), "\n".join(want)))
            msgs = set(re.findall(r"\b(r\d+ -> r\d+)\b", b))
            if msgs != RING_NEIGHBOURS_4:
                c.fail(r, "step %d: messages %s, a ring of 4 sends %s" %
                       (k + 1, sorted(msgs), sorted(RING_NEIGHBOURS_4)))
            kinds = re.findall(r"\b(reduce|copy)\b", b)
            want = "reduce" if k < 3 else "copy"
            if len(kinds) != 4 or set(kinds) != {want}:
                c.fail(r, "step %d: actions %r, expected four %s" % (k + 1, kinds, want))
    m = re.search(r"^steps (\d+), messages (\d+)", text, re.M)
    if not m or (m.group(1), m.group(2)) != ("6", "24"):
        c.fail(r, "summary line should say 'steps 6, messages 24': %r" % (m and m.group(0)))
    if "cost" not in text:
        c.fail(r, "no cost estimate")
    # Lists compare: a row per algorithm and world size, the parameter
    # server's bytes growing as (n-1) B where the ring's stay under 2 B.
    r = c.ok(["explain", "all_reduce", "--algo", "direct,ring", "--np", "2,4,8", "--dtype",
              "float32"])
    rows = {(m.group(1), int(m.group(2))): m.group(3)
            for m in re.finditer(r"^(\w+)\s+(\d+)\s+\d+\s+\d+\s+(\d+ B)\s", r.out, re.M)}
    want = {("direct", 2): "32 B", ("direct", 4): "96 B", ("direct", 8): "224 B",
            ("ring", 2): "32 B", ("ring", 4): "48 B", ("ring", 8): "56 B"}
    if rows != want:
        c.fail(r, "most sent per row %r, expected %r" % (rows, want))
    E = c.usage_error
    E(["explain", "all_reduce", "--np", "2,x"], names=["--np", "x"])
    E(["explain", "all_reduce", "--algo", "ring,tree"], names=["tree"], lists=ALGOS["all_reduce"])
    E(["explain", "all_reduce", "--np", "2,4", "--symbolic"], names=["--symbolic"])
    # A comparison checks each row's job as one explain does, over its transport.
    E(["explain", "all_reduce", "--op", "band", "--dtype", "float32", "--np", "2,4"],
      names=["band", "float32"])
    E(["explain", "all_reduce", "--algo", "share,ring", "--transport", "tcp"],
      names=["share", "tcp"])
    E(["explain", "all_reduce", "--np", "2,4", "--algo", "share", "--transport", "tcp"],
      names=["share", "tcp"])
    r = c.ok(["explain", "all_reduce", "--np", "2,4", "--count", "100000", "--transport", "tcp"])
    if re.search(r"^share\s", r.out, re.M) or not re.search(r"^ring\s", r.out, re.M):
        c.fail(r, "over tcp the default is not share but ring: %r" % r.out)
    # The last --np wins, a list or not.
    c.ok(["explain", "all_reduce", "--np", "2,4", "--np", "8"], stdout_has=["np 8,"])
    r = c.ok(["explain", "all_reduce", "--np", "8", "--np", "2,4"])
    if re.search(r"^\w+\s+8\s", r.out, re.M):
        c.fail(r, "a row for --np 8, which a later --np replaced: %r" % r.out)
    # explain draws the builtin backend's schedules: no --backend, --device.
    E(["explain", "all_reduce", "--backend", "builtin"], names=["--backend"])
    E(["explain", "all_reduce", "--device", "cuda"], names=["--device"])
    # --list: every algorithm, and what it implements
    r = c.ok(["explain", "--list"])
    listed = {}
    cur = None
    for ln in r.out.split("\n"):
        m = re.match(r"^(\w+)\s+\S", ln)
        if m:
            cur = m.group(1)
            listed[cur] = None
        m = re.match(r"^\s+implements:\s*(.*)$", ln)
        if m and cur:
            listed[cur] = set(m.group(1).split())
    want = {}
    for coll, algos in ALGOS.items():
        for a in algos:
            want.setdefault(a, set()).add(coll)
    if listed != want:
        c.fail(r, "explain --list says %r, expected %r" % (listed, want))
    # every collective and algorithm explains, at a few sizes
    for coll, algos in ALGOS.items():
        for a in algos:
            for np_ in (1, 3, 8):
                r = c.ok(["explain", coll, "--algo", a, "--np", str(np_), "--count", "5"],
                         stdout_re=r"^steps \d+, messages \d+")
                st = re.findall(r"^step (\d+)/(\d+)", r.out, re.M)
                m = re.search(r"^steps (\d+),", r.out, re.M)
                if m and len(st) != int(m.group(1)):
                    c.fail(r, "%d step blocks, summary says %s" % (len(st), m.group(1)))


# `distlab run PRIMITIVE --np N` prints torch's examples as torch prints them:
# the exact lines after the header. Reduce's other ranks hold what torch
# prints for its example with gloo (the in-place chain); gather's others have
# gather_list = None; ping-pong shows every rank after each leg.
TORCH_EXAMPLES = [
    (["scatter", "--np", "4"],
     "scatter  np=4  backend=builtin  algo=tree (2 steps)  dtype=int64  count=2  src=0",
     """before:
  rank 0: tensor = tensor([0, 0])
  rank 0: scatter_list = [tensor([1, 2]), tensor([3, 4]), tensor([5, 6]), tensor([7, 8])]
  rank 1: tensor = tensor([0, 0])
  rank 2: tensor = tensor([0, 0])
  rank 3: tensor = tensor([0, 0])
after:
  rank 0: tensor = tensor([1, 2])
  rank 1: tensor = tensor([3, 4])
  rank 2: tensor = tensor([5, 6])
  rank 3: tensor = tensor([7, 8])"""),
    (["gather", "--np", "4"],
     "gather  np=4  backend=builtin  algo=tree (2 steps)  dtype=int64  count=2  dst=0",
     """before:
  rank 0: tensor = tensor([1, 2])
  rank 1: tensor = tensor([3, 4])
  rank 2: tensor = tensor([5, 6])
  rank 3: tensor = tensor([7, 8])
after:
  rank 0: gather_list = [tensor([1, 2]), tensor([3, 4]), tensor([5, 6]), tensor([7, 8])]
  rank 1: gather_list = None
  rank 2: gather_list = None
  rank 3: gather_list = None"""),
    (["all_gather", "--np", "4"],
     "all_gather  np=4  backend=builtin  algo=linear (1 step)  dtype=int64  count=2",
     """before:
  rank 0: tensor = tensor([1, 2])
  rank 1: tensor = tensor([3, 4])
  rank 2: tensor = tensor([5, 6])
  rank 3: tensor = tensor([7, 8])
after:
  rank 0: tensor_list = [tensor([1, 2]), tensor([3, 4]), tensor([5, 6]), tensor([7, 8])]
  rank 1: tensor_list = [tensor([1, 2]), tensor([3, 4]), tensor([5, 6]), tensor([7, 8])]
  rank 2: tensor_list = [tensor([1, 2]), tensor([3, 4]), tensor([5, 6]), tensor([7, 8])]
  rank 3: tensor_list = [tensor([1, 2]), tensor([3, 4]), tensor([5, 6]), tensor([7, 8])]"""),
    (["reduce", "--np", "4"],
     "reduce  np=4  backend=builtin  algo=chain (3 steps)  dtype=int64  count=2  op=sum  dst=0",
     """before:
  rank 0: tensor = tensor([1, 2])
  rank 1: tensor = tensor([3, 4])
  rank 2: tensor = tensor([5, 6])
  rank 3: tensor = tensor([7, 8])
after:
  rank 0: tensor = tensor([16, 20])
  rank 1: tensor = tensor([15, 18])
  rank 2: tensor = tensor([12, 14])
  rank 3: tensor = tensor([7, 8])"""),
    # the tree, asked for, leaves the other ranks' tensors as they were
    (["reduce", "--np", "4", "--algo", "tree"],
     "reduce  np=4  backend=builtin  algo=tree (2 steps)  dtype=int64  count=2  op=sum  dst=0",
     """before:
  rank 0: tensor = tensor([1, 2])
  rank 1: tensor = tensor([3, 4])
  rank 2: tensor = tensor([5, 6])
  rank 3: tensor = tensor([7, 8])
after:
  rank 0: tensor = tensor([16, 20])
  rank 1: tensor = tensor([3, 4])
  rank 2: tensor = tensor([5, 6])
  rank 3: tensor = tensor([7, 8])"""),
    (["pingpong", "--np", "2"],
     "pingpong  np=2  backend=builtin",
     """before:
  rank 0: tensor = tensor([0.])
  rank 1: tensor = tensor([0.])
after r0 += 1:
  rank 0: tensor = tensor([1.])
  rank 1: tensor = tensor([0.])
after r0 -> r1:
  rank 0: tensor = tensor([1.])
  rank 1: tensor = tensor([1.])
after r1 += 1:
  rank 0: tensor = tensor([1.])
  rank 1: tensor = tensor([2.])
after:
  rank 0: tensor = tensor([2.])
  rank 1: tensor = tensor([2.])"""),
]


def check_torch_examples(c):
    for args, header, body in TORCH_EXAMPLES:
        r = c.ok(["run"] + args)
        want = [header] + body.split("\n")
        got = r.out.rstrip("\n").split("\n")
        if got != want:
            c.fail(r, "printed\n%s\nexpected\n%s" % ("\n".join(got), "\n".join(want)))


def check_bench(c):
    # Every collective; gather and scatter also with a root's list of
    # tensors allocated apart (at np=4 a tree's root sends two of them in
    # one message, from a staged copy).
    runs = [(coll, "3", []) for coll in ALGOS] + [
        (coll, np, ["--lists", "apart"]) for coll in ("gather", "scatter") for np in ("3", "4")]
    for coll, np, extra in runs:
        c.n += 1
        r = c.run("bench", coll, "--np", np, "-b", "8", "-e", "64", "-n", "2", "-w", "1", "--json",
                  *extra)
        if r.rc != 0:
            c.fail(r, "exit status %s; stderr %r" % (r.rc, r.err))
            continue
        try:
            j = json.loads(r.out)
        except ValueError as e:
            c.fail(r, "--json output is not JSON: %s" % e)
            continue
        rows = j.get("rows") or []
        if not rows:
            c.fail(r, "no rows")
        for row in rows:
            if row.get("wrong") != 0:
                c.fail(r, "row %r reports wrong elements" % row)
        # The top-level op is the rows' redop: "none" where there is no op.
        if {row.get("redop") for row in rows} != {j.get("op")}:
            c.fail(r, "op %r, rows' redop %r" % (j.get("op"), [row.get("redop") for row in rows]))
    # -c 0: nothing was checked, and the table says N/A, as nccl-tests.
    json_column(c, ["bench", "all_reduce", "--np", "2", "-b", "8", "-e", "16", "-n", "1", "-w",
                    "0", "-c", "0", "--json"], "wrong", [None, None], "null in each row (-c 0)")
    c.n += 1
    r = c.run("bench", "all_reduce", "--np", "2", "-b", "8", "-e", "16", "-n", "2", "-c", "0")
    rows = [l.split() for l in r.out.splitlines() if l and not l.startswith("#")]
    if r.rc != 0 or len(rows) != 2 or any(row[8] != "N/A" for row in rows) \
            or "# Out of bounds values : N/A" not in r.out:
        c.fail(r, "-c 0 does not say N/A: %r" % r.out)
    # Rows are printed as each size ends: a sweep whose third size hangs
    # (until its 2 s timeout) shows its first two while it still runs.
    c.n += 1
    argv = [c.exe, "bench", "all_reduce", "--np", "2", "-b", "8", "-e", "64", "-n", "5", "-w",
            "1", "--timeout", "2"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, DISTLAB_FAULT="1:20:hang"))
    rows, alive = [], False
    for line in p.stdout:
        if line.strip() and not line.startswith("#"):
            rows.append(line.split()[0])
            if len(rows) == 2:
                alive = p.poll() is None  # the hanging size has not ended yet
    err = p.stderr.read()
    p.wait(timeout=60)
    if p.returncode != 1 or rows != ["8", "16"] or not alive:
        c.fail(None, "rows before a failure did not come as their sizes ended: rc %s, rows %r, "
               "running when the second came: %s; %s" % (p.returncode, rows, alive, err))


class Seq:
    """A long 1-D tensor's values, computed only where they are read: what
    dlcheck.torch_repr reads of a summarised tensor is its length and edges."""

    def __init__(self, f, n):
        self.f, self.n = f, n

    def __len__(self):
        return self.n

    def __getitem__(self, s):
        return [self.f(i) for i in range(self.n)[s]]


def check_sizes(c):
    # A tensor whose bytes exceed the control channel's 256 MiB frame limit:
    # the ranks send what is printed, not the tensor.
    count = (256 << 20) // 8 + 1
    c.n += 1
    r = c.run("run", "all_reduce", "--np", "2", "--count", str(count), timeout=120)
    if r.rc != 0:
        c.fail(r, "exit status %s; stderr %r" % (r.rc, r.err))
    else:
        try:
            sections = dict(dc.split_output(r.out.rstrip("\n").split("\n")[1:]))
        except dc.ParseError as e:
            c.fail(r, "cannot parse the output: %s" % e)
            sections = {}
        want = {
            "before": [dc.torch_repr(Seq(lambda k, rk=rk: k + 1 + count * rk, count), "int64")
                       for rk in range(2)],
            "after": [dc.torch_repr(Seq(lambda k: 2 * k + 2 + count, count), "int64")] * 2,
        }
        for sec, texts in want.items():
            got = [t for (_, _, t) in sections.get(sec, [])]
            if len(got) != 2 or not all(dc.same_text_modulo_indent(w, g)
                                        for w, g in zip(texts, got)):
                c.fail(r, "%s: got %r, expected %r" % (sec, got, texts))
    # A size no machine here can hold is refused at once, in one line that
    # names the size and the limit, before any rank starts.
    c.n += 1
    r = c.run("bench", "all_reduce", "-b", "64G", "-e", "64G", "--np", "4", timeout=30)
    lines = r.err.rstrip("\n").split("\n")
    if r.rc != 1 or r.out or len(lines) != 1:
        c.fail(r, "expected exit 1 and one line on stderr; rc %s stdout %r stderr %r"
               % (r.rc, r.out[:200], r.err[:400]))
    elif not all(s in lines[0] for s in ("64G", "memory", "available", "--np")):
        c.fail(r, "the line should name the size, the memory available and --np: %r" % lines[0])
    elif r.secs > 5:
        c.fail(r, "took %.1f s to refuse" % r.secs)
    # An arena the user set too small for the job is refused, naming what it
    # needs: a usage error (2), as a malformed value is.
    c.n += 1
    r = dc.run([c.exe, "run", "all_reduce", "--np", "2", "--count", str(1 << 24)],
               timeout=30, env_extra={"DISTLAB_ARENA_MB": "64"})
    lines = r.err.rstrip("\n").split("\n")
    m = re.search(r"at least (\d+)", lines[0])
    if r.rc != 2 or r.out or len(lines) != 1 or "DISTLAB_ARENA_MB" not in lines[0] \
            or not m or int(m.group(1)) <= 128:
        c.fail(r, "expected exit 2 and one line naming DISTLAB_ARENA_MB and the 128+ MiB it "
               "needs; rc %s stderr %r" % (r.rc, r.err[:400]))
    # ... and one too large for the host's ranks, before any rank starts.
    c.n += 1
    r = dc.run([c.exe, "run", "all_reduce", "--np", "4"], timeout=30,
               env_extra={"DISTLAB_ARENA_MB": "99999999999"})
    if r.rc != 2 or r.out or r.err != ("distlab: DISTLAB_ARENA_MB=99999999999 is too large for 4 "
                                       "ranks on one host: at most 16777216 MiB each (64 TiB in "
                                       "all); unset it and distlab sizes the arena from the job\n"):
        c.fail(r, "expected exit 2 and one line; rc %s stderr %r" % (r.rc, r.err[:400]))
    # -b 1 is less than one float32: the smallest valid size runs instead,
    # and a comment line says so (nccl-tests measures any size it is given).
    r = c.ok(["bench", "all_reduce", "--np", "2", "-b", "1", "-e", "1", "-n", "2", "-w", "1"],
             stdout_re=r"^# -b 1 .* runs as 4$")
    rows = [ln.split() for ln in r.out.split("\n") if ln.strip() and not ln.startswith("#")]
    if [row[:2] for row in rows] != [["4", "1"]]:
        c.fail(r, "expected one row of 4 bytes, 1 element; rows %r" % rows)
    json_column(c, ["bench", "all_gather", "--np", "3", "-b", "1", "-e", "16", "-n", "2", "-w", "1",
                    "--json"], "size", [12], "[12]: one float32 per rank, once")
    # -f 1.0001 steps 20000 times from 8 to 64 bytes, which round to 14
    # counts of float32 (2 to 15): 14 rows, not a sweep refused as too long.
    json_column(c, ["bench", "all_reduce", "--np", "2", "-b", "8", "-e", "64", "-f", "1.0001",
                    "-n", "1", "-w", "0", "--json"], "count", list(range(2, 16)), "2 to 15")


def json_column(c, args, key, want, what):
    """One run of `distlab ARGS` (a --json bench): key of each row, in
    order, must be want (what says it in words)."""
    c.n += 1
    r = c.run(*args)
    try:
        got = [row[key] for row in json.loads(r.out)["rows"]]
    except (ValueError, KeyError, TypeError) as e:
        c.fail(r, "no JSON rows (%s); rc %s stderr %r" % (e, r.rc, r.err[:300]))
        return
    if got != want:
        c.fail(r, "%s %r, expected %s" % (key, got, what))


def check_streams(c):
    """Closed standard streams and an output that refuses writes: no crash,
    and a lost result is a failed command."""
    class Res:
        def __init__(self, cmd, p):
            self.cmd, self.rc, self.out, self.err = cmd, p.returncode, p.stdout, p.stderr

    def sh(line):
        cmd = line.replace("DL", c.exe)
        p = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=60)
        c.n += 1
        return Res(cmd, p)

    for line in ("DL shell --np 2 -c 'print(1)' >&-", "DL shell --np 2 -c 'print(1)' <&-",
                 "DL run all_reduce --np 2 >&-", "echo 'print(1)' | DL shell --np 2 2>&-"):
        r = sh(line)
        if r.rc != 0 or "Assertion" in r.err or "Abort" in r.err:
            c.fail(r, "a closed stream: exit %s, stderr %r" % (r.rc, r.err[-300:]))
    # A reader that leaves while a script still prints: its earlier
    # write's EPIPE is no failure, also where the last flush has nothing left.
    r = sh("(DL shell --np 2 -c 'for i in range(3000):\n    print(i)'; echo \"rc=$?\" >&2)"
           " | head -1")
    if "rc=0" not in r.err or "cannot write" in r.err:
        c.fail(r, "a reader that left during a script: stderr %r, expected rc=0 and no word"
               % r.err[-300:])
    if os.path.exists("/dev/full"):
        for line in ("DL run all_reduce --np 2 >/dev/full", "DL backends >/dev/full",
                     "DL bench all_reduce --np 2 -b 8 -e 64 --json >/dev/full"):
            r = sh(line)
            if r.rc != 1 or not r.err.startswith("distlab: cannot write the output") \
                    or r.err.count("\n") != 1:
                c.fail(r, "output to a full device: exit %s, stderr %r, expected exit 1 and one "
                       "line saying so" % (r.rc, r.err[-300:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--version", default=None, help="the version --version must print")
    a = ap.parse_args()
    groups = (check_bench, check_environment, check_help, check_usage_errors,  # longest first
              check_echoed_arguments, check_explain, check_torch_examples, check_sizes,
              check_streams)

    def run_group(f):
        c = Checker(a.exe)  # one each: the groups run side by side
        f(c, a.version) if f is check_help else f(c)
        return c

    # Most of a group's time is spent waiting for the processes it starts
    # (and two of them wait for timeouts): three groups at a time.
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        done = list(pool.map(run_group, groups))
    for f, g in zip(groups, done):
        print("%-20s %s" % (f.__name__, "ok" if not g.failures else
                            "%d failure(s)" % len(g.failures)))
    c = Checker(a.exe)
    for g in done:
        c.n += g.n
        c.failures += g.failures
    for cmd, msg in c.failures:
        print("FAIL: %s\n    %s" % (cmd, msg))
    print("cli: %d checks, %d failures" % (c.n, len(c.failures)))
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
