"""`python -m conformance.adjoint [N [SEED]]`: judge N randomized cases (default 50, seed 0), print each
failure shrunk, and the count."""
import sys

from . import run

count, start = (int(v) for v in (sys.argv[1:3] + ["50", "0"][len(sys.argv[1:3]):]))
found = run(count, start, verbose=True)
print(f"{len(found)} failures")
