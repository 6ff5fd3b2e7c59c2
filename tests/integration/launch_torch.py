#!/usr/bin/python3
"""A torch training script written for torchrun, unchanged under
`distlab launch`: gloo, init_process_group(init_method="env://"), one
all_reduce per step, a checkpoint that rank 0 writes after every step and
that every rank resumes from after a restart.

usage: launch_torch.py CHECKPOINT STEPS

Each step adds the sum over ranks of (rank + 1) to a running value, so at
the end value == STEPS * WORLD_SIZE * (WORLD_SIZE + 1) / 2 whatever the
restarts were. Prints one line per step and rank: "rank R step S value V".
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    ckpt, steps = sys.argv[1], int(sys.argv[2])
    dist.init_process_group(backend="gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    start, value = 0, torch.zeros(1)
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        start, value = state["step"], state["value"]
    print("rank %d world %d restart %d resumed from step %d" % (rank, world, restart, start),
          flush=True)
    for step in range(start, steps):
        t = torch.ones(1) * (rank + 1)
        dist.all_reduce(t)
        value += t
        if rank == 0:
            torch.save({"step": step + 1, "value": value}, ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)
        print("rank %d step %d value %g pid %d" % (rank, step + 1, value.item(), os.getpid()),
              flush=True)
        time.sleep(0.1)
    dist.barrier()
    print("rank %d done value %g" % (rank, value.item()), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
