#!/usr/bin/env python3
"""The terminal view (distlab shell --tui, `tui` in the shell) on a real
terminal, driven through tmux at 80x24 and 160x48: a panel per rank with its
tensors after `:t = ...` and a collective, a rank killed from outside shown
dead, a resize redrawn, 16 ranks scrolling with the header naming the ranks
shown, step mode's keys, NO_COLOR with LANG=C (ASCII borders, no colour),
`q` back to the plain prompt and a clean exit; a ring all_reduce stepped
at np 4, each step's message list checked against `distlab explain`, the
elements it changed drawn reversed, the symbolic view, and `b`/`f` showing
recorded steps; each panel's title marking the step's sends and receives;
`distlab scenario run all_reduce --tui` (its narration, a pause that waits
for a key, the checks, the end, q) and with --step.

Every wait polls the pane against a deadline. Exits 77 (skipped) when tmux
is not installed; tests/setup.sh installs it.

usage: test_tui.py DISTLAB [TEST...]   (TEST: a test's name; default: all)
"""
import atexit
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
DEADLINE = 30.0
_sessions = itertools.count()


class Timeout(Exception):
    pass


class Term:
    """One distlab shell in a tmux pane of its own tmux server."""

    def __init__(self, np=4, size=(80, 24), env=None, args=("--tui",), argv=None):
        self.home = tempfile.mkdtemp(prefix="distlab-tui-%d-" % next(_sessions))
        self.sock = os.path.join(self.home, "tmux.sock")
        self.env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        self.env["LANG"] = "C.UTF-8"  # tmux itself draws UTF-8
        self.tmux("new-session", "-d", "-x", str(size[0]), "-y", str(size[1]), "sleep 600")
        self.tmux("set-option", "-g", "remain-on-exit", "on")
        words = ["env", "-u", "NO_COLOR", "-u", "LC_ALL", "HOME=" + self.home,
                 "INPUTRC=/dev/null", "TERM=screen-256color", "LANG=C.UTF-8"]
        words += ["%s=%s" % kv for kv in (env or {}).items()]
        # argv: another subcommand than `shell --np N --timeout 60 ARGS`.
        words += [EXE] + (list(argv) if argv is not None else
                          ["shell", "--np", str(np), "--timeout", "60"] + list(args))
        # The pane's shell says how distlab ended: tmux does not always
        # reap a pane's process in time to tell.
        self.tmux("respawn-pane", "-k",
                  " ".join(shlex.quote(w) for w in words) + '; echo "exit status $?"; sleep 600')

    def tmux(self, *args):
        p = subprocess.run(["tmux", "-u", "-S", self.sock, "-f", "/dev/null"] + list(args),
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
        return self.tmux(*(["capture-pane", "-p"] + (["-e"] if escapes else [])))

    def info(self, fmt):
        return self.tmux("display-message", "-p", fmt).strip()

    def type(self, text):
        self.tmux("send-keys", "-l", text)

    def keys(self, *names):
        self.tmux("send-keys", *names)

    def command(self, line):
        """A line on the view's command line."""
        self.type(":" + line)
        self.keys("Enter")

    def wait(self, what, cond, deadline=DEADLINE):
        end = time.monotonic() + deadline
        while True:
            text = self.screen()
            if cond(text):
                return text
            if time.monotonic() > end:
                raise Timeout("%s did not show within %g s; the screen:\n%s" %
                              (what, deadline, text.rstrip()))
            time.sleep(0.05)

    def wait_for(self, *texts, deadline=DEADLINE):
        return self.wait(" and ".join(repr(t) for t in texts),
                         lambda s: all(t in s for t in texts), deadline)

    def pid_of(self, rank):
        m = re.search(r"rank %d\s+\S+\s+pid (\d+)" % rank, self.screen())
        return int(m.group(1)) if m else None

    def exited(self):
        return "exit status " in self.screen()

    def exit_status(self):
        """distlab's exit status, once it has ended."""
        s = self.wait("the shell's end", lambda s: "exit status " in s)
        return s.split("exit status ")[-1].split()[0]


def scenario(**term_args):
    def wrap(fn):
        def run():
            term = None
            try:
                term = Term(**term_args)
                fn(term)
            except (Timeout, RuntimeError, subprocess.TimeoutExpired) as e:
                check(fn.__name__, False, str(e))
            finally:
                if term is not None:
                    term.close()
        run.__name__ = fn.__name__
        return run
    return wrap


TENSORS = ["t = tensor([%d, %d])" % (r, r + 1) for r in range(4)]


@scenario(np=4, size=(80, 24))
def panels_collective_death_resize_leave(t):
    t.wait_for("ranks 0-3 of 4", "rank 0", "rank 3", "idle")
    check("four panels, UTF-8 borders", "┌" in t.screen() and "│" in t.screen())
    t.command("t = arange(2) + rank")
    t.wait_for(*TENSORS)
    check("every rank's tensor in its panel", True)
    t.command("all_reduce t")
    s = t.wait("all_reduce's result on every rank",
               lambda s: s.count("t = tensor([ 6, 10])") == 4)
    check("the collective's result in every panel", True)
    t.command("no_such_thing t")
    t.wait_for("unknown command 'no_such_thing'")
    check("an error shows on the status line, the view stays", "ranks 0-3 of 4" in t.screen())
    # del drops a name from the panels, and a name bound again comes back.
    t.command("u = t + 1")
    t.wait("u in every panel", lambda s: s.count("u = tensor([ 7, 11])") == 4)
    t.command("del u")
    s = t.wait("u gone from the panels", lambda s: "u = " not in s)
    check("del NAME drops it from every panel, t stays", s.count("t = tensor([ 6, 10])") == 4, s)
    pid = t.pid_of(2)
    if not check("rank 2's pid in its title", pid is not None, t.screen()):
        return
    os.kill(pid, signal.SIGKILL)
    start = time.monotonic()
    t.wait_for("dead", deadline=10)
    check("a rank killed from outside shows dead within 2 s", time.monotonic() - start < 2.0,
          "took %.1f s" % (time.monotonic() - start))
    t.tmux("resize-window", "-x", "160", "-y", "48")
    # The pane may be captured mid-redraw: wait for the whole redrawn grid.
    s = t.wait("the view redrawn at 160 columns, with the dead rank and the tensors",
               lambda s: any(len(l.rstrip()) > 120 and "rank 1" in l for l in s.split("\n"))
               and "dead" in s and "t = tensor([ 6, 10])" in s)
    check("a resize redraws the grid", True)
    t.keys("q")
    t.wait("the plain prompt", lambda s: s.rstrip().split("\n")[-1].startswith("distlab>"))
    check("q gives the terminal back to the plain prompt", not t.exited())
    t.type("quit")
    t.keys("Enter")
    status = t.exit_status()
    check("quit ends the process cleanly", status == "0", "status " + status)


@scenario(np=16, size=(80, 24))
def sixteen_ranks_scroll(t):
    s = t.wait("the first page", lambda s: re.search(r"ranks 0-\d+ of 16", s) is not None)
    check("16 ranks at 80x24 do not all fit", "rank 15 " not in s, s)
    for _ in range(15):
        t.keys("Tab")
    s = t.wait("the last page", lambda s: re.search(r"ranks \d+-15 of 16", s) is not None)
    check("tab scrolls the grid to rank 15, the header names the ranks shown",
          "rank 15 " in s and "rank 0 " not in s, s)
    t.keys("Enter")
    # One panel on screen is "rank 15 of 16", not "ranks 15-15 of 16".
    s = t.wait_for("rank 15 of 16")
    check("enter zooms the focused panel", "rank 15 " in s and "rank 14 " not in s
          and "15-15" not in s, s)


@scenario(np=4, size=(80, 24), env={"NO_COLOR": "1", "LANG": "C"})
def plain_terminal_and_step_keys(t):
    s = t.wait_for("ranks 0-3 of 4", "idle")
    check("LANG=C draws ASCII borders", "+-" in s and "|" in s and "┌" not in s, s)
    esc = t.screen(escapes=True)
    check("NO_COLOR draws no colour", re.search(r"\x1b\[[0-9;]*3[0-7]m", esc) is None)
    t.command("t = arange(2) + rank")
    t.wait_for(*TENSORS)
    t.command("step on")
    t.command("set algo all_reduce rd")  # two steps (the default at this size has one)
    t.command("all_reduce t")
    s = t.wait_for("paused before step 1/", "all_reduce")
    check("the header names the stepped collective and its step",
          re.search(r"all_reduce\s+\S+.*step 1 of \d", s.split("\n")[0]) is not None, s)
    t.keys("n")
    s = t.wait_for("paused before step 2/")
    check("n runs a step and shows its record", "step 1/" in s, s)
    esc = t.screen(escapes=True)
    check("NO_COLOR: the step's changed elements are drawn reversed, without colour",
          len(REVERSED.findall(esc)) > 0 and re.search(r"\x1b\[[0-9;]*3[0-7]m", esc) is None,
          repr(esc))
    t.keys("c")
    t.wait_for("step 2/2")
    t.keys("Escape")
    s = t.wait("the collective's end", lambda s: s.count("t = tensor([ 6, 10])") == 4)
    check("c runs the collective to its end", True)
    t.keys("?")
    s = t.wait_for("keys (any key closes)")
    check("? shows the keys", "zoom" in s)
    check("the shell's keys: q back to the plain shell, Ctrl-C listed",
          "back to the plain shell" in s and "Ctrl-C       interrupt" in s, s)


def ring_steps():
    """Every step of the ring all_reduce at np 4 over 8 int64 elements, as
    `distlab explain` prints it: [(phase, [message line, ...]), ...]."""
    out = subprocess.run([EXE, "explain", "all_reduce", "--np", "4", "--count", "8",
                          "--algo", "ring", "--dtype", "int64"],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    steps = []
    for line in out.split("\n"):
        m = re.match(r"step \d+/\d+\s+(\S+)", line)
        if m:
            steps.append((m.group(1), []))
        elif line.startswith("  r") and steps:
            steps[-1][1].append(line.strip())
    return steps


MSG = re.compile(r"r(\d+) -> r(\d+)\s+chunk \d+\s+(reduce|copy)\s+\d+ B\s+in\[(\d+):(\d+)\]")


def ring_states(steps, np=4, start=lambda r, i: i + 10 * r):
    """Every rank's buffer after each step (index 0: before step 1), run
    from the message lines: element i of rank r starts as start(r, i)
    (t = arange(8) + 10*rank), sum."""
    bufs = [[start(r, i) for i in range(8)] for r in range(np)]
    states = [[list(b) for b in bufs]]
    for _, lines in steps:
        sent = []
        for line in lines:
            src, dst, kind, a, b = MSG.search(line).groups()
            sent.append((int(dst), kind, int(a), bufs[int(src)][int(a):int(b)]))
        for dst, kind, a, data in sent:
            for i, v in enumerate(data):
                bufs[dst][a + i] = bufs[dst][a + i] + v if kind == "reduce" else v
        states.append([list(b) for b in bufs])
    return states


# An element drawn reversed (the step changed it): an SGR with 7, then
# perhaps colour, then the number.
REVERSED = re.compile(r"\x1b\[(?:[0-9;]*;)?7(?:;[0-9;]*)?m(?:\x1b\[[0-9;]*m)*(\d+)")


def changed_values(states, k):
    return sorted(v for r in range(len(states[k]))
                  for i, v in enumerate(states[k][r]) if states[k - 1][r][i] != v)


@scenario(np=4, size=(80, 24))
def ring_all_reduce_steps(t):
    steps = ring_steps()
    states = ring_states(steps)
    check("explain lists the ring's six steps", len(steps) == 6, str(steps))
    t.wait_for("ranks 0-3 of 4", "idle")
    t.command("t = arange(8) + 10*rank")
    t.wait_for("t = tensor([30, 3")
    t.command("set algo all_reduce ring")
    t.command("step on")
    t.command("all_reduce t")
    t.wait_for("before step 1/6", *steps[0][1])
    check("before step 1 the list shows what step 1 sends", True)

    def at_step(k, keys):
        t.keys(*keys)
        phase, lines = steps[k - 1]
        s = t.wait_for("step %d/6  %s" % (k, phase), *lines)
        check("step %d: the message list is explain's lines" % k, True)
        want = changed_values(states, k)
        try:
            t.wait("step %d's changed elements drawn reversed" % k,
                   lambda _: sorted(int(v) for v in REVERSED.findall(t.screen(escapes=True)))
                   == want)
            check("step %d: exactly the changed elements are lit" % k, True)
        except Timeout as e:
            check("step %d: exactly the changed elements are lit" % k, False,
                  "want %s, drawn %s\n%s" % (want, sorted(REVERSED.findall(
                      t.screen(escapes=True))), e))
        return s

    s = at_step(1, ["n"])
    head = s.split("\n")[0]
    check("the header names the primitive, algorithm, phase, step, bytes and estimate",
          re.search(r"all_reduce\s+ring\s+reduce-scatter\s+step 2 of 6.*moved 64 B/384 B"
                    r"\s+est [0-9.]+ us", head) is not None, head)
    # 80 columns leave no room for the measured time; 160 do.
    t.tmux("resize-window", "-x", "160", "-y", "48")
    s = t.wait("the header at 160 columns",
               lambda s: re.search(r"est [0-9.]+ us\s+took [0-9.]+ (us|ms)", s.split("\n")[0]))
    check("at 160 columns the header shows how long the step took beside the estimate", True)
    t.tmux("resize-window", "-x", "80", "-y", "24")
    s = t.wait("the header at 80 columns", lambda s: len(s.split("\n")[0].rstrip()) <= 80
               and "step 2 of 6" in s.split("\n")[0])
    t.keys("s")
    s = t.wait_for("a6+d6", "a0+b0", "b2+c2", "c4+d4")
    check("s shows each element as the sum of the ranks' inputs", True)
    t.keys("s")
    t.wait_for("tensor([10, 12, 12, 13")
    at_step(2, ["n"])
    at_step(3, ["n"])
    s = at_step(6, ["c"])
    final = "tensor([60, 64, 68, 72, 76, 80,"
    check("at the end every panel shows the sum", s.count(final) == 4, s)
    at_step(5, ["b"])
    check("b shows step 5 again from its record",
          "ring  all-gather  step 5 of 6" in t.screen().split("\n")[0], t.screen())
    at_step(6, ["f"])
    check("f shows step 6 again", True)


@scenario(np=2, size=(80, 24), args=())
def tui_command_from_the_shell(t):
    t.wait("the prompt", lambda s: "distlab>" in s)
    t.type("tui")
    t.keys("Enter")
    t.wait_for("ranks 0-1 of 2")
    check("`tui` in the shell opens the view", True)
    t.command("quit")
    status = t.exit_status()
    check(":quit in the view ends the process cleanly", status == "0", "status " + status)


@scenario(size=(80, 24), argv=["run", "all_reduce", "--np", "4", "--count", "8", "--algo", "ring",
                                "--timeout", "60", "--tui"])
def run_tui_paused_at_step_1(t):
    steps = ring_steps()
    states = ring_states(steps, start=lambda r, i: i + 1 + 8 * r)
    s = t.wait_for("paused before step 1/6", *steps[0][1])
    check("run --tui opens the view paused before step 1, listing what it sends",
          re.search(r"all_reduce\s+ring\s+reduce-scatter\s+step 1 of 6", s.split("\n")[0])
          is not None, s)
    check("run --tui sets up run's tensors (arange(8) + 1 + 8*rank)",
          "tensor([25, 26, 27, 28" in s, s)
    # A message wider than the status line (another line while one is
    # paused) opens whole in the box; Escape closes it.
    t.command("all_reduce t")
    s = t.wait_for("any key closes")
    check("a message longer than the status line opens whole in the box",
          "step off`, or Ctrl-C to abort it" in s, s)
    # It names the view's keys: Enter, the plain shell's `next`, zooms here.
    check("paused, a line refused names the view's step keys, not Enter",
          "n runs the next step, c the rest, b" in s and "show steps again" in s
          and "(or Enter)" not in s, s)
    t.keys("Escape")
    t.wait("the box closed", lambda s: "any key closes" not in s)
    t.keys("n")
    s = t.wait_for("step 1/6  reduce-scatter", "paused before step 2/6")
    want = changed_values(states, 1)
    lit = sorted(int(v) for v in REVERSED.findall(t.screen(escapes=True)))
    check("n runs step 1, its changed elements lit", lit == want, "want %s, lit %s" % (want, lit))
    t.keys("c")
    s = t.wait("the collective's end", lambda s: s.count("in = tensor([52, 56, 60, 64, 68, 72,") == 4)
    check("c runs it to its end: every panel holds run's result", True)
    t.keys("Escape")
    t.keys("q")
    t.wait("the plain prompt", lambda s: s.rstrip().split("\n")[-1].startswith("distlab>"))
    t.type("quit")
    t.keys("Enter")
    status = t.exit_status()
    check("q then quit ends run --tui cleanly", status == "0", "status " + status)


@scenario(size=(80, 24), argv=["run", "all_reduce", "--np", "4", "--count", "4", "--algo", "rd",
                                "--timeout", "60", "--tui"])
def rd_scratch_buffer(t):
    s = t.wait_for("paused before step 1/2")
    check("before step 1 no panel shows a scratch buffer", "tmp = " not in s, s)
    t.keys("n")
    s = t.wait_for("step 1/2  butterfly", "paused before step 2/2")
    check("rd step 1: each panel shows its scratch buffer, the pair's sums",
          s.count("tmp = tensor([ 6,  8, 10, 12])") == 2
          and s.count("tmp = tensor([22, 24, 26, 28])") == 2, s)
    lit = sorted(int(v) for v in REVERSED.findall(t.screen(escapes=True)))
    check("rd step 1: the scratch buffer's new elements are lit",
          lit == sorted([6, 8, 10, 12] * 2 + [22, 24, 26, 28] * 2), str(lit))
    t.keys("s")
    s = t.wait_for("tmp = [a0+b0")
    check("s shows the scratch buffer as sums too",
          s.count("tmp = [a0+b0, a1+b1, a2+b2, a3+b3]") == 2
          and s.count("tmp = [c0+d0, c1+d1, c2+d2, c3+d3]") == 2, s)


@scenario(np=2, size=(80, 24))
def p2p_log_pane(t):
    t.wait_for("ranks 0-1 of 2", "idle")
    t.command("t = arange(2) + rank")
    t.wait_for("t = tensor([1, 2])")
    check("no log pane before any send", "point-to-point" not in t.screen(), t.screen())
    t.command("on 0: send t dst=1; on 1: recv t src=0")
    # Both are posted first, then matched: wait for the matches.
    s = t.wait("both operations matched",
               lambda s: "point-to-point: 2 operations" in s and s.count("matched #") == 2)
    lines = [l for l in s.split("\n") if re.search(r"#\d+ ", l)]
    # The two ranks post at once: the log is in the order their notices
    # reached the session, either one first.
    send = [l for l in lines if re.search(r"#(\d)\s+[0-9.]+ s\s+r0 send\s+-> r1\s+tag 0\s+16 B", l)]
    recv = [l for l in lines if re.search(r"#(\d)\s+[0-9.]+ s\s+r1 recv\s+<- r0\s+tag 0\s+16 B", l)]
    numbers = sorted(int(re.search(r"#(\d+)", l).group(1)) for l in lines)
    check("the log shows both operations, numbered in order, with tag and bytes",
          len(lines) == 2 and len(send) == 1 and len(recv) == 1 and numbers == [1, 2], s)
    if len(send) == 1 and len(recv) == 1:
        ns = re.search(r"#(\d+)", send[0]).group(1)
        nr = re.search(r"#(\d+)", recv[0]).group(1)
        check("each names the one it matched",
              "matched #%s recv" % nr in send[0] and "matched #%s send" % ns in recv[0], s)
    t.keys("l")
    s = t.wait("the pane hidden", lambda s: "point-to-point" not in s)
    check("l hides the log", True)
    t.keys("l")
    t.wait_for("point-to-point: 2 operations")
    check("l shows it again", True)
    # A recv refused (nothing will ever match it) reads failed, not waiting.
    t.command("on 0: recv t src=1")
    s = t.wait("the refused recv in the log",
               lambda s: "point-to-point: 3 operations" in s and "r0 recv" in s
               and "can never complete" in s)
    refused = [l for l in s.split("\n") if "#3 " in l]
    check("a refused recv's entry reads failed", refused and "failed" in refused[0]
          and "waiting" not in refused[0], s)


@scenario(size=(80, 24), argv=["run", "scatter", "--np", "4", "--timeout", "60", "--tui"])
def run_tui_scatter(t):
    # Every panel, not only the first to pause: under load the others
    # can still be starting when rank 0's shows the pause.
    s = t.wait("every rank paused before step 1",
               lambda s: s.count("paused before step 1") == 4)
    check("scatter before: the root holds the list, every rank a tensor of zeros",
          "scatter_list" in s and s.count("tensor = tensor([0, 0])") == 4, s)
    t.keys("c")
    s = t.wait("the scatter's end",
               lambda s: all("tensor = tensor([%d, %d])" % (2 * r + 1, 2 * r + 2) in s
                             for r in range(4)))
    check("scatter after: rank r holds scatter_list[r]", True)
    t.keys("Escape")
    t.keys("q")
    t.wait("the plain prompt", lambda s: s.rstrip().split("\n")[-1].startswith("distlab>"))
    t.type("quit")
    t.keys("Enter")
    check("q then quit ends it cleanly", t.exit_status() == "0")


# A panel's title on its top border, with the marks of the shown step.
TITLE = re.compile(r"[┌+] rank (\d+)\b([^┐+]*)[┐+]")
MARK = re.compile(r"(→|->|←|<-)r(\d+)(?: c(\d+))?")
LIST_MSG = re.compile(r"r(\d+) -> r(\d+)\s+chunk (\d+)")


def marks_and_list(s):
    """The (src, dst, chunk) messages the panels' titles mark, as their
    senders and as their receivers say, and those the message list has."""
    sends, recvs = set(), set()
    for rank, rest in TITLE.findall(s):
        for arrow, peer, chunk in MARK.findall(rest):
            if arrow in ("→", "->"):
                sends.add((int(rank), int(peer), int(chunk)))
            else:
                recvs.add((int(peer), int(rank), int(chunk)))
    listed = {(int(a), int(b), int(c)) for a, b, c in LIST_MSG.findall(s)}
    return sends, recvs, listed


@scenario(size=(80, 24), argv=["run", "all_reduce", "--np", "4", "--count", "8", "--algo", "ring",
                                "--timeout", "60", "--tui"])
def step_arrows_on_titles(t):
    def check_marks(when, size):
        s = t.screen()
        sends, recvs, listed = marks_and_list(s)
        check("%s at %s: every panel marks its sends and receives as the list has them" %
              (when, size), len(listed) == 4 and sends == listed and recvs == listed,
              "sends %s\nrecvs %s\nlist %s\n%s" % (sorted(sends), sorted(recvs),
                                                  sorted(listed), s))
    t.wait_for("paused before step 1/6", "r3 -> r0  chunk 3")
    t.wait("the marks", lambda s: "→r1 c0" in s)
    check_marks("before step 1 (what step 1 sends)", "80x24")
    t.keys("n")
    t.wait_for("step 1/6  reduce-scatter", "paused before step 2/6")
    check_marks("step 1", "80x24")
    s = t.screen()
    check("at 80 columns the title keeps the rank and pid beside the marks",
          # the host too when the pid is short enough to leave it room
          re.search(r"rank 0  (\S+  )?pid \d+ ─+ →r1 c0  ←r3 c3 ┐", s) is not None, s)
    t.tmux("resize-window", "-x", "160", "-y", "48")
    s = t.wait("the view at 160 columns",
               lambda s: re.search(r"rank 0  \S+  pid \d+ ─+ →r1 c0  ←r3 c3 ┐", s) is not None)
    check_marks("step 1", "160x48")
    t.keys("n")
    t.wait_for("step 2/6  reduce-scatter")
    t.wait("step 2's marks", lambda s: "→r1 c3" in s)
    check_marks("step 2", "160x48")
    t.keys("c")
    t.wait_for("step 6/6  all-gather")
    t.keys("Escape")
    t.command("t = zeros(1)")
    s = t.wait("the step view gone", lambda s: "step 6/6" not in s)
    check("no marks once no step is shown", not MARK.search(s), s)


SCENARIO_ARGV = ["scenario", "run", "all_reduce", "--tui", "--timeout", "60"]


@scenario(size=(80, 24), argv=SCENARIO_ARGV)
def scenario_in_the_view(t):
    s = t.wait_for("scenario: All-reduce (4 ranks)", "The workhorse of data-parallel",
                   "ok   expect 2 t == [5, 6]", "(space or enter goes on)")
    check("scenario run --tui: narration, the line run and its check in the pane", True)
    time.sleep(1.0)
    s = t.screen()
    check("a pause waits for a key", "(space or enter goes on)" in s and
          "all_reduce t" not in s and "t = tensor([1, 2])" in s, s)
    # The keys' box says what q does here (it said "back to the plain
    # shell", which a scenario has none of), and names Ctrl-C.
    t.keys("?")
    s = t.wait_for("keys (any key closes)")
    check("? in a scenario: q leaves the scenario, Ctrl-C is listed",
          "leave the scenario (its exit code at the end, 1 before)" in s
          and "back to the plain shell" not in s and "Ctrl-C       interrupt" in s, s)
    t.keys("Escape")
    t.wait("the box closed", lambda s: "keys (any key closes)" not in s)
    t.keys("Space")
    s = t.wait_for("the end: every check held (9)", "(q leaves)",
                   "ok   expect 3 t == tensor([7, 8])")
    check("space goes on; every check is reported, then the end", s.count("t = tensor([7, 8])") == 4,
          s)
    time.sleep(0.5)
    check("the view stays at the end until q", not t.exited())
    t.keys("q")
    status = t.exit_status()
    check("q leaves; the exit code is the scenario's (0)", status == "0", "status " + status)
    check("the plain terminal says how it went",
          "all_reduce: the end: every check held (9)" in t.screen(), t.screen())


@scenario(size=(80, 24), argv=SCENARIO_ARGV + ["--step"])
def scenario_stepped_in_the_view(t):
    t.wait_for("(space or enter goes on)")
    t.keys("Enter")
    s = t.wait_for("paused before step 1/", "(n runs a step")
    check("--step --tui: the collective waits before step 1 for the step keys", True)
    t.keys("n")
    t.wait_for("paused before step 2/")
    check("n runs a step", True)
    time.sleep(0.5)
    check("the scenario waits while the collective is stepped",
          "expect 0 t == [16, 20]" not in t.screen(), t.screen())
    t.keys("c")
    t.wait_for(">>> all_reduce t op=max", "(n runs a step")
    check("at the collective's end the scenario goes on to the next one", True)
    t.keys("c")
    t.wait_for("the end: every check held (9)")
    check("every check held, those after each stepped collective included", True)
    t.keys("q")
    status = t.exit_status()
    check("stepped to its end, q exits 0", status == "0", "status " + status)


def distlab_pid(t):
    """distlab's pid: the pane's shell runs it as its child."""
    pane = int(t.info("#{pane_pid}"))
    out = subprocess.run(["pgrep", "-P", str(pane)], capture_output=True, text=True).stdout
    return int(out.split()[0])


@scenario(size=(80, 24), argv=SCENARIO_ARGV + ["--step"])
def scenario_stepped_interrupted(t):
    # Ctrl-C at a stepped collective ended distlab at once (curses still
    # holding the terminal, the ranks' errors over it); then it was heard,
    # but the scenario waited on the collective forever.
    t.wait_for("(space or enter goes on)")
    t.keys("Enter")
    t.wait_for("paused before step 1/", "(n runs a step")
    os.kill(distlab_pid(t), signal.SIGINT)
    s = t.wait_for("all_reduce.scenario:20: `all_reduce t`", "stopped at line 20", "(q leaves)")
    check("Ctrl-C at a stepped collective: it fails, the scenario stops there and waits for q",
          "interrupted (Ctrl-C)" in s and not t.exited(), s)
    t.keys("Escape")
    t.keys("q")
    status = t.exit_status()
    check("stopped by Ctrl-C, q exits 1", status == "1", "status " + status)


@scenario(size=(80, 24), argv=SCENARIO_ARGV + ["--step"])
def scenario_stepped_rank_killed(t):
    # A rank lost while the view's keys step a collective: the scenario went
    # on as if the collective had run, and failed the checks after it.
    t.wait_for("(space or enter goes on)")
    t.keys("Enter")
    t.wait_for("paused before step 1/", "(n runs a step")
    t.command("kill 1")
    s = t.wait_for("all_reduce.scenario:20: `all_reduce t`", "stopped at line 20", "(q leaves)")
    check("a rank killed at a stepped collective: the line fails, no check after it runs",
          "expect 0 t == [16, 20]" not in s and "4 failed" not in s, s)
    t.keys("Escape")
    t.keys("q")
    status = t.exit_status()
    check("stopped by a lost rank, q exits 1", status == "1", "status " + status)


@scenario(size=(80, 24), argv=SCENARIO_ARGV)
def scenario_left_early(t):
    t.wait_for("(space or enter goes on)")
    t.keys("q")
    status = t.exit_status()
    check("q before the end stops the scenario and fails it", status == "1", "status " + status)
    check("the plain terminal says where it was left", "left at line" in t.screen(), t.screen())


@scenario(size=(40, 10), argv=SCENARIO_ARGV)
def scenario_on_a_small_terminal(t):
    # At 40x10 the narration pane gave way to the panels whole: nothing
    # said that the scenario waited for a key.
    s = t.wait_for("rank 0 of 4", "(space or enter goes on)")
    check("40x10: one panel, and the pane says what the pause waits for", True)
    t.keys("Space")
    t.wait_for("(q leaves)")
    t.keys("q")
    status = t.exit_status()
    check("40x10: space goes on to the end, q exits 0", status == "0", "status " + status)


FAILING_DIR = tempfile.mkdtemp(prefix="distlab-tui-scn-")
atexit.register(shutil.rmtree, FAILING_DIR, True)
FAILING = os.path.join(FAILING_DIR, "failing.scenario")
with open(FAILING, "w") as f:
    f.write("title: Failing\nranks: 2\nt = arange(2) + rank\nexpect 0 t == [9, 9]\n"
            "expect 1 t == [1, 2]\n")


@scenario(size=(80, 24), argv=["scenario", "run", FAILING, "--tui", "--timeout", "60"])
def scenario_failing_in_the_view(t):
    s = t.wait_for("the end: 1 check held, 1 failed", "(q leaves)")
    check("a failed check shows as FAIL with what the rank holds, a held one as ok",
          "FAIL " in s and "expect 0 t == [9, 9]," in s
          and "but rank 0 has t = tensor([0, 1])" in s and "ok   expect 1 t == [1, 2]" in s, s)
    t.keys("q")
    status = t.exit_status()
    check("at the end of a failing scenario q exits 1", status == "1", "status " + status)


def scenario_tui_needs_a_terminal():
    p = subprocess.run([EXE, "scenario", "run", "all_reduce", "--tui"], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=30)
    check("scenario run --tui without a terminal: a one-line error",
          p.returncode != 0 and p.stderr.count("\n") == 1 and "--tui needs a terminal" in p.stderr,
          "rc %d, stderr %r" % (p.returncode, p.stderr))


@scenario(np=8, size=(80, 24))
def long_tensors_errors_and_a_zoomed_list(t):
    t.wait_for("ranks 0-", "idle")
    # A line cut in the middle ends in the tensor's length, whole: the
    # ellipsis is one column but three bytes.
    t.command("big = arange(1000) * 1.5")
    s = t.wait("big's panels", lambda s: s.count("(1000)") >= 4)
    rows = [l for l in s.split("\n") if "big = " in l]
    check("a cut line ends in the tensor's whole length, (1000)",
          rows and all(l.rstrip("│ ").endswith("(1000)") for l in rows), s)
    check("the length follows the first line cut only, once a panel",
          s.count("(1000)") == s.count("big = "), s)
    # A parse error: the column, the message and the line, on one line.
    t.command("t = arange(4 +")
    s = t.wait_for("expected a value after '+'")
    check("a parse error names its column and its line on the status line",
          "column 15: expected a value after '+'  (t = arange(4 +)" in s, s)
    # A long output (help) scrolls from its first line, wrapped at blanks.
    t.command("help")
    s = t.wait_for("output, lines 1-")
    check("help's output starts at its first line", "tensor:" in s, s)
    for _ in range(30):  # more than help's pages, which grow with the commands
        t.keys("NPage")
    s = t.wait("the end of help", lambda s: re.search(r"lines \d+-(\d+) of \1 ", s) is not None)
    check("page down reaches help's last line", "quit" in s or "exit" in s, s)
    t.keys("x")
    t.wait("the box closed", lambda s: "output, lines" not in s)
    # ':' while a box is open closes it and opens the command line, so a
    # command typed as an output arrives is not lost.
    t.command("help")
    t.wait_for("output, lines 1-")
    t.command("t = arange(5 *")
    s = t.wait("the command after the box", lambda s: "expected a value after '*'" in s and
               "output, lines" not in s)
    check("':' on an open box closes it and runs the command typed", True)
    # Zoomed in step mode, the message list holds the zoomed rank's messages.
    # The next line once big's has run on all 8 ranks: a line typed while
    # another runs is refused ("a line is still running").
    t.command("big = arange(16) + 100*rank")
    t.wait_for("714, 715])")  # rank 7's, the last
    for line in ["step on", "all_reduce big"]:
        t.command(line)
    t.wait_for("paused before step 1")
    t.keys("n")
    s = t.wait_for("more; enter on a panel lists its rank's only")
    t.keys("Enter")
    # The pane may be captured mid-redraw: wait for the whole zoomed list.
    def zoomed_list(s):
        listed = [l for l in s.split("\n") if re.search(r"r\d -> r\d", l)]
        return "rank 0 of 8" in s and "lists its rank" not in s and listed and \
            all("r0 ->" in l or "-> r0" in l for l in listed)
    try:
        t.wait("the zoomed panel's messages", zoomed_list, deadline=15)
        check("zoomed, the list holds only the rank's messages", True)
    except Timeout as e:
        check("zoomed, the list holds only the rank's messages", False, str(e))
    t.keys("c")


@scenario(np=8, size=(80, 24))
def header_at_80_columns(t):
    t.wait_for("ranks 0-", "idle")
    # Each line once the one before has run, as the other tests type them:
    # on a loaded machine a set typed while t's line still runs came too late.
    t.command("t = arange(16) + 100*rank")
    t.wait_for("714, 715])")  # rank 7's t, the last
    t.command("set algo all_reduce ring")
    t.command("step on")
    t.command("all_reduce t")
    t.wait_for("paused before step 1/14")
    t.keys("n")
    t.wait_for("paused before step 2/14")
    want = re.compile(r" ranks 0-\d of 8  \|  all_reduce  ring  step 2 of 14  \|  moved 128 B/"
                      r"1\.8 KiB\s*$")
    try:
        t.wait("the header", lambda s: want.match(s.split("\n")[0]) is not None, deadline=10)
        check("at 80 columns with ranks off screen, the header keeps which ranks it shows and "
              "drops whole parts, never a number cut in two", True)
    except Timeout as e:
        check("at 80 columns with ranks off screen, the header keeps which ranks it shows and "
              "drops whole parts, never a number cut in two", False, str(e))
    t.keys("n")
    t.wait_for("paused before step 3/14")
    t.keys("b")
    s = t.wait("step 1's record shown again", lambda s: "step 1 of 14" in s.split("\n")[0])
    check("b: the header names the step shown, as the panels do",
          "moved 128 B/" in s.split("\n")[0], s.split("\n")[0])
    # A rank killed while paused: the others' failures, too long for the
    # status line, open whole in the box, the cause at their end included.
    t.command("kill 1")
    s = t.wait_for("was killed by signal 9 (SIGKILL)", "restarts the ranks")
    check("a failure longer than the status line opens whole in the box",
          "rank 0: all_reduce (ring) failed at step 3/14" in s, s)


@scenario(np=2, size=(80, 24))
def long_lines(t):
    t.wait_for("ranks 0-1 of 2", "idle")
    # Longer than the 511 bytes the command line once kept, as the shell
    # takes it.
    line = "t = arange(2)" + " + 1" * 300
    t.command(line)
    try:
        t.wait("the long line's result", lambda s: s.count("t = tensor([300, 301])") == 2,
               deadline=10)
        check("a line of %d bytes on the command line runs whole" % len(line), True)
    except Timeout as e:
        check("a line of %d bytes on the command line runs whole" % len(line), False, str(e))
    # A parse error at its end: the column in the line, not in the
    # shell's excerpt of it.
    t.command(line + " +")
    s = t.wait_for("expected a value after '+'")
    check("a parse error in a long line names its column in the line",
          "column %d: expected a value after '+'" % (len(line) + 3) in s, s)


@scenario(size=(80, 24), argv=["run", "isend", "--np", "2", "--timeout", "60", "--tui"])
def run_tui_isend_received(t):
    try:
        t.wait("both panels", lambda s: s.count("idle") == 2 and
               s.count("tensor = tensor([1, 2])") == 2, deadline=10)
        check("run isend --tui: rank 1's panel holds what its wait received", True)
    except Timeout as e:
        check("run isend --tui: rank 1's panel holds what its wait received", False, str(e))


@scenario(size=(80, 24), argv=["run", "all_reduce", "--np", "4", "--dtype", "bool", "--op", "bor",
                                "--timeout", "60", "--tui"])
def run_tui_bool(t):
    try:
        s = t.wait_for("paused before step 1/", deadline=10)
        check("run --tui --dtype bool sets up run's tensors (all True)",
              s.count("tensor = tensor([True, True])") == 4, s)
    except Timeout as e:
        check("run --tui --dtype bool sets up run's tensors (all True)", False, str(e))


@scenario(size=(80, 24), argv=["run", "all_reduce", "--np", "2", "--count", "16", "--algo", "ring",
                                "--timeout", "60", "--tui"])
def stepped_collective_failed(t):
    s = t.wait_for("paused before step 1/2")
    m = re.search(r"rank 1\s+(?:\S+\s+)?pid (\d+)", s)
    if not check("rank 1's pid in its title", m is not None, s):
        return
    os.kill(int(m.group(1)), signal.SIGKILL)
    s = t.wait_for("any key closes", "was killed by signal 9 (SIGKILL)", "gave up")
    header = s.split("\n")[0]
    check("a stepped collective failed by a killed rank: its error whole in the box, the "
          "step view gone (header, marks)",
          "step 1 of 2" not in header
          and not MARK.search(s), s)


@scenario(np=2, size=(80, 24))
def rebound_name_leaves_its_panel(t):
    """A name that held tensors and is bound to a number leaves the panels,
    as `del` makes it leave them."""
    t.wait_for("ranks 0-", "idle")
    t.command("l = [ones(3), zeros(2)]")
    t.wait("l's items in both panels", lambda s: s.count("l[1] = tensor([0., 0.])") == 2)
    t.command("l = 7")
    s = t.wait("l's items gone", lambda s: "l[0] =" not in s and "l[1] =" not in s)
    check("a list of tensors rebound to a number leaves the panels", "l[" not in s, s)
    t.command("t = arange(2)")
    t.wait("t's panels", lambda s: s.count("t = tensor([0, 1])") == 2)
    t.command("for t in range(3): pass")
    s = t.wait("t gone", lambda s: "t = tensor" not in s)
    check("a loop's variable that held a tensor leaves the panels", "t = tensor" not in s, s)

def main():
    if shutil.which("tmux") is None:
        print("skipped: tmux is not installed (tests/setup.sh installs it)")
        return 77
    tests = (panels_collective_death_resize_leave, sixteen_ranks_scroll,
             plain_terminal_and_step_keys, ring_all_reduce_steps, tui_command_from_the_shell,
             run_tui_paused_at_step_1, rd_scratch_buffer, p2p_log_pane, run_tui_scatter,
             step_arrows_on_titles,
             scenario_in_the_view, scenario_stepped_in_the_view, scenario_left_early,
             scenario_on_a_small_terminal, scenario_stepped_interrupted,
             scenario_stepped_rank_killed,
             scenario_failing_in_the_view, scenario_tui_needs_a_terminal,
             long_tensors_errors_and_a_zoomed_list, header_at_80_columns, long_lines,
             run_tui_isend_received, run_tui_bool, stepped_collective_failed,
             rebound_name_leaves_its_panel)
    only = sys.argv[2:]
    for run in tests:
        if not only or run.__name__ in only:
            run()
    if failures:
        print("%d failed: %s" % (len(failures), ", ".join(failures)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
