#!/usr/bin/env python3
"""`distlab launch`, the elastic agent, end to end:

  - torchrun's environment for 1 node and for 2 agents x 2 workers, and the
    workers' output passing through;
  - failover: a worker killed with SIGKILL restarts every worker with
    TORCHELASTIC_RESTART_COUNT=1 and a new MASTER_PORT;
  - scale up: a second agent joins a running 1:2 run, which restarts at
    WORLD_SIZE 4 without counting a restart;
  - scale down: an agent killed with SIGKILL (its workers go with it); the
    other restarts alone at WORLD_SIZE 2, not counted; below --nnodes' MIN,
    it waits join_timeout and fails;
  - the agent that hosts the store killed: the other stops its workers and
    says that the store went with it;
  - a node that cannot start its workers any more ends the run: the other
    stops and names it;
  - restarts exhausted: exit 1 and the root-cause report (an exit code, and a
    signal), naming the node, ranks and pid;
  - one-line errors: the endpoint's port taken by another program (named),
    an endpoint that does not answer (the timeout named), a COMMAND that is
    not found (once, no restart loop), a mismatched --rdzv-id;
  - SIGTERM while running and SIGINT while joining stop everything;
  - distlab train under it: a worker killed, then a node joining; the ranks
    resume from the checkpoint each time and end with equal weights;
  - a real torch script (gloo, env://, all_reduce, a checkpoint) under
    --nproc-per-node 2 that fails over after one worker is killed and
    resumes from its checkpoint; skipped when /usr/bin/python3 has no torch.

Every test marks its processes with a unique DLTEST_TAG and checks, by
scanning /proc, that none is left behind.

usage: test_launch.py DISTLAB_EXE [-k NAME]
"""

import concurrent.futures
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures, marked_process_map  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "launch_worker.py")
TORCH_SCRIPT = os.path.join(HERE, "launch_torch.py")
TORCH_PY = "/usr/bin/python3"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def tagged(tag):
    """Live processes (zombies aside) carrying DLTEST_TAG=tag: {pid: cmdline}."""
    return marked_process_map("DLTEST_TAG=" + tag)


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def wait_for(pred, timeout, step=0.02):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > end:
            return v
        time.sleep(step)


class Test:
    """One test's temp dir, its tag and its agents."""

    def __init__(self, exe, name):
        self.exe = exe
        self.name = name
        self.tag = uuid.uuid4().hex
        self.dir = tempfile.mkdtemp(prefix="dl_launch_")
        self.events_path = os.path.join(self.dir, "events")
        self.agents = []

    def env(self):
        env = dict(os.environ, DLTEST_TAG=self.tag)
        env.pop("OMP_NUM_THREADS", None)
        return env

    def agent(self, args, mode="sleep:0", command=None):
        n = len(self.agents)
        out = open(os.path.join(self.dir, "agent%d.out" % n), "w")
        err = open(os.path.join(self.dir, "agent%d.err" % n), "w")
        if command is None:
            command = [sys.executable, WORKER, self.events_path, mode]
        argv = [self.exe, "launch"] + args + ["--"] + command
        p = subprocess.Popen(argv, env=self.env(), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        p.n = n
        p.argv = argv
        p.t0 = time.monotonic()
        out.close()
        err.close()
        self.agents.append(p)
        return p

    def out(self, p):
        with open(os.path.join(self.dir, "agent%d.out" % p.n)) as f:
            return f.read()

    def err(self, p):
        with open(os.path.join(self.dir, "agent%d.err" % p.n)) as f:
            return f.read()

    def events(self):
        try:
            with open(self.events_path) as f:
                return [json.loads(line) for line in f if line.strip()]
        except OSError:
            return []

    def wait_events(self, pred, timeout):
        return wait_for(lambda: (lambda ev: ev if pred(ev) else None)(self.events()), timeout)

    def wait_exit(self, p, timeout):
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def wait_err(self, p, pattern, timeout):
        return wait_for(lambda: re.search(pattern, self.err(p)), timeout)

    def logs(self):
        return "\n".join("agent %d (%s):\n%s" % (p.n, " ".join(p.argv[2:-3]), self.err(p))
                         for p in self.agents)

    def finish(self):
        """Nothing of the test may be left: report, then kill what is."""
        left = wait_for(lambda: not tagged(self.tag), 5) or tagged(self.tag)
        if left is True:
            left = {}
        check("%s: no process left behind" % self.name, not left,
              "\n".join("pid %d: %s" % kv for kv in sorted(left.items())))
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for p in self.agents:
            if p.poll() is None:
                p.kill()
                p.wait()
        for f in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, f))
        os.rmdir(self.dir)


