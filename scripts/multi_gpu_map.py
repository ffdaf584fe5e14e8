"""Split one large map over every GPU of this host: one backend per device, each device's share
uploaded into resident buffers, computed and read back in a thread of its own (driver calls
release the GIL, so the devices work at once). Checks the result against numpy and prints the
time per device count.

    python scripts/multi_gpu_map.py [--n 268435456] [--devices 0,1]
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Sequence

import numpy as np

from vyre_decl import ProgramBuilder
from vyre_decl.backends.cuda import CudaBackend, cuda_device_count


def saxpy_program():  # type: ignore[no-untyped-def]
    b = ProgramBuilder("saxpy", workgroup=(256, 1, 1))
    x, y = b.input("x", "f32"), b.input("y", "f32")
    out = b.output("out", "f32", like=x)
    i = b.let("i", b.gid.x)
    with b.if_(i < out.len):
        out[i] = x[i] * 2.0 + y[i]
    return b.build()


def split_map(x: np.ndarray, y: np.ndarray, backends: Sequence[CudaBackend]) -> np.ndarray:
    """``2x + y`` with the elements cut into one contiguous share per backend (device)."""
    program = saxpy_program()
    bounds = np.linspace(0, x.size, len(backends) + 1).astype(np.int64)
    out = np.empty_like(x)

    def share(gpu: CudaBackend, lo: int, hi: int) -> None:
        if hi == lo:
            return
        xs, ys = gpu.upload(x[lo:hi]), gpu.upload(y[lo:hi])
        result = gpu.allocate("f32", hi - lo)
        gpu.compile(program).dispatch_resident([xs, ys, result])
        out[lo:hi] = gpu.download(result)  # waits for this device only
        for buf in (xs, ys, result):
            gpu.free(buf)

    threads = [threading.Thread(target=share, args=(gpu, int(bounds[k]), int(bounds[k + 1])))
               for k, gpu in enumerate(backends)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 26)
    ap.add_argument("--devices", help="device numbers, e.g. 0,1 (default: all)")
    args = ap.parse_args()
    devices = [int(d) for d in args.devices.split(",")] if args.devices else list(range(cuda_device_count()))
    rng = np.random.default_rng(1)
    x, y = rng.random(args.n, dtype=np.float32), rng.random(args.n, dtype=np.float32)
    expected = x * np.float32(2.0) + y
    backends = [CudaBackend(device=d) for d in devices]
    try:
        for count in sorted({1, len(backends)}):
            split_map(x, y, backends[:count])  # warm-up: JIT, pools
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                got = split_map(x, y, backends[:count])
                times.append(time.perf_counter() - t0)
            assert np.array_equal(got, expected), "the split map differs from numpy"
            print(f"{count} device(s) {[b.device.name for b in backends[:count]]}: "
                  f"median {np.median(times) * 1e3:.1f} ms for {args.n:,} elements (upload, map, download)")
    finally:
        for b in backends:
            b.close()


if __name__ == "__main__":
    main()
