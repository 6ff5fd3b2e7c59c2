#!/usr/bin/env python3
"""The interactive shell on a real terminal, driven through tmux: tab
completion (commands, algorithms, names the session assigned, keywords, ops,
dtypes), Ctrl-C (it interrupts a receive that nothing would end, the world
stays usable; at an idle prompt it clears the line), Ctrl-D (it quits and no
rank process is left), a def typed over several "... " lines, and colour
(only on a terminal, never with NO_COLOR).

Every wait polls the pane against a deadline, so a loaded machine only makes
the test slower. Exits 77 (skipped) when tmux is not installed; tests/setup.sh
installs it.

usage: test_tty.py DISTLAB
"""
import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlcheck import check, failures  # noqa: E402

EXE = os.path.abspath(sys.argv[1])
DEADLINE = 30.0  # seconds for anything to show up on the pane
PROMPT = "distlab>"


class Timeout(Exception):
    pass


_sessions = itertools.count()


class Term:
    """One distlab shell in a tmux pane of its own tmux server."""

    def __init__(self, np=2, env=None, args=()):
        self.home = tempfile.mkdtemp(prefix="distlab-tty-%d-" % next(_sessions))
        self.sock = os.path.join(self.home, "tmux.sock")  # goes with home
        # The test may itself run inside tmux or screen: start clean.
        self.env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        self.tmux("new-session", "-d", "-x", "150", "-y", "80", "sleep 600")
        self.tmux("set-option", "-g", "remain-on-exit", "on")
        words = ["env", "-u", "NO_COLOR", "HOME=" + self.home, "INPUTRC=/dev/null"]
        words += ["%s=%s" % kv for kv in (env or {}).items()]
        words += [EXE, "shell", "--np", str(np), "--timeout", "60"] + list(args)
        self.tmux("respawn-pane", "-k", "exec " + " ".join(shlex.quote(w) for w in words))

    def tmux(self, *args):
        p = subprocess.run(["tmux", "-S", self.sock, "-f", "/dev/null"] + list(args),
                           capture_output=True, text=True, env=self.env, timeout=30)
        if p.returncode != 0:
            raise RuntimeError("tmux %s: %s" % (" ".join(args), p.stderr.strip()))
        return p.stdout

    def close(self):
        try:
            self.tmux("kill-server")
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.home, ignore_errors=True)

    def screen(self, escapes=False):
        args = ["capture-pane", "-p", "-J"] + (["-e"] if escapes else [])
        return self.tmux(*args)

    def lines(self):
        return [l.rstrip() for l in self.screen().rstrip("\n").split("\n")]

    def last_line(self):
        ls = [l for l in self.lines() if l.strip()]
        return ls[-1] if ls else ""

    def info(self, fmt):
        return self.tmux("display-message", "-p", fmt).strip()

    def type(self, text):
        self.tmux("send-keys", "-l", text)

    def keys(self, *names):
        self.tmux("send-keys", *names)

    def wait(self, what, cond, deadline=DEADLINE):
        end = time.monotonic() + deadline
        while True:
            text = self.screen()
            if cond(text):
                return text
            if time.monotonic() > end:
                raise Timeout("%s did not show within %g s; the screen:\n%s" % (what, deadline,
                                                                                text.rstrip()))
            time.sleep(0.05)

    def wait_prompt(self, line=""):
        """The prompt, holding line, is the last line of the screen."""
        want = (PROMPT + " " + line).rstrip()
        return self.wait("the prompt '%s'" % want, lambda t: self.last_line() == want)

    def run(self, line, expect):
        """Types line at an idle prompt and waits for expect and the next prompt."""
        self.wait_prompt()
        n = self.screen().count(PROMPT)
        self.type(line)
        self.keys("Enter")
        return self.wait("'%s' after '%s'" % (expect, line),
                         lambda t: expect in t.split(PROMPT + " " + line)[-1]
                         and t.count(PROMPT) > n and self.last_line() == PROMPT)

    def wait_busy(self, line):
        """line was entered and is running: the cursor left its row and no
        prompt came back."""

        def running(text):
            rows = text.rstrip("\n").split("\n")
            at = [i for i, r in enumerate(rows) if r.rstrip() == PROMPT + " " + line]
            return at and int(self.info("#{cursor_y}")) > at[-1] and self.last_line() != PROMPT

        self.wait("'%s' running" % line, running)

    def alive(self):
        return self.info("#{pane_dead}") == "0"


