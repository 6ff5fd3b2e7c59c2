#!/usr/bin/env python3
"""What real torch does with writes into a tensor from its own memory.

test_writes.py runs every statement here in the distlab shell and checks
that the shell accepts what torch accepts and refuses what it refuses, with
torch's overlap refusal ("...refer to a single memory location...") where
torch gives it. The statements are every pair of a target and a source
among views of one tensor (integers, slices, steps, None, ...), for
t[a] = t[b], t[a] += t[b], t[a].copy_(t[b]) and t[a].add_(t[b]).

Run with a Python that has torch (Debian: apt-get install python3-torch)
to regenerate the checked-in expectations:
  python3 tests/integration/torch_writes.py --out tests/integration/torch_writes.json
"""
import json
import torch_out

TENSORS = {
    "1": "torch.arange(6)",
    "2": "torch.arange(6).reshape(2, 3)",
    "3": "torch.arange(12).reshape(2, 2, 3)",
}
VIEWS = {
    "1": ["x", "x[0]", "x[1]", "x[0:1]", "x[1:]", "x[:-1]", "x[None]", "x[None, 0]", "x[0, None]",
          "x[...]", "x[None, 1:]", "x[None, :-1]", "x[::2]", "x[0:2]", "x[2:4]", "x[None, ...]"],
    "2": ["x", "x[0]", "x[1]", "x[0:1]", "x[:, 0]", "x[None]", "x[None, 0]", "x[0, None]",
          "x[:, None]", "x[0:1, 0:2]", "x[None, 0:2]", "x[..., 0:1]", "x[0:1, None]", "x[1, 1:]",
          "x[0, :-1]", "x[:, 1:]", "x[:, :-1]", "x[None, 1]"],
    "3": ["x", "x[0]", "x[1]", "x[0, 1:, :]", "x[:-1, 1, ...]", "x[:, 0]", "x[None, 0]",
          "x[0, 0]", "x[1, 1]", "x[..., 0:1]", "x[0:1]", "x[None]"],
}
FORMS = ["{a} = {b}", "{a} += {b}", "{a}.copy_({b})", "{a}.add_({b})"]


def statements():
    out = []
    for k, make in TENSORS.items():
        for a in VIEWS[k]:
            for b in VIEWS[k]:
                for form in FORMS:
                    if a == "x" and form == "{a} = {b}":
                        continue  # a rebinding, not a write
                    out.append((make, form.format(a=a, b=b)))
    return out


LETTER = {"ok": "o", "overlap": "x", "refused": "r"}


def main():
    import torch  # noqa: F401 (the statements use it)
    verdicts = []
    for make, stmt in statements():
        x = eval(make)  # noqa: F841 (the statement reads it)
        try:
            exec(stmt)
            verdict = "ok"
        except Exception as e:  # torch's RuntimeError or IndexError
            verdict = "overlap" if "single memory location" in str(e) else "refused"
        verdicts.append(LETTER[verdict])
    # one letter a statement, in statements()'s order: o accepted, x refused
    # for overlapping memory, r refused otherwise
    text = json.dumps({"torch": torch.__version__, "verdicts": "".join(verdicts)}) + "\n"
    torch_out.write(text)


if __name__ == "__main__":
    main()