def env_of(ev, rank):
    return next((e for e in ev if e["RANK"] == str(rank)), None)


# ---- the tests ----

def test_env_one_node(exe):
    t = Test(exe, "env, 1 node x 2")
    a = t.agent(["--standalone", "--nproc-per-node", "2"], "sleep:0")
    rc = t.wait_exit(a, 20)
    check("env 1x2: exit 0", rc == 0, "rc=%s\n%s" % (rc, t.logs()))
    ev = t.events()
    ok = len(ev) == 2
    for r in (0, 1):
        e = env_of(ev, r)
        ok = ok and e is not None and e["LOCAL_RANK"] == str(r) and e["WORLD_SIZE"] == "2" \
            and e["LOCAL_WORLD_SIZE"] == "2" and e["GROUP_RANK"] == "0" \
            and e["GROUP_WORLD_SIZE"] == "1" and e["ROLE_RANK"] == str(r) \
            and e["ROLE_WORLD_SIZE"] == "2" and e["ROLE_NAME"] == "default" \
            and e["MASTER_ADDR"] == "127.0.0.1" and e["MASTER_PORT"] == ev[0]["MASTER_PORT"] \
            and e["TORCHELASTIC_RESTART_COUNT"] == "0" and e["TORCHELASTIC_MAX_RESTARTS"] == "0" \
            and e["TORCHELASTIC_RUN_ID"].startswith("standalone-") \
            and e["TORCHELASTIC_USE_AGENT_STORE"] == "False" and e["OMP_NUM_THREADS"] == "1" \
            and e["DISTLAB_STORE"] is None
    check("env 1x2: torchrun's variables", ok, json.dumps(ev, indent=1))
    check("env 1x2: each worker in a process group of its own",
          len(ev) == 2 and all(e["pgid"] == e["pid"] for e in ev), ev)
    out = t.out(a)
    check("env 1x2: the workers' output passes through",
          "hello from rank 0" in out and "hello from rank 1" in out, out)
    check("env 1x2: the round's line", re.search(
        r"round 0: 2 workers on 1 node \(started in [0-9.]+ s\); node 0, ranks 0-1", t.err(a)),
        t.err(a))
    t.finish()

    t = Test(exe, "env, 1 node x 1")
    a = t.agent(["--standalone"], "sleep:0")
    rc = t.wait_exit(a, 20)
    ev = t.events()
    check("env 1x1: exit 0, RANK 0 of 1, no OMP_NUM_THREADS with one worker",
          rc == 0 and len(ev) == 1 and ev[0]["RANK"] == "0" and ev[0]["WORLD_SIZE"] == "1"
          and ev[0]["OMP_NUM_THREADS"] is None, "rc=%s %s\n%s" % (rc, ev, t.logs()))
    t.finish()