def scenario(fn):
    """Runs one scenario in a fresh shell; a timeout or a tmux error fails it."""
    term = None
    try:
        term = Term(**getattr(fn, "term_args", {}))
        fn(term)
    except (Timeout, RuntimeError, subprocess.TimeoutExpired) as e:
        check(fn.__name__, False, str(e))
    finally:
        if term is not None:
            term.close()


# ---- completion ----

def completion(term):
    term.wait_prompt()
    term.type("all_re")
    term.keys("Tab")
    term.wait_prompt("all_reduce")  # a command, then a space
    term.keys("C-c")
    check("completion: all_re<TAB> gives all_reduce", True)

    # The algorithms of all_reduce from the schedule registry, listed.
    term.wait_prompt()
    term.type("set algo all_reduce ")
    term.keys("Tab", "Tab")
    text = term.wait("the algorithms of all_reduce",
                     lambda t: all(a in t.split() for a in ("ring", "rd", "rhd", "direct")))
    check("completion: set algo all_reduce <TAB><TAB> lists ring, rd, rhd, direct",
          "tree" not in text.split(), text)
    term.keys("C-c")

    # Names the session assigned; pr<TAB> completes print.
    term.run("grads = ones(3)", "rank 1: grads = tensor([1., 1., 1.])")
    term.type("pr")
    term.keys("Tab")
    term.wait_prompt("print")
    term.type("gr")
    term.keys("Tab")
    term.wait_prompt("print grads")
    term.keys("Enter")
    term.wait("print's output", lambda t: t.count("rank 1: grads = tensor([1., 1., 1.])") == 2
              and term.last_line() == PROMPT)
    check("completion: pr<TAB> gr<TAB> is print grads, and it runs", True)
    term.type("print ")
    term.keys("Tab", "Tab")
    text = term.wait("the values print takes", lambda t: "world_size" in t.split())
    # The listing: the rows from the last one with world_size back to the
    # prompt above them (readline spreads many names over several rows).
    rows = text.split("\n")
    # The listing: the rows between the prompt the Tabs were typed at and
    # the prompt readline draws again under them.
    end = max(i for i, row in enumerate(rows) if "world_size" in row.split())
    start = end
    while start > 0 and not rows[start - 1].startswith(PROMPT.rstrip()):
        start -= 1
    while end + 1 < len(rows) and not rows[end + 1].startswith(PROMPT.rstrip()):
        end += 1
    check("completion: print <TAB><TAB> offers the assigned name",
          any("grads" in row.split() for row in rows[start:end + 1]), text)
    term.keys("C-c")

    # Keywords, then their values: ops and dtypes.
    term.wait_prompt()
    term.type("all_reduce grads op=")
    term.keys("Tab", "Tab")
    term.wait("the reduce ops", lambda t: all(o in t.split() for o in ("sum", "max", "min")))
    term.type("ma")
    term.keys("Tab")
    term.wait_prompt("all_reduce grads op=max")
    check("completion: op=<TAB><TAB> lists the ops, ma<TAB> gives max", True)
    term.keys("C-c")
    term.wait_prompt()
    term.type("all_reduce grads async")
    term.keys("Tab")
    term.wait_prompt("all_reduce grads async_op=")  # a keyword: no space after '='
    term.keys("C-c")
    term.wait_prompt()
    term.type("x = ones(3, dtype=")
    term.keys("Tab", "Tab")
    text = term.wait("the dtypes",
                     lambda t: all(d in t.split() for d in ("float32", "int64", "bfloat16")))
    term.type("int6")
    term.keys("Tab")
    term.wait_prompt("x = ones(3, dtype=int64")
    check("completion: dtype=<TAB><TAB> lists dtypes, int6<TAB> gives int64", True)
    term.keys("C-c")
    term.wait_prompt()


