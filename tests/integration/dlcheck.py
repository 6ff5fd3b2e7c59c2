"""Shared helpers for distlab's integration tests (standard library only).

- dtype arithmetic done independently of distlab: integer wrap-around,
  rounding to float32 / float16 / bfloat16;
- a parser for torch's tensor repr (values, True/False, nan/inf, scientific
  notation, the dtype suffix, nested lists, the "..." of summarised tensors);
- a re-implementation of torch's default repr for 1-D tensors (torch/_tensor_str.py:
  precision 4, linewidth 80, threshold 1000, edgeitems 3), used to check the
  exact text wherever the expected values are exactly known;
- running the binary with a time limit, killing its whole process group;
- the tests' "ok"/"FAIL" lines (check), and what real torch prints.
"""

import math
import os
import re
import shlex
import signal
import struct
import subprocess
import sys
import time

# ---------------------------------------------------------------- dtypes

ALL_DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
INT_DTYPES = {"int8": (8, True), "uint8": (8, False), "int32": (32, True), "int64": (64, True)}
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]
# significand bits (with the implicit one), largest finite value
FLOAT_INFO = {
    "float16": (11, 65504.0),
    "bfloat16": (8, float.fromhex("0x1.fep127")),
    "float32": (24, float.fromhex("0x1.fffffep127")),
    "float64": (53, float.fromhex("0x1.fffffffffffffp1023")),
}
# dtypes torch prints without a dtype= suffix (non-empty tensors)
DEFAULT_PRINT_DTYPES = ("float32", "int64", "bool")

ALL_OPS = ["sum", "prod", "min", "max", "avg", "band", "bor", "bxor"]
BITWISE_OPS = ("band", "bor", "bxor")


def op_valid(op, dtype):
    """Which (op, dtype) pairs distlab must accept."""
    if op in BITWISE_OPS and dtype in FLOAT_DTYPES:
        return False
    if op == "avg" and dtype == "bool":
        # Not in the brief; torch/NCCL have no bool average and distlab refuses it.
        return False
    return True