def test_env_two_nodes(exe):
    t = Test(exe, "env, 2 nodes x 2")
    port = free_port()
    args = ["--nnodes", "2", "--nproc-per-node", "2", "--max-restarts", "3", "--rdzv-id",
            "envtest", "--rdzv-endpoint", "127.0.0.1:%d" % port, "--rdzv-conf", "join_timeout=20"]
    a = t.agent(args, "sleep:0.2")
    t.wait_err(a, r"hosting the rendezvous", 10)
    b = t.agent(args, "sleep:0.2")
    ra, rb = t.wait_exit(a, 30), t.wait_exit(b, 30)
    check("env 2x2: both agents exit 0", ra == 0 and rb == 0, "%s %s\n%s" % (ra, rb, t.logs()))
    ev = t.events()
    ok = len(ev) == 4 and sorted(int(e["RANK"]) for e in ev) == [0, 1, 2, 3]
    for e in ev if ok else []:
        r = int(e["RANK"])
        ok = ok and e["GROUP_RANK"] == str(r // 2) and e["LOCAL_RANK"] == str(r % 2) \
            and e["WORLD_SIZE"] == "4" and e["LOCAL_WORLD_SIZE"] == "2" \
            and e["GROUP_WORLD_SIZE"] == "2" and e["ROLE_RANK"] == str(r) \
            and e["ROLE_WORLD_SIZE"] == "4" and e["MASTER_ADDR"] == ev[0]["MASTER_ADDR"] \
            and e["MASTER_PORT"] == ev[0]["MASTER_PORT"] \
            and e["TORCHELASTIC_MAX_RESTARTS"] == "3" and e["TORCHELASTIC_RUN_ID"] == "envtest"
    check("env 2x2: ranks 0-3, node 0's first, one master, torchrun's variables", ok,
          json.dumps(ev, indent=1))
    check("env 2x2: the first agent hosts, the second joins",
          "hosting the rendezvous of run 'envtest'" in t.err(a)
          and "joined the rendezvous of run 'envtest'" in t.err(b), t.logs())
    t.finish()


def test_failover(exe):
    t = Test(exe, "failover")
    a = t.agent(["--standalone", "--nproc-per-node", "2", "--max-restarts", "2"], "restart:1")
    ev = t.wait_events(lambda ev: len(ev) >= 2, 20)
    if not check("failover: two workers start", ev, t.logs()):
        return t.finish()
    victim = int(env_of(ev, 1)["pid"])
    t0 = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    ev2 = t.wait_events(lambda ev: len(ev) >= 4, 20)
    dt = time.monotonic() - t0
    rc = t.wait_exit(a, 20)
    ev2 = t.events()
    second = [e for e in ev2[2:]]
    check("failover: both restart with TORCHELASTIC_RESTART_COUNT=1 and a new MASTER_PORT",
          len(second) == 2 and all(e["TORCHELASTIC_RESTART_COUNT"] == "1" for e in second)
          and sorted(e["RANK"] for e in second) == ["0", "1"]
          and second[0]["MASTER_PORT"] != ev[0]["MASTER_PORT"]
          and not alive(int(env_of(ev, 0)["pid"])), json.dumps(ev2, indent=1))
    print("     failover: the restarted workers ran %.2f s after the kill" % dt)
    err = t.err(a)
    check("failover: exit 0; the kill and the restart named",
          rc == 0 and "worker 1 (rank 1, pid %d) was killed by SIGKILL" % victim in err
          and "restarting the workers (restart 1 of 2)" in err, "rc=%s\n%s" % (rc, err))
    t.finish()


def test_scale_up(exe):
    t = Test(exe, "scale up")
    port = free_port()
    args = ["--nnodes", "1:2", "--nproc-per-node", "2", "--rdzv-id", "up", "--rdzv-endpoint",
            "127.0.0.1:%d" % port, "--rdzv-conf", "last_call_timeout=0.2,join_timeout=20"]
    a = t.agent(args, "world:4")
    ev = t.wait_events(lambda ev: len(ev) >= 2, 20)
    check("scale up: the first node runs alone at WORLD_SIZE 2",
          ev and all(e["WORLD_SIZE"] == "2" for e in ev), "%s\n%s" % (ev, t.logs()))
    t0 = time.monotonic()
    b = t.agent(args, "world:4")
    ev = t.wait_events(lambda ev: len([e for e in ev if e["WORLD_SIZE"] == "4"]) >= 4, 20)
    dt = time.monotonic() - t0
    ra, rb = t.wait_exit(a, 20), t.wait_exit(b, 20)
    big = [e for e in (ev or []) if e["WORLD_SIZE"] == "4"]
    check("scale up: 4 workers at WORLD_SIZE 4, restart count still 0, the newcomer is node 1",
          len(big) == 4 and all(e["TORCHELASTIC_RESTART_COUNT"] == "0" for e in big)
          and sorted(e["RANK"] for e in big if e["GROUP_RANK"] == "1") == ["2", "3"],
          json.dumps(t.events(), indent=1))
    print("     scale up: 4 workers ran %.2f s after the new agent started" % dt)
    check("scale up: both exit 0; the first says why it restarted",
          ra == 0 and rb == 0 and "a new node is waiting to join" in t.err(a),
          "%s %s\n%s" % (ra, rb, t.logs()))
    t.finish()


def test_scale_down(exe):
    t = Test(exe, "scale down")
    port = free_port()
    args = ["--nnodes", "1:2", "--nproc-per-node", "2", "--rdzv-id", "down", "--rdzv-endpoint",
            "127.0.0.1:%d" % port, "--rdzv-conf",
            "last_call_timeout=3,join_timeout=20,keep_alive_interval=0.2,keep_alive_max_attempt=3"]
    a = t.agent(args, "world:2")
    t.wait_err(a, r"hosting the rendezvous", 10)
    b = t.agent(args, "world:2")
    ev = t.wait_events(lambda ev: len([e for e in ev if e["WORLD_SIZE"] == "4"]) >= 4, 20)
    if not check("scale down: two nodes run at WORLD_SIZE 4", ev, t.logs()):
        return t.finish()
    b_workers = [int(e["pid"]) for e in ev if e["GROUP_RANK"] == "1"]
    t0 = time.monotonic()
    b.kill()
    b.wait()
    gone = wait_for(lambda: not any(alive(p) for p in b_workers), 5)
    check("scale down: the killed agent's workers die with it", gone, b_workers)
    ev = t.wait_events(lambda ev: any(e["WORLD_SIZE"] == "2" for e in ev), 20)
    dt = time.monotonic() - t0
    rc = t.wait_exit(a, 20)
    small = [e for e in t.events() if e["WORLD_SIZE"] == "2"]
    check("scale down: the other restarts alone at WORLD_SIZE 2, not counted",
          len(small) == 2 and all(e["TORCHELASTIC_RESTART_COUNT"] == "0" for e in small)
          and all(e["GROUP_RANK"] == "0" for e in small), json.dumps(t.events(), indent=1))
    print("     scale down: restarted %.2f s after the kill (keep-alives 3 x 0.2 s)" % dt)
    check("scale down: exit 0, the lost node named",
          rc == 0 and re.search(r"node 1 \(.*\) stopped answering", t.err(a)),
          "rc=%s\n%s" % (rc, t.err(a)))
    t.finish()


def test_below_min(exe):
    t = Test(exe, "below MIN")
    port = free_port()
    args = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-id", "min", "--rdzv-endpoint",
            "127.0.0.1:%d" % port, "--rdzv-conf",
            "join_timeout=1.5,keep_alive_interval=0.2,keep_alive_max_attempt=3"]
    a = t.agent(args, "restart:99")
    t.wait_err(a, r"hosting the rendezvous", 10)
    b = t.agent(args, "restart:99")
    ev = t.wait_events(lambda ev: len(ev) >= 2, 20)
    if not check("below MIN: two nodes run", ev, t.logs()):
        return t.finish()
    b.kill()
    b.wait()
    rc = t.wait_exit(a, 15)
    err = t.err(a)
    check("below MIN: the survivor stops its worker, waits join_timeout for a second node, "
          "exits 1", rc == 1 and "stopped answering" in err
          and "timed out after 1.5 s (join_timeout): 1 of at least 2 nodes joined" in err
          and not any(alive(int(e["pid"])) for e in ev), "rc=%s\n%s" % (rc, err))
    t.finish()