def completion_learns(term):
    """The names completion offers are those the lines that ran defined,
    sourced files and output lists included; a new world forgets them."""
    script = os.path.join(term.home, "weights.dl")
    with open(script, "w") as f:
        f.write("weights = ones(2) * rank\n")
    term.run("source " + script, "rank 1: weights = tensor([1., 1.])")
    term.type("print wei")
    term.keys("Tab")
    term.wait_prompt("print weights")
    check("completion: a name a sourced file defined", True)
    term.keys("C-c")

    term.run("all_gather parts weights", "rank 1: parts = [")
    term.type("print par")
    term.keys("Tab")
    term.wait_prompt("print parts")
    check("completion: the list all_gather made", True)
    term.keys("C-c")

    # A line that fails defines nothing.
    term.run("bad = nope(1)", "")
    term.type("print ba")
    term.keys("Tab")
    time.sleep(0.5)
    check("completion: no name from a line that failed",
          term.last_line() == PROMPT + " print ba", term.screen())
    term.keys("C-c")

    term.run("respawn", "")
    term.type("print wei")
    term.keys("Tab")
    time.sleep(0.5)
    check("completion: respawn forgets the names", term.last_line() == PROMPT + " print wei",
          term.screen())
    term.keys("C-c")
    term.wait_prompt()


# ---- Ctrl-C ----

def interrupt(term):
    term.run("set timeout 60", "")
    # Without checks the shell does not refuse a recv nothing will match.
    term.run("set check off", "")
    term.run("t = ones(2)", "rank 1: t = tensor([1., 1.])")
    # Rank 1 never sends: only the timeout (60 s) or Ctrl-C can end this.
    line = "on 0: recv t src=1"
    term.wait_prompt()
    term.type(line)
    term.keys("Enter")
    term.wait_busy(line)
    time.sleep(0.2)  # let rank 0 go to sleep in its wait (it works either way)
    t0 = time.monotonic()
    term.keys("C-c")
    text = term.wait("the interrupted receive", lambda t: "interrupted (Ctrl-C)" in t)
    took = time.monotonic() - t0
    check("Ctrl-C: the blocked receive fails at once (%.1f s)" % took, took < 10, text)
    check("Ctrl-C: rank 0 says why",
          "rank 0: recv from rank 1 (tag 0) aborted: interrupted (Ctrl-C)" in text, text)
    text = term.wait_prompt()
    check("Ctrl-C: the shell goes on", term.alive(), text)
    text = term.run("t = ones(2); all_reduce t; print t", "rank 1: t = tensor([2., 2.])")
    after = text.split("all_reduce t; print t")[-1]
    check("Ctrl-C: the next collective works without a respawn",
          after.count("rank 0: t = tensor([2., 2.])") == 2 and "distlab:" not in after, text)

    # At an idle prompt Ctrl-C drops the line.
    term.type("bogus words")
    term.wait_prompt("bogus words")
    term.keys("C-c")
    term.wait("a fresh prompt", lambda t: t.rstrip().endswith("bogus words^C\n" + PROMPT))
    text = term.run("ranks", "ready")
    check("Ctrl-C at the prompt clears the line",
          "unknown command" not in text and "bogus" not in text.split("^C")[-1], text)


# ---- Ctrl-D ----

def pids_of_ranks(text):
    pids = []
    for row in text.split("\n"):
        cols = row.split()
        if len(cols) >= 3 and cols[0].isdigit() and cols[1].isdigit() and "ready" in cols:
            pids.append(int(cols[1]))
    return pids


def running(pid):
    """Whether pid is a live process (a zombie is dead)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def exit_status(term, pid):
    """How the pane's process ended ("0", "signal 11"), or None while it runs.
    tmux does not always reap it at once: a zombie's status is in /proc."""
    if term.alive():
        return None
    status, signal = term.info("#{pane_dead_status}"), term.info("#{pane_dead_signal}")
    if status or signal:
        return status if status else "signal " + signal
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None  # reaped just now: tmux has it next time
    if fields[0] != "Z" or len(fields) < 50:
        return None
    code = int(fields[49])  # exit_code (field 52), as waitpid reports it
    return str(code >> 8) if code & 0x7F == 0 else "signal %d" % (code & 0x7F)


