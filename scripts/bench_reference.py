"""Reference-backend throughput on a 1-D map program (not a test; prints figures).

    python scripts/bench_reference.py [--log2n 24] [--repeats 5]

Runs out[i] = a[i] + b[i] over 2^N u32 elements through Pipeline.dispatch (host conversion,
output allocation and the interpreter included) and reports invocations per second, with the
plain numpy `a + b` measured in the same run as the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from vyre_decl.backends.reference import ReferenceBackend
from vyre_decl.ir import parse_program

MAP = """program vadd workgroup(256, 1, 1) {
  buffer a: read u32[] @0
  buffer b: read u32[] @1
  buffer out: write u32[len(a)] @2
  let i = gid.x
  if i < len(out) {
    out[i] = a[i] + b[i]
  }
}"""


def median_time(fn, repeats: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**32, n, dtype=np.uint32)
    b = rng.integers(0, 2**32, n, dtype=np.uint32)
    pipe = ReferenceBackend().compile(parse_program(MAP))
    (out,) = pipe.dispatch([a, b])
    assert (out == a + b).all()
    t_ref = median_time(lambda: pipe.dispatch([a, b]), args.repeats)
    t_np = median_time(lambda: np.add(a, b), args.repeats)
    print(f"n = 2^{args.log2n} = {n} u32 elements, median of {args.repeats}")
    print(f"reference dispatch : {t_ref * 1e3:8.1f} ms  {n / t_ref / 1e6:8.1f} M invocations/s")
    print(f"numpy a + b        : {t_np * 1e3:8.1f} ms  {n / t_np / 1e6:8.1f} M elements/s")
    print(f"reference / numpy  : {t_ref / t_np:8.1f}x the time")


if __name__ == "__main__":
    main()