def test_cannot_start(exe):
    t = Test(exe, "a node cannot start its workers")
    port = free_port()
    args = ["--nnodes", "2", "--max-restarts", "3", "--rdzv-id", "gone", "--rdzv-endpoint",
            "127.0.0.1:%d" % port]
    # Each node's COMMAND is a script of its own; the second one's vanishes
    # after the first round, so its next start fails (found at first, then
    # not: no restart loop, and the other node hears why).
    scripts = []
    for name in ("a.sh", "b.sh"):
        path = os.path.join(t.dir, name)
        with open(path, "w") as f:
            f.write('#!/bin/sh\necho "{\\"RANK\\": \\"$RANK\\", \\"pid\\": $$}" >> %s\n'
                    "exec sleep 300\n" % t.events_path)
        os.chmod(path, 0o755)
        scripts.append(path)
    a = t.agent(args, command=[scripts[0]])
    t.wait_err(a, r"hosting the rendezvous", 10)
    b = t.agent(args, command=[scripts[1]])
    ev = t.wait_events(lambda ev: len(ev) >= 2, 20)
    if not check("cannot start: two nodes run", ev, t.logs()):
        return t.finish()
    os.unlink(scripts[1])
    os.kill(int(env_of(ev, 0)["pid"]), signal.SIGKILL)
    ra, rb = t.wait_exit(a, 15), t.wait_exit(b, 15)
    check("cannot start: the node says so once and exits 1; the other stops, naming it",
          ra == 1 and rb == 1 and t.err(b).count("%s: not found" % scripts[1]) == 1
          and "the run 'gone' has failed on node 1" in t.err(a)
          and "%s: not found" % scripts[1] in t.err(a), t.logs())
    t.finish()