def ctrl_d(term):
    text = term.run("ranks", "ready")
    pids = pids_of_ranks(text.split(PROMPT + " ranks")[-1])
    check("Ctrl-D: `ranks` shows 2 pids", len(pids) == 2, text)
    shell_pid = int(term.info("#{pane_pid}"))
    term.keys("C-d")
    term.wait("the shell's exit", lambda t: exit_status(term, shell_pid) is not None)
    status = exit_status(term, shell_pid)
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end and any(running(p) for p in pids + [shell_pid]):
        time.sleep(0.05)
    left = [p for p in pids + [shell_pid] if running(p)]
    check("Ctrl-D: the shell exits 0 and no rank is left", status == "0" and not left,
          "exit status %s, still running: %s; the screen:\n%s"
          % (status, left, term.screen().rstrip()))


# ---- a def over several lines ----

def def_over_lines(term):
    """A def typed at the prompt goes on over "... " lines, as a for does,
    until an empty line; then it is defined on every rank."""
    term.wait_prompt()
    for line in ("def twice(x):", "    y = x * 2  # a comment", "    return y"):
        term.type(line)
        term.keys("Enter")
        term.wait("the '...' prompt after '%s'" % line, lambda t: term.last_line() == "...")
    term.keys("Enter")
    text = term.run("print(twice(rank + 1))", "rank 1: value = 4")
    check("a def typed at the prompt goes on over '...' lines, then runs",
          "rank 0: value = 2" in text.split("print(twice(rank + 1))")[-1], text)


# ---- step mode ----

def paused_prompt(term):  # 2 ranks: the ring has 2 steps
    term.run("set algo all_reduce ring", "")
    term.type("step on; t = ones(4); all_reduce t")
    term.keys("Enter")
    term.wait("the paused prompt", lambda t: term.last_line() == "distlab [all_reduce 0/2]>")
    term.type("next")
    term.keys("Enter")
    term.wait("the prompt after a step", lambda t: term.last_line() == "distlab [all_reduce 1/2]>")
    term.type("continue")
    term.keys("Enter")
    text = term.wait("the plain prompt", lambda t: term.last_line() == PROMPT)
    check("step mode: the prompt shows the step reached", "step 1/2" in text, text)


# ---- the terminal closes ----

def hangup(term):
    text = term.run("ranks", "ready")
    pids = pids_of_ranks(text.split(PROMPT + " ranks")[-1])
    token = re.search(r"--token-file (\S+)", text.replace("\n", " "))
    shell_pid = int(term.info("#{pane_pid}"))
    os.kill(shell_pid, signal.SIGHUP)  # what closing the terminal sends
    term.wait("the shell's exit", lambda t: exit_status(term, shell_pid) is not None)
    status = exit_status(term, shell_pid)
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end and any(running(p) for p in pids + [shell_pid]):
        time.sleep(0.05)
    left = [p for p in pids + [shell_pid] if running(p)]
    check("SIGHUP: one line, exit 129, no rank left, the token file removed",
          status == "129" and len(pids) == 2 and not left and token is not None
          and not os.path.exists(token.group(1))
          and "hangup (SIGHUP): stopping the ranks" in term.screen(),
          "exit status %s, still running: %s, token %s; the screen:\n%s"
          % (status, left, token and token.group(1), term.screen().rstrip()))


hangup.term_args = {"args": ["--listen", "127.0.0.1:0"]}


# ---- colour ----

def colour(term):
    term.run("print nope", "is not defined")
    check("colour: errors are red on a terminal", "\x1b[31mdistlab:" in term.screen(True),
          repr(term.screen(True)))


def no_colour(term):
    term.run("print nope", "is not defined")
    check("colour: none with NO_COLOR", "\x1b[31m" not in term.screen(True),
          repr(term.screen(True)))


no_colour.term_args = {"env": {"NO_COLOR": "1"}}


def colour_off_a_terminal():
    p = subprocess.run([EXE, "shell", "--np", "1", "-c", "print nope"], capture_output=True,
                       text=True, timeout=60)
    check("colour: none when stderr is not a terminal",
          p.returncode == 1 and "is not defined" in p.stderr and "\x1b[" not in p.stderr, p.stderr)


colour_off_a_terminal()
if shutil.which("tmux") is None:
    print("SKIP: tmux is not installed (tests/setup.sh installs it)")
    sys.exit(1 if failures else 77)
for fn in (completion, completion_learns, interrupt, ctrl_d, def_over_lines, paused_prompt, hangup,
           colour, no_colour):
    scenario(fn)

print("tty: %d failed" % len(failures))
sys.exit(1 if failures else 0)
