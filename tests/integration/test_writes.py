#!/usr/bin/env python3
"""Writes into a tensor from its own memory, against torch: every
statement of torch_writes.json (t[a] = t[b], +=, copy_, add_ over views
with integers, slices, steps, None and ...) runs in the distlab shell,
which must accept what torch accepts and refuse what torch refuses, with
torch's overlap message where torch gives it. The expectations are torch
1.13's, checked in (regenerate them with torch_writes.py).

usage: test_writes.py DISTLAB
"""
import json
import os
import subprocess
import sys
import tempfile

EXE = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
OVERLAP = "refer to a single memory location"

sys.path.insert(0, HERE)
import torch_writes  # noqa: E402 (the statements, as the expectations were made)

with open(os.path.join(HERE, "torch_writes.json")) as f:
    verdicts = json.load(f)["verdicts"]
WORD = {"o": "ok", "x": "overlap", "r": "refused"}
rows = [(make, stmt, WORD[v]) for (make, stmt), v in zip(torch_writes.statements(), verdicts)]
if len(rows) != len(verdicts) or len(rows) != len(torch_writes.statements()):
    print("FAIL  torch_writes.json does not match torch_writes.py's statements: regenerate it")
    sys.exit(1)

# One script: each statement after a fresh x, then a marker line, so that a
# failure names its line (3 * i + 2).
lines = []
for i, (make, stmt, _) in enumerate(rows):
    lines += ["x = %s" % make, stmt, "print('@@%d')" % i]
with tempfile.NamedTemporaryFile("w", suffix=".dl", delete=False) as f:
    f.write("\n".join(lines) + "\n")
    script = f.name
try:
    p = subprocess.run([EXE, "shell", "--np", "1", "--timeout", "30", "-k", script],
                       capture_output=True, text=True, timeout=600)
finally:
    os.unlink(script)

# "distlab: rank 0: ... message" comes before "distlab: FILE: line N failed: ..."
why = {}
last = None
for line in (p.stdout + p.stderr).splitlines():
    if line.startswith("distlab: rank 0:"):
        last = line
    elif " failed: " in line and ": line " in line:
        n = int(line.split(": line ")[1].split()[0])
        why[n] = last or ""
        last = None

failures = []
for i, (make, stmt, want) in enumerate(rows):
    n = 3 * i + 2
    got = "ok" if n not in why else ("overlap" if OVERLAP in why[n] else "refused")
    if got != want:
        failures.append("%s; %s: torch %s, distlab %s %s" % (make, stmt, want, got,
                                                             why.get(n, "")))
for f in failures[:40]:
    print("FAIL  " + f)
print("writes: %d statements, %d failed" % (len(rows), len(failures)))
sys.exit(1 if failures else 0)