def test_host_lost(exe):
    t = Test(exe, "host lost")
    port = free_port()
    args = ["--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint", "127.0.0.1:%d" % port]
    a = t.agent(args, "restart:99")
    t.wait_err(a, r"hosting the rendezvous", 10)
    b = t.agent(args, "restart:99")
    ev = t.wait_events(lambda ev: len(ev) >= 4, 20)
    if not check("host lost: two nodes run", ev, t.logs()):
        return t.finish()
    a.kill()
    a.wait()
    rc = t.wait_exit(b, 10)
    err = t.err(b)
    # The first agent's workers die by its watchdog, which a loaded machine
    # may run after the other agent has already stopped its own.
    gone = wait_for(lambda: not any(alive(int(e["pid"])) for e in ev), 5)
    check("host lost: the store goes with the first agent; the other stops, exit 1, one line",
          rc == 1 and "lost the rendezvous store at 127.0.0.1:%d" % port in err
          and "it is served by the agent that started first" in err and gone,
          "rc=%s\n%s" % (rc, err))
    t.finish()


def test_exhausted(exe):
    t = Test(exe, "restarts exhausted")
    a = t.agent(["--standalone", "--nproc-per-node", "2", "--max-restarts", "1"], "fail:1:3")
    rc = t.wait_exit(a, 30)
    ev = t.events()
    err = t.err(a)
    last = [e for e in ev if e["RANK"] == "1" and e["TORCHELASTIC_RESTART_COUNT"] == "1"]
    check("exhausted: two rounds, then exit 1", rc == 1 and len(ev) == 4 and len(last) == 1,
          "rc=%s %s\n%s" % (rc, ev, err))
    if last:
        check("exhausted: the root-cause report names node, ranks, pid and exit code",
              "Root Cause (first observed failure)" in err
              and "node      : 0 (group_rank)" in err and "rank      : 1 (local_rank: 1)" in err
              and "exitcode  : 3 (pid: %s)" % last[0]["pid"] in err
              and "no restarts left (--max-restarts 1)" in err, err)
    t.finish()

    t = Test(exe, "restarts exhausted by a signal")
    a = t.agent(["--standalone", "--nproc-per-node", "2"], "signal:0")
    rc = t.wait_exit(a, 30)
    err = t.err(a)
    check("exhausted by a signal: exit 1, the report names SIGKILL",
          rc == 1 and "exitcode  : -9 (pid: " in err and "signal    : SIGKILL" in err
          and "rank      : 0 (local_rank: 0)" in err, "rc=%s\n%s" % (rc, err))
    t.finish()


