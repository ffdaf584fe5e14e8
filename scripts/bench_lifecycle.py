"""Create -> dispatch -> close cycles of the CUDA backend: device memory and host RSS before and
after (a benchmark, not a test).

    python scripts/bench_lifecycle.py [--cycles 1000]

Each cycle makes a CudaBackend, uploads a 4 MB buffer, runs one numpy dispatch and closes the
backend. Free device memory comes from cuMemGetInfo (a long-lived backend keeps a context
current); RSS is the process's current resident set (/proc/self/statm).
"""

from __future__ import annotations

import argparse
import os
import time
from ctypes import byref, c_size_t

import numpy as np

import vyre_decl
from vyre_decl import libcuda as cu
from vyre_decl.backends.cuda import CudaBackend
from vyre_decl.bench.kernels import TWO as VADD  # the two-input map the launch benchmark runs


def free_device_mb() -> float:
    vyre_decl.acquire("cuda").synchronize()
    free, total = c_size_t(), c_size_t()
    cu.call("cuMemGetInfo_v2", byref(free), byref(total))
    return free.value / 2**20


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=1000)
    args = ap.parse_args()
    x = np.arange(1000, dtype=np.uint32)
    big = np.zeros(1 << 20, np.uint32)

    def cycle() -> None:
        with CudaBackend() as be:
            be.upload(big)
            be.dispatch(VADD, [x, x])

    for _ in range(10):
        cycle()
    d0, r0, t0 = free_device_mb(), rss_mb(), time.perf_counter()
    marks = []
    for i in range(1, args.cycles + 1):
        cycle()
        if i % (args.cycles // 4 or 1) == 0:
            marks.append((i, free_device_mb(), rss_mb()))
    dt = time.perf_counter() - t0
    print(f"device: {vyre_decl.acquire('cuda').device.name}; {args.cycles} cycles in {dt:.1f} s "
          f"({dt / args.cycles * 1e3:.2f} ms each)")
    print(f"{'cycles':>7s} {'free device MB':>15s} {'RSS MB':>8s}")
    print(f"{0:7d} {d0:15.1f} {r0:8.1f}")
    for i, d, r in marks:
        print(f"{i:7d} {d:15.1f} {r:8.1f}")
    print(f"change: device {marks[-1][1] - d0:+.1f} MB, RSS {marks[-1][2] - r0:+.1f} MB")


if __name__ == "__main__":
    main()
