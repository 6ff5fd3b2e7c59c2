#!/usr/bin/env python3
"""How fast `distlab launch` changes its world: prints the median of a few
runs of

  scale up:  from a second agent's start to all 4 workers running at
             WORLD_SIZE 4 (the first agent's 2 workers were running alone);
  failover:  from a worker's SIGKILL (rank 3, on the second node) to all 4
             workers running again.

"Running" is when a worker (a shell script) writes its line: its exec is
done. Both agents run on this machine with --nnodes 1:2 and
--nproc-per-node 2. With --torchrun, the same with torchrun
(/usr/bin/python3 -m torch.distributed.run, c10d rendezvous, its default
monitor interval of 5 s), for comparison; that takes a minute or more.

usage: elastic.py DISTLAB_EXE [--runs N] [--torchrun]
"""
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

WORKER = """#!/bin/sh
echo "$RANK $WORLD_SIZE $TORCHELASTIC_RESTART_COUNT $$ $(date +%s.%N)" >> "$BENCH_EVENTS"
exec sleep 600
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def records(path):
    """[(rank, world, restarts, pid, time)]"""
    try:
        with open(path) as f:
            return [(int(a), int(b), int(c), int(d), float(e))
                    for a, b, c, d, e in (line.split() for line in f if line.count(" ") == 4)]
    except OSError:
        return []


def wait_for(pred, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.005)
    raise RuntimeError("timed out")


def agent_cmd(kind, exe, port, worker):
    if kind == "distlab":
        return [exe, "launch", "--nnodes", "1:2", "--nproc-per-node", "2", "--rdzv-id", "bench",
                "--rdzv-endpoint", "127.0.0.1:%d" % port, "--rdzv-conf",
                "last_call_timeout=0.1", "--max-restarts", "3", "--", worker]
    return ["/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes", "1:2",
            "--nproc_per_node", "2", "--rdzv_backend", "c10d", "--rdzv_id", "bench",
            "--rdzv_endpoint", "127.0.0.1:%d" % port, "--max_restarts", "3", "--no_python",
            # torch 1.13's Std.from_str("0") is None on Python 3.11, which
            # iterates an IntFlag's single-bit members only (not NONE = 0, nor
            # ALL = 3): the default crashes torchrun, and 1 (stdout) works.
            "--redirects", "1", "--tee", "1", worker]


def one_run(kind, exe, tmp):
    events = os.path.join(tmp, "events")
    worker = os.path.join(tmp, "worker.sh")
    with open(worker, "w") as f:
        f.write(WORKER)
    os.chmod(worker, 0o755)
    if os.path.exists(events):
        os.unlink(events)
    env = dict(os.environ, BENCH_EVENTS=events)
    port = free_port()
    log = open(os.path.join(tmp, "agents.log"), "a")
    agents = []
    try:
        argv = agent_cmd(kind, exe, port, worker)
        agents.append(subprocess.Popen(argv, env=env, stdout=log, stderr=log,
                                       start_new_session=True))
        wait_for(lambda: len(records(events)) >= 2, 120)
        time.sleep(0.5)
        t0 = time.time()
        agents.append(subprocess.Popen(argv, env=env, stdout=log, stderr=log,
                                       start_new_session=True))
        big = wait_for(lambda: (lambda r: r if len(r) >= 4 else None)(
            [x for x in records(events) if x[1] == 4 and x[2] == 0]), 300)
        up = max(x[4] for x in big) - t0
        time.sleep(0.5)
        victim = next(x[3] for x in big if x[0] == 3)
        t1 = time.time()
        os.kill(victim, signal.SIGKILL)
        # Started after the kill: torchrun counts restarts per agent, so only
        # the failed node's workers see TORCHELASTIC_RESTART_COUNT=1 there.
        again = wait_for(lambda: (lambda r: r if len(r) >= 4 else None)(
            [x for x in records(events) if x[1] == 4 and x[4] > t1]), 300)
        failover = max(x[4] for x in again) - t1
        return up, failover
    finally:
        for p in agents:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in agents:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        log.close()


def bench(kind, exe, runs):
    tmp = tempfile.mkdtemp(prefix="dl_bench_elastic_")
    ups, fails = [], []
    for _ in range(runs):
        up, fail = one_run(kind, exe, tmp)
        ups.append(up)
        fails.append(fail)
    print("%-8s scale up 2 -> 4 workers: median %6.2f s   (runs: %s)"
          % (kind, statistics.median(ups), " ".join("%.2f" % v for v in ups)))
    print("%-8s failover, 4 workers:     median %6.2f s   (runs: %s)"
          % (kind, statistics.median(fails), " ".join("%.2f" % v for v in fails)))
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    exe = os.path.abspath(args[0])
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    bench("distlab", exe, runs)
    if "--torchrun" in args:
        bench("torchrun", exe, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