def test_port_in_use(exe):
    t = Test(exe, "port in use")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    a = t.agent(["--rdzv-endpoint", "127.0.0.1:%d" % port])
    rc = t.wait_exit(a, 15)
    s.close()
    lines = t.err(a).strip().splitlines()
    check("port in use: exit 1 with one line naming the address and this process",
          rc == 1 and len(lines) == 1
          and "127.0.0.1:%d is in use by another program (pid %d, " % (port, os.getpid())
          in lines[0] and not t.events(), "rc=%s\n%s" % (rc, t.err(a)))
    t.finish()


def test_unreachable(exe):
    t = Test(exe, "unreachable endpoint")
    # TEST-NET-1 (RFC 5737): no host of ours, nobody answers.
    a = t.agent(["--rdzv-endpoint", "192.0.2.1:29400", "--rdzv-conf", "join_timeout=1.5"])
    rc = t.wait_exit(a, 15)
    dt = time.monotonic() - a.t0
    lines = t.err(a).strip().splitlines()
    check("unreachable: exit 1 after the join timeout, one line naming endpoint and timeout",
          rc == 1 and len(lines) == 1 and dt < 10
          and "no rendezvous store answers at 192.0.2.1:29400 after 1.5 s (join_timeout)"
          in lines[0], "rc=%s %.1f s\n%s" % (rc, dt, t.err(a)))
    t.finish()


def test_missing_command(exe):
    for cmd in ("no-such-command-dltest", "/nonexistent/dltest/cmd"):
        t = Test(exe, "missing command " + cmd)
        a = t.agent(["--standalone", "--nproc-per-node", "2", "--max-restarts", "3"],
                    command=[cmd, "arg"])
        rc = t.wait_exit(a, 10)
        err = t.err(a)
        check("missing command %s: exit 127, said once" % cmd,
              rc == 127 and err == "distlab launch: %s: not found\n" % cmd, "rc=%s\n%s" % (rc, err))
        t.finish()
    t = Test(exe, "command not executable")
    path = os.path.join(t.dir, "not-executable.sh")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(path, 0o644)
    a = t.agent(["--standalone"], command=[path])
    rc = t.wait_exit(a, 10)
    check("a command that is not executable: exit 126, said once",
          rc == 126 and t.err(a) == "distlab launch: %s: not an executable file (permission "
          "denied, or a directory)\n" % path, "rc=%s\n%s" % (rc, t.err(a)))
    t.finish()


def test_mismatched_id(exe):
    t = Test(exe, "mismatched --rdzv-id")
    port = free_port()
    a = t.agent(["--rdzv-id", "aaa", "--rdzv-endpoint", "127.0.0.1:%d" % port], "sleep:30")
    t.wait_err(a, r"hosting the rendezvous", 10)
    b = t.agent(["--rdzv-id", "bbb", "--rdzv-endpoint", "127.0.0.1:%d" % port,
                 "--rdzv-conf", "join_timeout=5"])
    rc = t.wait_exit(b, 10)
    check("mismatched id: exit 1 at once, one line naming both ids",
          rc == 1 and "the rendezvous at 127.0.0.1:%d is run 'aaa', not 'bbb' (--rdzv-id)" % port
          in t.err(b) and len(t.err(b).strip().splitlines()) == 1, "rc=%s\n%s" % (rc, t.err(b)))
    a.send_signal(signal.SIGTERM)
    rc = t.wait_exit(a, 10)
    check("mismatched id: the first run is unharmed; SIGTERM stops it (143)",
          rc == 143 and "interrupted (SIGTERM)" in t.err(a), "rc=%s\n%s" % (rc, t.err(a)))
    t.finish()


def test_signals(exe):
    t = Test(exe, "SIGTERM while running")
    a = t.agent(["--standalone", "--nproc-per-node", "2"], "restart:99")
    ev = t.wait_events(lambda ev: len(ev) >= 2, 20)
    a.send_signal(signal.SIGTERM)
    rc = t.wait_exit(a, 10)
    check("SIGTERM: exit 143, workers stopped",
          ev and rc == 143 and not any(alive(int(e["pid"])) for e in ev),
          "rc=%s\n%s" % (rc, t.logs()))
    t.finish()

    t = Test(exe, "SIGINT while joining")
    a = t.agent(["--nnodes", "2", "--rdzv-endpoint", "127.0.0.1:%d" % free_port()])
    t.wait_err(a, r"hosting the rendezvous", 10)
    time.sleep(0.2)
    a.send_signal(signal.SIGINT)
    rc = t.wait_exit(a, 10)
    check("SIGINT while joining: exit 130", rc == 130 and "interrupted (SIGINT) while joining"
          in t.err(a), "rc=%s\n%s" % (rc, t.err(a)))
    t.finish()