def wrap_int(v, dtype):
    bits, signed = INT_DTYPES[dtype]
    v &= (1 << bits) - 1
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _round_struct(v, fmt):
    try:
        return struct.unpack(fmt, struct.pack(fmt, v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _round_bf16(v):
    if math.isnan(v) or math.isinf(v):
        return v
    f = _round_struct(v, "<f")  # inputs here are exact in float32
    if math.isinf(f):
        return f
    (bits,) = struct.unpack("<I", struct.pack("<f", f))
    lsb = (bits >> 16) & 1
    bits = (bits + 0x7FFF + lsb) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def round_float(v, dtype):
    """Round a real number (int, float or Fraction) to dtype, as a Python float."""
    if dtype == "float64":
        try:
            return float(v)
        except OverflowError:
            return math.copysign(math.inf, v)
    try:
        v = float(v)
    except OverflowError:
        return math.copysign(math.inf, v)
    if dtype == "float32":
        return _round_struct(v, "<f")
    if dtype == "float16":
        return _round_struct(v, "<e")
    if dtype == "bfloat16":
        return _round_bf16(v)
    raise ValueError(dtype)


def convert(v, dtype):
    """torch.tensor(v).to(dtype) for an integer v."""
    if dtype == "bool":
        return v != 0
    if dtype in INT_DTYPES:
        return wrap_int(v, dtype)
    return round_float(v, dtype)


# ---------------------------------------------------------------- torch repr

PRECISION = 4
LINEWIDTH = 80
THRESHOLD = 1000
EDGEITEMS = 3


class _Formatter:
    """torch._tensor_str._Formatter for the values of a 1-D tensor."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            for v in values:
                self.max_width = max(self.max_width, len("{}".format(v)))
            return
        nz = [v for v in values if math.isfinite(v) and v != 0]
        if not nz:
            return
        mags = [abs(v) for v in nz]
        lo, hi = min(mags), max(mags)
        for v in nz:
            if v != math.ceil(v):
                self.int_mode = False
                break
        if self.int_mode:
            if hi / lo > 1000.0 or hi > 1.0e8:
                self.sci_mode = True
                for v in nz:
                    self.max_width = max(self.max_width, len("{:.{}e}".format(v, PRECISION)))
            else:
                for v in nz:
                    self.max_width = max(self.max_width, len("{:.0f}".format(v)) + 1)
        else:
            if hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
                self.sci_mode = True
                for v in nz:
                    self.max_width = max(self.max_width, len("{:.{}e}".format(v, PRECISION)))
            else:
                for v in nz:
                    self.max_width = max(self.max_width, len("{:.{}f}".format(v, PRECISION)))

    def format(self, v):
        if self.floating:
            if self.sci_mode:
                ret = "{:{}.{}e}".format(v, self.max_width, PRECISION)
            elif self.int_mode:
                ret = "{:.0f}".format(v)
                if not (math.isinf(v) or math.isnan(v)):
                    ret += "."
            else:
                ret = "{:.{}f}".format(v, PRECISION)
        else:
            ret = "{}".format(v)
        return (self.max_width - len(ret)) * " " + ret


def torch_repr(values, dtype):
    """repr(torch.tensor(values, dtype=dtype)) for a 1-D tensor."""
    indent = len("tensor(")
    suffixes = []
    floating = dtype in FLOAT_DTYPES
    if len(values) == 0:
        if dtype != "float32":
            suffixes.append("dtype=torch." + dtype)
        body = "[]"
    else:
        if dtype not in DEFAULT_PRINT_DTYPES:
            suffixes.append("dtype=torch." + dtype)
        summarize = len(values) > THRESHOLD and len(values) > 2 * EDGEITEMS
        shown = values[:EDGEITEMS] + values[-EDGEITEMS:] if summarize else values
        fmt = _Formatter(shown, floating)
        per_line = max(1, int(math.floor((LINEWIDTH - indent) / (fmt.max_width + 2))))
        if summarize:
            data = ([fmt.format(v) for v in values[:EDGEITEMS]] + [" ..."] +
                    [fmt.format(v) for v in values[-EDGEITEMS:]])
        else:
            data = [fmt.format(v) for v in values]
        lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
        body = "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    s = "tensor(" + body
    last_line_len = len(s) - s.rfind("\n") + 1
    for suf in suffixes:
        if last_line_len + len(suf) + 2 > LINEWIDTH:
            s += ",\n" + " " * indent + suf
            last_line_len = indent + len(suf)
        else:
            s += ", " + suf
            last_line_len += len(suf) + 2
    return s + ")"


def list_repr(tensors, dtype):
    """repr() of a Python list of 1-D tensors."""
    return "[" + ", ".join(torch_repr(t, dtype) for t in tensors) + "]"


def same_text_modulo_indent(expected, got):
    """True if got equals expected except that every continuation line may be
    indented by one extra constant amount (distlab aligns continuation lines
    under the value; a bare Python print would not)."""
    e, g = expected.split("\n"), got.split("\n")
    if len(e) != len(g) or e[0] != g[0]:
        return False
    extra = None
    for el, gl in zip(e[1:], g[1:]):
        d = len(gl) - len(el)
        if d < 0 or gl[:d].strip() != "" or gl[d:] != el:
            return False
        if extra is None:
            extra = d
        elif d != extra:
            return False
    return True


# ---------------------------------------------------------------- parser

class Tensor:
    def __init__(self, values, kwargs, int_tokens):
        self.values = values          # nested lists of numbers / bools / Ellipsis
        self.kwargs = kwargs          # e.g. {"dtype": "torch.int32"}
        self.int_tokens = int_tokens  # count of integer-looking number tokens
        self.float_tokens = 0

    @property
    def dtype_suffix(self):
        d = self.kwargs.get("dtype")
        return d[len("torch."):] if d and d.startswith("torch.") else d

    def __repr__(self):
        return "Tensor(%r, %r)" % (self.values, self.kwargs)


class ParseError(Exception):
    pass


_TOKEN = re.compile(r"""
    \s*(?:
      (?P<tensor>tensor\()
    | (?P<kw>[A-Za-z_]+=(?:torch\.[A-Za-z0-9_]+|\([^)]*\)|[^,)\s]+))
    | (?P<ell>\.\.\.)
    | (?P<bool>True|False)
    | (?P<num>[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?))
    | (?P<punct>[\[\](),])
    )""", re.VERBOSE)


def _tokenize(text):
    pos, toks = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ParseError("cannot read %r" % text[pos:pos + 30])
        pos = m.end()
        kind = m.lastgroup
        toks.append((kind, m.group(kind)))
    return toks


def _number(tok):
    low = tok.lower()
    if "nan" in low or "inf" in low:
        return float(tok), False
    if "." in tok or "e" in low:
        return float(tok), False
    return int(tok), True


def parse_value(text):
    """Parse `tensor(...)` or a (nested) list of them; returns Tensor or list."""
    toks = _tokenize(text)
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else (None, None)

    def take(kind=None, val=None):
        t = peek()
        if t[0] is None or (kind and t[0] != kind) or (val is not None and t[1] != val):
            raise ParseError("expected %s %s, got %r" % (kind, val or "", t))
        pos[0] += 1
        return t

    def elems(tensor):
        take("punct", "[")
        out = []
        if peek() == ("punct", "]"):
            take()
            return out
        while True:
            k, v = peek()
            if (k, v) == ("punct", "["):
                out.append(elems(tensor))
            elif k == "num":
                take()
                n, is_int = _number(v)
                if is_int:
                    tensor.int_tokens += 1
                else:
                    tensor.float_tokens += 1
                out.append(n)
            elif k == "bool":
                take()
                out.append(v == "True")
            elif k == "ell":
                take()
                out.append(Ellipsis)
            else:
                raise ParseError("unexpected %r in tensor data" % (v,))
            if peek() == ("punct", ","):
                take()
                continue
            take("punct", "]")
            return out

    def tensor():
        take("tensor")
        t = Tensor(None, {}, 0)
        t.values = elems(t)
        while peek() == ("punct", ","):
            take()
            _, kv = take("kw")
            k, v = kv.split("=", 1)
            t.kwargs[k] = v
        take("punct", ")")
        return t

    def value():
        k, v = peek()
        if k == "tensor":
            return tensor()
        if (k, v) == ("punct", "["):
            take()
            out = []
            if peek() == ("punct", "]"):
                take()
                return out
            while True:
                out.append(value())
                if peek() == ("punct", ","):
                    take()
                    continue
                take("punct", "]")
                return out
        raise ParseError("expected a tensor or a list, got %r" % (v,))

    v = value()
    if pos[0] != len(toks):
        raise ParseError("trailing text after value: %r" % (toks[pos[0]:],))
    return v


# ---------------------------------------------------------------- output sections

_ITEM = re.compile(r"^  rank (\d+): ([A-Za-z_]+) = (.*)$")
_NOTE = re.compile(r"^  rank (\d+): (.*)$")
# "before:", "after:", and the states between them a run reports ("after r0 -> r1:").
_SECTION = re.compile(r"^(before|after)(?: [^:]+)?:$")


def split_output(lines):
    """Split the lines after the header into sections.
    Returns [(section or None, [(rank, name, text) ...])]; name None for a
    free-text line such as 'passed the barrier' (text holds it)."""
    sections = []
    cur = None
    items = None
    for ln in lines:
        if _SECTION.match(ln):
            cur = ln[:-1]
            items = []
            sections.append((cur, items))
            continue
        m = _ITEM.match(ln)
        if m:
            if items is None:
                items = []
                sections.append((None, items))
            items.append([int(m.group(1)), m.group(2), m.group(3)])
            continue
        m = _NOTE.match(ln)
        if m:
            if items is None:
                items = []
                sections.append((None, items))
            items.append([int(m.group(1)), None, m.group(2)])
            continue
        if items and ln.startswith(" ") and items[-1][1] is not None:
            items[-1][2] += "\n" + ln
            continue
        raise ParseError("unexpected output line %r" % ln)
    return [(s, [tuple(i) for i in its]) for s, its in sections]


# ---------------------------------------------------------------- processes

def cmd_str(argv, env_extra=None):
    pre = "".join("%s=%s " % (k, shlex.quote(v)) for k, v in (env_extra or {}).items())
    return pre + " ".join(shlex.quote(a) for a in argv)


class Result:
    def __init__(self, argv, rc, out, err, secs, env_extra=None):
        self.argv, self.rc, self.out, self.err, self.secs = argv, rc, out, err, secs
        self.cmd = cmd_str(argv, env_extra)


def run(argv, timeout=90, env_extra=None):
    """Run argv in its own session; on timeout kill the whole group."""
    env = dict(os.environ)
    env.update(env_extra or {})
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         start_new_session=True, text=True, errors="replace")
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        err += "\n[test harness: killed after %s s]" % timeout
        return Result(argv, "timeout", out, err, time.monotonic() - t0, env_extra)
    return Result(argv, p.returncode, out, err, time.monotonic() - t0, env_extra)


def marked_process_map(mark, zombies=False):
    """{pid: cmdline} of the processes whose environment holds mark
    ("NAME=VALUE"): what a test started (ranks, mpirun, controllers, agents),
    told apart from other tests' processes running beside. Zombies (gone,
    only waiting for their parent to reap them) count only with zombies."""
    needle = mark.encode()
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open("/proc/%s/stat" % pid) as f:
                if not zombies and f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    continue
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                found[int(pid)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
    return found


def marked_processes(mark):
    """The live processes of marked_process_map, as "pid cmdline" strings."""
    return ["%d %s" % (pid, cmd) for pid, cmd in marked_process_map(mark).items()]


# ---------------------------------------------------------------- checks

# The names of the checks that failed so far in this test process.
failures = []


def check(name, cond, detail=""):
    """Prints one "ok"/"FAIL" line for a check, and on a failure the detail
    (the end of it, when long) indented under it. Returns cond."""
    line = ("ok    " if cond else "FAIL  ") + name
    if not cond:
        failures.append(name)
        text = str(detail)
        if len(text) > 4000:
            text = "..." + text[-4000:]
        if text:  # one print: a test's threads do not cut in between
            line += "\n      " + text.replace("\n", "\n      ")
    print(line, flush=True)
    return cond


def lines_of(out):
    """The non-blank lines of out, stripped."""
    return [l.strip() for l in out.splitlines() if l.strip()]


def torch_prints(snippets, timeout=120):
    """What real torch prints for each snippet of Python (run in order in
    one interpreter, after `import torch`), or None where no Python here
    has torch. Debian's python3-torch is at /usr/bin/python3."""
    prog = "import torch\n" + "\n".join("%s\nprint('@@')" % s for s in snippets)
    for py in ("/usr/bin/python3", sys.executable):
        try:
            p = subprocess.run([py, "-c", prog], capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if p.returncode == 0:
            return [c.strip("\n") for c in p.stdout.split("@@\n")[:len(snippets)]]
    return None
