#!/usr/bin/env python3
"""The optional parts of distlab are modules, loaded only when asked for.

- the distlab binary links neither Open MPI, the CUDA runtime nor NCCL
  (ldd), so a builtin run never loads them;
- each module this build has is found and loads (`distlab backends --json`
  shows the backend available), and a builtin run works;
- with DISTLAB_MODULE_DIR pointing at an empty folder, and then at a folder
  whose modules are not shared objects, `distlab backends` lists mpi and nccl
  as unavailable with the loader's reason on one line, and `--backend mpi`,
  `--backend nccl` and `--device cuda` each fail with one line that names
  the module and why.

usage: test_modules.py DISTLAB_EXE MODULE...   (the modules this build has:
                                                mpi, nccl, cuda)
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlcheck as dc  # noqa: E402

LIBS = ("libmpi", "libnccl", "libcudart", "libopen-rte", "libopen-pal")

failures = []


def fail(r, what):
    failures.append("%s\n    $ %s\n    rc=%s\n    stderr: %s" % (what, r.cmd if r else "",
                                                             r.rc if r else "",
                                                             r.err.strip()[-600:] if r else ""))


def check_links(exe):
    out = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    linked = [lib for lib in LIBS if lib in out]
    if linked:
        failures.append("%s links %s:\n%s" % (exe, ", ".join(linked), out))


def check_present(exe, built):
    r = dc.run([exe, "backends", "--json"], timeout=60)
    if r.rc != 0:
        return fail(r, "distlab backends --json failed")
    j = json.loads(r.out)
    for b in ("mpi", "nccl"):
        if b in built and not j[b]["built"]:
            fail(r, "the %s module is built but unavailable: %s" % (b, j[b]["why_not_built"]))
    r = dc.run([exe, "run", "all_reduce", "--np", "2"], timeout=60)
    if r.rc != 0 or "tensor(" not in r.out:
        fail(r, "a builtin run failed")


def one_line_naming(r, module, reason):
    lines = [line for line in r.err.splitlines() if line.strip()]
    return (r.rc not in (0, "timeout") and len(lines) == 1 and
            "%s module" % module in lines[0] and reason in lines[0])


def check_unloadable(exe, built, folder, reason):
    """Every module this build has fails to load from folder with reason."""
    env = {"DISTLAB_MODULE_DIR": folder}
    r = dc.run([exe, "backends", "--json"], timeout=60, env_extra=env)
    if r.rc != 0:
        return fail(r, "distlab backends --json failed")
    j = json.loads(r.out)
    for b in ("mpi", "nccl"):
        if b not in built:
            continue
        why = j[b]["why_not_built"] or ""
        if j[b]["built"] or "%s module" % b not in why or reason not in why or "\n" in why:
            fail(r, "%s: expected unavailable, the %s module named with %r: %r" %
                 (b, b, reason, j[b]))
        if j[b]["steps"] is not None or any(j[b]["cpu"].values()):
            fail(r, "%s is unavailable but claims support: %r" % (b, j[b]))
    r = dc.run([exe, "backends", "--ascii"], timeout=60, env_extra=env)
    for b in ("mpi", "nccl"):
        if b in built and "%s is unavailable: the %s module" % (b, b) not in r.out:
            fail(r, "the table's note does not say that %s is unavailable" % b)
    if "builtin" not in r.out or r.rc != 0:
        fail(r, "distlab backends failed without the modules")

    for b in ("mpi", "nccl"):
        if b in built:
            r = dc.run([exe, "run", "all_reduce", "--np", "2", "--backend", b], timeout=60,
                       env_extra=env)
            if not one_line_naming(r, b, reason):
                fail(r, "--backend %s: expected one line naming the %s module and %r" %
                     (b, b, reason))
    if "cuda" in built:
        r = dc.run([exe, "run", "all_reduce", "--np", "2", "--device", "cuda"], timeout=60,
                   env_extra=env)
        if not one_line_naming(r, "cuda", reason):
            fail(r, "--device cuda: expected one line naming the cuda module and %r" % reason)
    # The builtin engine needs no module.
    r = dc.run([exe, "run", "all_reduce", "--np", "2"], timeout=60, env_extra=env)
    if r.rc != 0 or "tensor(" not in r.out:
        fail(r, "a builtin run failed without the modules")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("modules", nargs="*")
    a = ap.parse_args()
    built = set(a.modules)
    check_links(a.exe)
    check_present(a.exe, built)
    with tempfile.TemporaryDirectory() as empty:
        check_unloadable(a.exe, built, empty, "No such file")
    with tempfile.TemporaryDirectory() as broken:
        for m in built:
            with open(os.path.join(broken, m + ".so"), "w") as f:
                f.write("not a shared object\n" * 200)
        check_unloadable(a.exe, built, broken, "invalid ELF header")
    for f in failures:
        print("FAIL: " + f)
    print("modules: %s" % ("ok" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