def test_train(exe):
    """distlab train, the usual COMMAND: a worker killed, then a second node
    joins; the world resumes from the checkpoint each time, and every rank
    ends with the same weights."""
    t = Test(exe, "distlab train")
    ckpt = os.path.join(t.dir, "train.ckpt")
    port = free_port()
    args = ["--nnodes", "1:2", "--nproc-per-node", "2", "--max-restarts", "2", "--rdzv-id",
            "train", "--rdzv-endpoint", "127.0.0.1:%d" % port, "--rdzv-conf",
            "last_call_timeout=0.2"]
    cmd = [exe, "train", "--epochs", "20", "--sleep", "0.2", "--checkpoint", ckpt]
    a = t.agent(args, command=cmd)
    m = wait_for(lambda: re.search(r"\[(\d+)\] epoch 1 \(rank = 1,", t.out(a)), 30, 0.05)
    if not check("train: two ranks train", m, t.out(a) + t.logs()):
        return t.finish()
    os.kill(int(m.group(1)), signal.SIGKILL)
    m = wait_for(lambda: re.search(r"epoch \d+ \(rank = 1, .*world_size = 2\)",
                                   t.out(a)[t.out(a).find("resuming"):]), 30, 0.05)
    check("train: after the kill, both resume from the checkpoint (restart 1)",
          m and t.out(a).count("resuming from checkpoint") == 2
          and "restarting the workers (restart 1 of 2)" in t.err(a), t.out(a) + t.logs())
    b = t.agent(args, command=cmd)
    ra, rb = t.wait_exit(a, 60), t.wait_exit(b, 60)
    out = t.out(a) + t.out(b)
    sums = re.findall(r"final weights checksum = (\w+) \(rank = (\d), world_size = 4\)", out)
    check("train: a second node joins; 4 ranks resume and end with the same weights",
          ra == 0 and rb == 0 and "world_size = 4) loss" in out
          and sorted(r for _, r in sums) == ["0", "1", "2", "3"]
          and len(set(c for c, _ in sums)) == 1
          and "a new node is waiting to join" in t.err(a), "%s %s\n%s\n%s" % (
              ra, rb, out, t.logs()))
    t.finish()


