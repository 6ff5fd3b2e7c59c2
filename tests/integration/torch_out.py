"""Where the torch_*.py generators write what torch printed: to the file
after --out, else to standard output."""
import sys


def write(text):
    if len(sys.argv) == 3 and sys.argv[1] == "--out":
        with open(sys.argv[2], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
