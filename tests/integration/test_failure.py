#!/usr/bin/env python3
"""A rank's death is an event that names the rank and the step, never a hang,
and no rank process outlives its run.

  - DISTLAB_FAULT=RANK:STEP (the rank kills itself with SIGKILL as it begins
    that schedule step) for a few collectives, algorithms, ranks and steps;
  - a rank killed from outside (it is held with SIGSTOP as soon as it exists,
    so the kill lands while the run is in flight, then SIGKILLed);
  - the controller killed (SIGKILL) or interrupted (SIGINT) mid-run: its ranks
    must not outlive it;
  - a rank that hangs while starting, with --timeout 2: the run must fail,
    and soon;
  - bench: DISTLAB_FAULT is honoured, and a rank killed mid-benchmark is
    reported with the step it was in, not "before its first step";
  - a rank that stops answering (DISTLAB_FAULT=R:S:stop, a real SIGSTOP, or
    R:S:hang, a loop) in run, bench and the shell is named "not responding"
    with its pid and step within the timeout plus a few seconds, and run and
    bench say that distlab killed it; in the shell, a line reported failed
    on a rank held with SIGSTOP is not applied once it is continued;
  - SIGINT/SIGTERM to run and bench: one line, the bench rows so far on
    stdout (a file), exit 130/143, nothing left behind.

Every run gets a unique marker in its environment; rank processes are found
by that marker in /proc (their parent may be gone), and none may be left.

usage: test_failure.py DISTLAB_EXE
"""

import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlcheck as dc  # noqa: E402

# Behaviour known to be wrong: test name -> (text every error of that test
# contains, note). Such a failure is reported as XFAIL; any other error in the
# same test is a real FAIL; a pass is reported as XPASS (then remove the entry).
KNOWN_BUGS = {}


FAULT_CASES = [
    # prim, algo, np, fault rank, fault step, extra args
    ("all_reduce", "ring", 4, 2, 2, ["--count", "1000"]),  # the classic one
    ("all_reduce", "ring", 4, 0, 1, ["--count", "1000"]),
    ("all_reduce", "ring", 4, 3, 5, ["--count", "1000"]),
    ("all_reduce", "rd", 8, 5, 2, ["--count", "64"]),
    ("all_reduce", "rhd", 7, 6, 3, ["--count", "100", "--dtype", "float32"]),
    ("all_reduce", "direct", 3, 0, 2, []),
    ("all_reduce", "share", 4, 2, 1, ["--count", "1000"]),  # peers hold its memory
    ("reduce_scatter", "ring", 5, 4, 3, ["--count", "8"]),
    ("all_gather", "rd", 4, 1, 1, []),
    ("broadcast", "tree", 8, 0, 1, ["--root", "0"]),
    ("broadcast", "chain", 4, 1, 2, ["--count", "64"]),
    ("reduce", "tree", 4, 1, 1, ["--root", "3"]),
    ("gather", "tree", 4, 2, 1, ["--root", "0"]),
    ("all_to_all", "pairwise", 4, 3, 2, []),
    ("all_to_all", "linear", 4, 1, 1, []),
    ("barrier", "dissemination", 4, 1, 1, []),
]


def shm_entries():
    try:
        return set(os.listdir("/dev/shm"))
    except OSError:
        return set()


def tagged_procs(tag):
    """{pid: (rank or None, cmdline list, state)} for live processes carrying tag."""
    needle = ("DLTEST_TAG=" + tag).encode()
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
            if needle not in env:
                continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            with open("/proc/%s/stat" % d) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state in ("Z", "X"):
            continue
        rank = None
        for e in env:
            if e.startswith(b"RANK="):
                rank = int(e[5:])
        # A rank forked by the fork server shows the environment it was
        # forked with, without RANK; its name says which rank it is.
        try:
            with open("/proc/%s/comm" % d) as f:
                comm = f.read().split()
            if len(comm) == 2 and comm[0] == "rank" and comm[1].isdigit():
                rank = int(comm[1])
        except OSError:
            pass
        out[int(d)] = (rank, cmd, state)
    return out