def torch_missing():
    if not os.access(TORCH_PY, os.X_OK):
        return "%s does not exist" % TORCH_PY
    r = subprocess.run([TORCH_PY, "-c", "import torch.distributed as d; "
                        "assert d.is_available() and d.is_gloo_available()"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return "%s cannot import torch with gloo: %s" % (
            TORCH_PY, (r.stderr.strip().splitlines() or ["?"])[-1])
    return None


def test_torch(exe):
    why = torch_missing()
    if why is not None:
        print("SKIP torch: %s" % why)
        return
    t = Test(exe, "torch failover")
    ckpt = os.path.join(t.dir, "ckpt.pt")
    steps = 16
    a = t.agent(["--standalone", "--nproc-per-node", "2", "--max-restarts", "2"],
                command=[TORCH_PY, "-u", TORCH_SCRIPT, ckpt, str(steps)])
    m = wait_for(lambda: re.search(r"rank 1 step 4 value \S+ pid (\d+)", t.out(a)), 60, 0.05)
    if not check("torch: two gloo workers train", m, t.out(a) + t.logs()):
        return t.finish()
    os.kill(int(m.group(1)), signal.SIGKILL)
    rc = t.wait_exit(a, 90)
    out = t.out(a)
    resumed = re.findall(r"rank (\d) world 2 restart 1 resumed from step (\d+)", out)
    total = steps * 3
    check("torch: exit 0 after one restart; both ranks resume from the checkpoint and finish",
          rc == 0 and len(resumed) == 2 and all(int(s) >= 4 for _, s in resumed)
          and "rank 0 done value %d" % total in out and "rank 1 done value %d" % total in out
          and "was killed by SIGKILL" in t.err(a) and "restart 1 of 2" in t.err(a),
          "rc=%s\n%s\n%s" % (rc, out[-3000:], t.err(a)))
    os.path.exists(ckpt) and os.unlink(ckpt)
    t.finish()


def test_usage(exe):
    cases = [
        (["--nnodes", "3:1", "--", "true"], "--nnodes takes N or MIN:MAX"),
        (["--nproc-per-node", "0", "--", "true"], "--nproc-per-node takes an integer"),
        (["--rdzv-conf", "bogus=1", "--", "true"], "unknown --rdzv-conf key 'bogus'; keys:"),
        (["--rdzv-conf", "join_timeout=x", "--", "true"], "--rdzv-conf join_timeout takes"),
        (["--rdzv-endpoint", "host:0", "--", "true"], "--rdzv-endpoint takes HOST:PORT"),
        (["--rdzv-id", "a/b", "--", "true"], "--rdzv-id takes"),
        (["--rdzv-backend", "etcd", "--", "true"], "--rdzv-backend 'etcd' is not supported"),
        (["--standalone", "--rdzv-endpoint", "h:1", "--", "true"], "leave out --rdzv-endpoint"),
        (["--standalone", "--nnodes", "1:2", "--", "true"], "--standalone runs one node"),
        (["--nproc-per-node", "2"], "launch needs a COMMAND"),
        (["--bogus", "--", "true"], "unknown or incomplete flag '--bogus'"),
    ]
    for args, want in cases:
        r = subprocess.run([exe, "launch"] + args, capture_output=True, text=True, timeout=10)
        check("usage: %s -> exit 2, %r" % (" ".join(args), want),
              r.returncode == 2 and want in r.stderr and len(r.stderr.splitlines()) == 1,
              "rc=%s %r" % (r.returncode, r.stderr))
    r = subprocess.run([exe, "launch", "--help"], capture_output=True, text=True, timeout=10)
    check("usage: --help", r.returncode == 0 and "--rdzv-endpoint" in r.stdout, r.stdout)
    # torchrun's spellings; COMMAND's own flags stay its own.
    t = Test(exe, "torchrun's spellings")
    a = t.agent(["--standalone", "--nproc_per_node", "2", "--max_restarts", "1",
                 "--monitor_interval", "0.05"], "sleep:0")
    rc = t.wait_exit(a, 20)
    ev = t.events()
    check("usage: --nproc_per_node, --max_restarts, --monitor_interval",
          rc == 0 and len(ev) == 2 and ev[0]["TORCHELASTIC_MAX_RESTARTS"] == "1",
          "rc=%s %s\n%s" % (rc, ev, t.logs()))
    t.finish()


TESTS = [test_torch, test_usage, test_env_one_node, test_env_two_nodes, test_failover,
         test_cannot_start, test_host_lost, test_exhausted, test_port_in_use, test_unreachable,
         test_missing_command, test_mismatched_id, test_signals]
# Tests whose agents keep a rendezvous open 0.2 s for late nodes or are
# declared lost after 3 keep-alives of 0.2 s: they run alone, after the others.
TIMED = [test_scale_up, test_scale_down, test_below_min, test_train]


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    exe = os.path.abspath(sys.argv[1])
    only = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "-k" else None
    t0 = time.monotonic()
    # Each test has its own tag, folder and ports, and most of its time is
    # spent waiting (a sleeping worker, a timeout, a rendezvous round): three
    # run at a time. torch's, the longest, starts first.
    chosen = [t for t in TESTS if only is None or only in t.__name__]
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        for f in [pool.submit(t, exe) for t in chosen]:
            f.result()  # a test's exception is the run's failure
    for test in TIMED:
        if only is None or only in test.__name__:
            test(exe)
    print("launch: %d failed (%.1f s)" % (len(failures), time.monotonic() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
