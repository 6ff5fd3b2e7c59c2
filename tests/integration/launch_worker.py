#!/usr/bin/env python3
"""A worker for test_launch.py: records its environment, then behaves as told.

usage: launch_worker.py EVENTS MODE

Appends one JSON line to EVENTS (torchrun's variables, pid, time), prints
"hello from rank R" on stdout, then by MODE:

  exit:CODE        exits with CODE
  sleep:S          sleeps S seconds, exits 0
  world:W          exits 0 soon if WORLD_SIZE is W, else sleeps (until stopped)
  restart:R        exits 0 soon if TORCHELASTIC_RESTART_COUNT >= R, else sleeps
  fail:RANK:CODE   rank RANK exits with CODE soon; the others sleep
  signal:RANK      rank RANK kills itself with SIGKILL soon; the others sleep

Standard library only.
"""
import json
import os
import signal
import sys
import time

VARS = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
        "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT",
        "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
        "TORCHELASTIC_USE_AGENT_STORE", "OMP_NUM_THREADS", "DISTLAB_STORE"]


def main():
    events, mode = sys.argv[1], sys.argv[2]
    rec = {v: os.environ.get(v) for v in VARS}
    rec["pid"] = os.getpid()
    rec["pgid"] = os.getpgid(0)
    rec["time"] = time.time()
    fd = os.open(events, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, (json.dumps(rec) + "\n").encode())
    os.close(fd)
    rank = int(os.environ["RANK"])
    print("hello from rank %d" % rank, flush=True)
    kind, _, arg = mode.partition(":")
    if kind == "exit":
        sys.exit(int(arg))
    if kind == "sleep":
        time.sleep(float(arg))
        sys.exit(0)
    if kind == "world" and os.environ["WORLD_SIZE"] == arg:
        time.sleep(0.3)
        sys.exit(0)
    if kind == "restart" and int(os.environ["TORCHELASTIC_RESTART_COUNT"]) >= int(arg):
        time.sleep(0.3)
        sys.exit(0)
    if kind == "fail":
        who, code = arg.split(":")
        if rank == int(who):
            time.sleep(0.1)
            sys.exit(int(code))
    if kind == "signal" and rank == int(arg):
        time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(300)


if __name__ == "__main__":
    main()