def rank_procs(tag):
    return {pid: v for pid, v in tagged_procs(tag).items()
            if len(v[1]) >= 2 and v[1][1] == "rank"}


def has_socket(pid):
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:"):
                return True
    except OSError:
        pass
    return False


class Run:
    """distlab run ... in its own session, with a unique marker."""

    def __init__(self, exe, args, env_extra=None, cmd="run", stdout=subprocess.PIPE):
        self.tag = uuid.uuid4().hex
        self.env_extra = dict(env_extra or {})
        env = dict(os.environ, DLTEST_TAG=self.tag, **self.env_extra)
        self.argv = [exe, cmd] + args
        self.cmd = dc.cmd_str(self.argv, self.env_extra)
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(self.argv, env=env, stdout=stdout,
                                  stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.out = self.err = None

    def wait(self, timeout):
        try:
            self.out, self.err = self.p.communicate(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def wait_exit(self, timeout):
        """Wait for the controller process itself (a rank that is still alive
        would keep its stdout open, so communicate() would not return)."""
        try:
            self.p.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def wait_rank(self, rank, timeout=10, pred=None):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for pid, (r, _, _) in rank_procs(self.tag).items():
                if r == rank and (pred is None or pred(pid)):
                    return pid
            if self.p.poll() is not None:
                return None
            time.sleep(0.0005)
        return None

    def cleanup(self):
        """Kill whatever is left (our own processes only), and report it."""
        left = tagged_procs(self.tag)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if self.p.poll() is None:
            self.p.kill()
        try:
            self.p.communicate(timeout=10)
        except (subprocess.TimeoutExpired, ValueError):
            pass
        return left


def wait_gone(tag, timeout):
    end = time.monotonic() + timeout
    while True:
        left = rank_procs(tag)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


def describe(left):
    return ", ".join("pid %d (rank %s, state %s)" % (p, v[0], v[2]) for p, v in sorted(left.items()))


class Suite:
    def __init__(self, exe):
        self.exe = exe
        self.results = []  # (name, cmd, [errors])
        self.lock = threading.Lock()  # some cases run side by side

    def record(self, name, cmd, errs):
        with self.lock:
            self.record_locked(name, cmd, errs)

    def record_locked(self, name, cmd, errs):
        key = name.split(":")[0]
        known = KNOWN_BUGS.get(key)
        real = [e for e in errs if not e.startswith("stderr was:")]
        xfail = bool(real) and known is not None and all(known[0] in e for e in real)
        self.results.append((name, cmd, errs, xfail))
        if not errs:
            status = "XPASS (remove it from KNOWN_BUGS)" if known else "ok"
        else:
            status = "XFAIL" if xfail else "FAIL"
        print("%-5s %s: %s" % (status, name, cmd))
        for e in errs:
            print("      " + e.replace("\n", "\n      "))
        if xfail:
            print("      known bug: " + known[1])

    def explain_phase(self, prim, algo, np_, step, args):
        argv = [self.exe, "explain", prim, "--algo", algo, "--np", str(np_)] + list(args)
        r = dc.run(argv, timeout=30)
        m = re.search(r"^step %d/(\d+)\s+(\S.*?)\s*$" % step, r.out, re.M)
        return (int(m.group(1)), m.group(2)) if m else (None, None)

    # ------------------------------------------------------------ DISTLAB_FAULT
    def fault(self, prim, algo, np_, frank, fstep, extra):
        args = [prim, "--np", str(np_), "--algo", algo] + extra
        n_steps, phase = self.explain_phase(prim, algo, np_, fstep, extra)
        shm0 = shm_entries()
        run = Run(self.exe, args, {"DISTLAB_FAULT": "%d:%d" % (frank, fstep)})
        errs = []
        finished = run.wait(30)
        secs = time.monotonic() - run.t0
        if not finished:
            errs.append("still running after 30 s (a hang)")
            run.cleanup()
            self.record("fault:%s/%s" % (prim, algo), run.cmd, errs)
            return
        if run.p.returncode == 0:
            errs.append("exit status 0 although rank %d was killed" % frank)
        if secs >= 10:
            errs.append("took %.1f s to report the dead rank (limit 10 s)" % secs)
        err = run.err
        want = ["rank %d" % frank, "signal 9 (SIGKILL)"]
        if n_steps is None:
            errs.append("could not read step %d's phase from distlab explain" % fstep)
        else:
            want.append("%s step %d/%d (%s)" % (prim, fstep, n_steps, phase))
        for w in want:
            if w not in err:
                errs.append("stderr does not say %r" % w)
        lines = [ln for ln in err.split("\n") if ln.strip()]
        death = [ln for ln in lines if "rank %d " % frank in ln and "signal 9" in ln]
        if len(death) != 1:
            errs.append("expected one line reporting rank %d's death, got %d" % (frank, len(death)))
        aborted = {int(m.group(1)) for m in re.finditer(r"rank (\d+): %s aborted" % prim, err)}
        if frank in aborted:
            errs.append("the dead rank %d is reported as having aborted" % frank)
        if not aborted:
            errs.append("no surviving rank reports that the %s was aborted" % prim)
        if prim == "all_reduce" and algo == "ring" and (frank, fstep) == (2, 2):
            # in a ring every survivor waits on the dead rank, directly or not
            if aborted != {0, 1, 3}:
                errs.append("ranks reporting the abort: %s, expected 0, 1, 3" % sorted(aborted))
        left = wait_gone(run.tag, 2)
        if left:
            errs.append("rank processes left behind: " + describe(left))
            run.cleanup()
        new_shm = {e for e in shm_entries() - shm0 if "distlab" in e.lower() or "dl" in e.lower()}
        if new_shm:
            errs.append("left in /dev/shm: %s" % sorted(new_shm))
        if errs:
            errs.append("stderr was:\n" + err)
        self.record("fault:%s/%s rank %d step %d" % (prim, algo, frank, fstep), run.cmd, errs)

    def fault_past_end(self):
        """A fault step beyond the schedule would never fire: refused, in one
        line, before any rank starts."""
        r = dc.run([self.exe, "run", "all_reduce", "--np", "4", "--algo", "ring"], timeout=60,
                   env_extra={"DISTLAB_FAULT": "2:99"})
        errs = []
        if r.rc != 2 or r.out != "" or r.err != (
                "distlab: DISTLAB_FAULT=2:99 names step 99, and all_reduce (ring) at --np 4 has "
                "6 steps\n"):
            errs.append("exit status %s; stdout %r; stderr %r" % (r.rc, r.out, r.err))
        self.record("fault_past_end", r.cmd, errs)

    # ------------------------------------------------------------ kills from outside
    def outside_kill(self):
        shm0 = shm_entries()
        run = Run(self.exe, ["all_reduce", "--np", "4", "--algo", "ring", "--count", "1000",
                             "--timeout", "20"])
        errs = []
        pid = run.wait_rank(2)
        if pid is None:
            run.wait(30)
            self.record("outside_kill", run.cmd, ["rank 2 never appeared (exit %s, stderr %r)"
                                                   % (run.p.returncode, run.err)])
            return
        os.kill(pid, signal.SIGSTOP)  # hold it: the run cannot finish without it
        time.sleep(0.5)
        t_kill = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        if not run.wait(30):
            errs.append("still running 30 s after rank 2 was killed")
            run.cleanup()
        else:
            dt = time.monotonic() - t_kill
            if run.p.returncode == 0:
                errs.append("exit status 0 although rank 2 was killed")
            if dt >= 10:
                errs.append("took %.1f s after the kill to fail (limit 10 s)" % dt)
            for w in ("rank 2", "pid %d" % pid, "signal 9 (SIGKILL)"):
                if w not in run.err:
                    errs.append("stderr does not say %r:\n%s" % (w, run.err))
            left = wait_gone(run.tag, 2)
            if left:
                errs.append("rank processes left behind: " + describe(left))
                run.cleanup()
        new_shm = {e for e in shm_entries() - shm0 if "distlab" in e.lower() or "dl" in e.lower()}
        if new_shm:
            errs.append("left in /dev/shm: %s" % sorted(new_shm))
        self.record("outside_kill", run.cmd + "  (rank 2 SIGSTOPped, then SIGKILLed)", errs)

    def controller_dies(self, sig):
        """Hold rank 2 with SIGSTOP so the others block in setup, then signal the
        controller. Every rank past its start-up must die with it; rank 2,
        continued, must exit by itself (its parent is gone)."""
        name = "controller_%s" % signal.Signals(sig).name
        # Rank 2 also stops itself at its first step: a whole run takes a few
        # milliseconds, less than a scan of /proc may need to find rank 2.
        run = Run(self.exe, ["all_reduce", "--np", "4", "--timeout", "30"],
                  env_extra={"DISTLAB_FAULT": "2:1:stop"})
        errs = []
        pid2 = run.wait_rank(2)
        if pid2 is None:
            run.wait(30)
            self.record(name, run.cmd, ["rank 2 never appeared (stderr %r)" % run.err])
            return
        os.kill(pid2, signal.SIGSTOP)
        others = []
        for r in (0, 1, 3):
            p = run.wait_rank(r, timeout=10, pred=has_socket)  # connected: past prctl
            if p is None:
                errs.append("rank %d never connected" % r)
            else:
                others.append(p)
        time.sleep(0.2)
        os.kill(run.p.pid, sig)
        if not run.wait_exit(10):
            errs.append("the controller did not exit within 10 s of %s" % signal.Signals(sig).name)
        elif run.p.returncode == 0:
            errs.append("exit status 0 after %s" % signal.Signals(sig).name)
        end = time.monotonic() + 5
        alive = others
        while alive and time.monotonic() < end:
            alive = [p for p in others if p in rank_procs(run.tag)]
            time.sleep(0.05)
        if alive:
            errs.append("ranks outlived the controller: " +
                        describe({p: v for p, v in rank_procs(run.tag).items() if p in alive}))
        try:
            os.kill(pid2, signal.SIGCONT)
        except OSError:
            pass
        left = wait_gone(run.tag, 5)
        if left:
            errs.append("rank 2, continued after the controller died, did not exit: " +
                        describe(left))
        run.cleanup()
        self.record(name, run.cmd + "  (rank 2 held with SIGSTOP, controller sent %s)"
                    % signal.Signals(sig).name, errs)

    def startup_hang_timeout(self):
        """Rank 2 never gets going (held with SIGSTOP from its first moment);
        with --timeout 2 the run must fail soon, name rank 2 and leave nothing."""
        run = Run(self.exe, ["all_reduce", "--np", "4", "--timeout", "2"])
        errs = []
        pid = run.wait_rank(2)
        if pid is None:
            run.wait(30)
            self.record("startup_hang_timeout", run.cmd, ["rank 2 never appeared"])
            return
        os.kill(pid, signal.SIGSTOP)
        if not run.wait(60):
            errs.append("still running after 60 s")
        else:
            secs = time.monotonic() - run.t0
            if run.p.returncode == 0:
                errs.append("exit status 0 with rank 2 stopped")
            if secs > 2 + 10:
                errs.append("failed only after %.1f s (--timeout 2)" % secs)
            if "rank 2" not in run.err:
                errs.append("stderr does not name rank 2")
            if errs:
                errs.append("stderr was:\n" + run.err)
        left = wait_gone(run.tag, 3)
        if left:
            errs.append("rank processes left behind: " + describe(left))
        run.cleanup()
        self.record("startup_hang_timeout", run.cmd + "  (rank 2 SIGSTOPped at start)", errs)

    # ------------------------------------------------------------ bench faults
    def bench_fault(self):
        """DISTLAB_FAULT=2:4 in bench: rank 2 kills itself at its 4th step."""
        run = Run(self.exe, ["all_reduce", "--np", "4", "-b", "8", "-e", "1M"],
                  {"DISTLAB_FAULT": "2:4"}, cmd="bench")
        errs = []
        if not run.wait(60):
            errs.append("still running after 60 s")
            run.cleanup()
        else:
            if run.p.returncode == 0:
                errs.append("exit status 0: DISTLAB_FAULT was ignored by bench")
            for w in ("rank 2 (pid", "signal 9 (SIGKILL) during all_reduce step"):
                if w not in run.err:
                    errs.append("stderr does not say %r" % w)
            if "before its first step" in run.err:
                errs.append("the dead rank is said to have died before its first step")
            left = wait_gone(run.tag, 3)
            if left:
                errs.append("rank processes left behind: " + describe(left))
                run.cleanup()
        if errs:
            errs.append("stderr was:\n" + (run.err or ""))
        self.record("bench_fault", run.cmd, errs)

    def bench_outside_kill(self):
        """A rank kill -9ed in the middle of a benchmark is reported in the step
        it was in (as last reported), never "before its first step"."""
        run = Run(self.exe, ["all_reduce", "--np", "4", "-b", "1K", "-e", "64M", "-n", "500"],
                  cmd="bench")
        errs = []
        pid = run.wait_rank(2, pred=has_socket)
        time.sleep(2.0)  # well inside the benchmark
        if pid is None or run.p.poll() is not None:
            run.wait(30)
            self.record("bench_outside_kill", run.cmd, ["rank 2 never ran (stderr %r)" % run.err])
            return
        os.kill(pid, signal.SIGKILL)
        t_kill = time.monotonic()
        if not run.wait(30):
            errs.append("still running 30 s after rank 2 was killed")
            run.cleanup()
        else:
            dt = time.monotonic() - t_kill
            if dt > 10:
                errs.append("took %.1f s to report (limit 10 s)" % dt)
            if not re.search(r"rank 2 \(pid %d\) was killed by signal 9 \(SIGKILL\) during "
                             r"\w+ step \d+/\d+" % pid, run.err):
                errs.append("rank 2's death does not name the step it was in")
            if "before its first step" in run.err:
                errs.append("the dead rank is said to have died before its first step")
            left = wait_gone(run.tag, 3)
            if left:
                errs.append("rank processes left behind: " + describe(left))
                run.cleanup()
        if errs:
            errs.append("stderr was:\n" + (run.err or ""))
        self.record("bench_outside_kill", run.cmd + "  (rank 2 SIGKILLed after 2 s)", errs)

    # ------------------------------------------------------------ not responding
    def not_responding(self, cmd, fault, extra, why):
        """A rank that stops answering is named within the timeout plus 5 s,
        with its pid and step, and distlab says it killed it."""
        timeout = 3
        args = ["all_reduce", "--np", "4", "--algo", "ring", "--timeout", str(timeout)] + extra
        env = {"DISTLAB_FAULT": fault} if fault else {}
        run = Run(self.exe, args, env, cmd=cmd)
        errs = []
        pid = run.wait_rank(2, pred=has_socket)
        if pid is None:
            errs.append("rank 2 was not seen with its connection, so its line is not checked")
        if not fault and pid is not None:
            time.sleep(1.5)  # inside the benchmark
            os.kill(pid, signal.SIGSTOP)
        t0 = time.monotonic()
        if not run.wait(timeout + 30):
            errs.append("still running %d s after the rank stopped answering" % (timeout + 30))
            run.cleanup()
        else:
            dt = time.monotonic() - t0
            if dt > timeout + 5:
                errs.append("reported after %.1f s (limit: timeout %d s + 5 s)" % (dt, timeout))
            if run.p.returncode == 0:
                errs.append("exit status 0 with rank 2 not responding")
            if pid is not None and not re.search(
                    r"rank 2 \(pid %d\) not responding in \w+ step \d+/\d+ .*after [\d.]+ s.*%s.*; "
                    r"distlab killed it" % (pid, re.escape(why)), run.err):
                errs.append("no line 'rank 2 (pid %d) not responding in ... step k/n after ... s "
                            "%s; distlab killed it'" % (pid, why))
            if "signal 9" in run.err:
                errs.append("the rank distlab killed is reported as killed by signal 9")
            left = wait_gone(run.tag, 3)
            if left:
                errs.append("rank processes left behind: " + describe(left))
                run.cleanup()
        if errs:
            errs.append("stderr was:\n" + (run.err or ""))
        self.record("not_responding:%s %s" % (cmd, fault or "SIGSTOP"), run.cmd, errs)

    def shell_not_responding(self):
        """In the shell a stopped rank is named not responding, with its pid and
        step, and `ranks` shows it so."""
        argv = [self.exe, "shell", "--np", "4", "--timeout", "2", "-k", "-c",
                "set algo all_reduce rd\nt = ones(4)\nall_reduce t\nranks"]
        r = dc.run(argv, timeout=60, env_extra={"DISTLAB_FAULT": "2:2:stop"})
        errs = []
        if not re.search(r"rank 2 \(pid \d+\) not responding in all_reduce step 2/\d+", r.err):
            errs.append("stderr does not name rank 2 as not responding in step 2")
        if "no answer from rank" in r.err:
            errs.append("the shell's watchdog fired instead")
        if not re.search(r"^\s+2\s+\d+\s+.*not responding", r.out, re.M):
            errs.append("`ranks` does not show rank 2 as not responding")
        if errs:
            errs.append("stdout was:\n" + r.out + "\nstderr was:\n" + r.err)
        self.record("shell_not_responding", r.cmd, errs)

    def shell_stopped_line_skipped(self):
        """A rank held with SIGSTOP while a line runs is reported failed on
        it; continued, it must not apply the line afterwards (it skips what
        it had not begun), or the shell would have reported a failure that
        did not happen."""
        tag = uuid.uuid4().hex
        argv = [self.exe, "shell", "--np", "2", "--timeout", "2", "-k"]
        p = subprocess.Popen(argv, env=dict(os.environ, DLTEST_TAG=tag), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             bufsize=1, start_new_session=True)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, "")),
                                  daemon=True)
        reader.start()

        def wait_for(text, timeout, since=0):
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                if any(text in l for l in lines[since:]):
                    return True
                time.sleep(0.05)
            return False

        def send(line):
            p.stdin.write(line + "\n")
            p.stdin.flush()

        errs = []
        send("t = ones(2)")
        pid1 = next((pid for pid, (r, _, _) in rank_procs(tag).items() if r == 1), None) \
            if wait_for("rank 1: t = tensor([1., 1.])", 20) else None
        if pid1 is None:
            errs.append("the shell did not start with rank 1")
        else:
            os.kill(pid1, signal.SIGSTOP)
            send("t += 1")
            if not wait_for("rank 1 (pid %d) not responding" % pid1, 20):
                errs.append("rank 1 was not named not responding")
            os.kill(pid1, signal.SIGCONT)
            if not wait_for("answers again", 20):
                errs.append("rank 1 was not named answering again")
            since = len(lines)
            send("print t")
            if not (wait_for("rank 0: t = ", 20, since) and wait_for("rank 1: t = ", 20, since)):
                errs.append("print t did not answer on both ranks")
            shown = [l.strip() for l in lines[since:] if l.strip().startswith("rank ")]
            if sorted(shown) != ["rank 0: t = tensor([2., 2.])", "rank 1: t = tensor([1., 1.])"]:
                errs.append("after the line failed on the stopped rank, print t showed %r "
                            "(rank 1 must keep 1., as the failure said)" % shown)
        try:
            p.stdin.close()
            p.wait(timeout=20)
        except (subprocess.TimeoutExpired, BrokenPipeError):
            errs.append("the shell did not end at the end of its input")
            os.killpg(p.pid, signal.SIGKILL)
        reader.join(timeout=5)
        left = wait_gone(tag, 10)
        if left:
            errs.append("left behind: " + describe(left))
        if errs:
            errs.append("stderr was:\n" + "".join(lines))
        self.record("shell_stopped_line_skipped", dc.cmd_str(argv, {}), errs)

    # ------------------------------------------------------------ signals
    def interrupted(self, cmd, sig):
        """SIGINT/SIGTERM: one line, what was produced flushed, 128+sig, nothing
        left behind."""
        name = "interrupted:%s %s" % (cmd, signal.Signals(sig).name)
        shm0 = shm_entries()
        out_path = "/tmp/dltest-%s.out" % uuid.uuid4().hex
        # A run is over in a moment: rank 1 hangs in step 2 of the ring (with
        # a timeout far away) so that the signal surely finds it in flight.
        args = ["all_reduce", "--np", "4", "-b", "8", "-e", "512M"] if cmd == "bench" else \
            ["all_reduce", "--np", "4", "--count", "1000", "--algo", "ring", "--timeout", "60"]
        env = {} if cmd == "bench" else {"DISTLAB_FAULT": "1:2:hang"}
        with open(out_path, "w") as out:
            run = Run(self.exe, args, env_extra=env, cmd=cmd, stdout=out)
            errs = []
            run.wait_rank(2, pred=has_socket)
            if cmd == "bench":  # its rows up to 1 MiB are out: large sizes are in flight
                end = time.monotonic() + 30
                while time.monotonic() < end and not re.search(
                        r"^\s+1048576\s+262144\s+float", open(out_path).read(), re.M):
                    time.sleep(0.05)
            else:  # rank 1 hangs in step 2 for 60 s; the others are past their start
                time.sleep(1.0)
            os.kill(run.p.pid, sig)
            if not run.wait(15):
                errs.append("still running 15 s after %s" % signal.Signals(sig).name)
                run.cleanup()
        with open(out_path) as f:
            text = f.read()
        os.unlink(out_path)
        if run.p.returncode != 128 + sig:
            errs.append("exit status %s, expected %d" % (run.p.returncode, 128 + sig))
        lines = [ln for ln in (run.err or "").split("\n") if "interrupted" in ln]
        if len(lines) != 1 or signal.Signals(sig).name not in lines[0]:
            errs.append("expected one line saying it was interrupted by %s" %
                        signal.Signals(sig).name)
        if cmd == "bench" and not re.search(r"^\s+8\s+2\s+float", text, re.M):
            errs.append("the bench rows produced so far are not in the output file")
        left = wait_gone(run.tag, 3)
        if left:
            errs.append("rank processes left behind: " + describe(left))
            run.cleanup()
        new_shm = {e for e in shm_entries() - shm0 if "distlab" in e.lower() or "dl" in e.lower()}
        if new_shm:
            errs.append("left in /dev/shm: %s" % sorted(new_shm))
        if errs:
            errs.append("stdout was:\n" + text + "\nstderr was:\n" + (run.err or ""))
        self.record(name, run.cmd, errs)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    s = Suite(sys.argv[1])
    t0 = time.monotonic()
    for case in FAULT_CASES:
        s.fault(*case)
    s.fault_past_end()
    s.outside_kill()
    s.controller_dies(signal.SIGKILL)
    s.controller_dies(signal.SIGINT)
    s.controller_dies(signal.SIGTERM)
    s.bench_fault()
    s.bench_outside_kill()
    s.not_responding("bench", None, ["-b", "1K", "-e", "64M", "-n", "50"],
                     "(its process is stopped)")
    # A start-up held from its first moment: alone, as its rank 2 must be
    # caught before the run is over (a few tens of milliseconds).
    s.startup_hang_timeout()
    # Cases that mostly wait for a timeout, with a rank stopped or hung and
    # the others asleep, run side by side, three at a time: their CPU (each
    # polls /proc for its ranks while they start) stays under the machine's. Each has its own marker, and none of them
    # looks at /dev/shm, which the cases around them compare before and after.
    waiting = [
        lambda: s.not_responding("run", "2:3:stop", [], "(its process is stopped)"),
        lambda: s.not_responding("bench", "2:3:stop", ["-b", "8", "-e", "8"],
                                 "(its process is stopped)"),
        lambda: s.not_responding("run", "2:3:hang", [], "(alive, but no progress)"),
        s.shell_not_responding,
        s.shell_stopped_line_skipped,
    ]
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        for f in [pool.submit(case) for case in waiting]:
            f.result()  # a case's exception is the test's failure
    s.interrupted("bench", signal.SIGINT)
    s.interrupted("bench", signal.SIGTERM)
    s.interrupted("run", signal.SIGINT)
    bad = [r for r in s.results if r[2] and not r[3]]
    xfail = [r for r in s.results if r[3]]
    print("failure: %d cases, %d failed, %d xfail  %.1f s" %
          (len(s.results), len(bad), len(xfail), time.monotonic() - t0))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
