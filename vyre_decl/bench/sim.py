"""CPU cases of the simulated CUDA device (``vyre_decl.sim``, docs/simulator.md): the PTX
interpreter's throughput in lane-instructions per second on emitted kernels, and the wall time of
a simulated conformance run (``python -m vyre_decl.conform --backend cuda`` under
``VYRE_DECL_CUDA_SIM=h100``) on a small fixed subset.

Every figure checks what it measured: the interpreter's outputs after the timed runs equal the
reference backend's bit for bit, with no sanitizer finding; the conformance run passes every unit
it selected, on the simulated H100.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..ir import parse_program
from ..ir.nodes import Program
from .core import Row, median_seconds
from .kernels import add_program

__all__ = ["interpreter_rows", "conformance_rows", "REDUCE", "CONFORM_SUBSETS"]

_BASE = 0x7F00_0000_0000  # where the simulated device's memory starts (vyre_decl.sim.driver_state)

# a workgroup tree reduction: shared memory, a barrier after every step, lanes dropping out
REDUCE = """program tree_reduce workgroup(256, 1, 1) {
  buffer a: read u32[] @0
  buffer partial: write u32[len(a)] @1
  buffer s: workgroup u32[256]
  let l = lid.x
  s[l] = a[gid.x]
  barrier
  loop step in 0u32 .. 8u32 {
    let half = 128u32 >> step
    if l < half { s[l] = s[l] + s[l + half] }
    barrier
  }
  if l == 0u32 { partial[wgid.x] = s[0u32] }
}"""

# (ops, corpus programs (None: all), routines) of the simulated conformance run, quick and full
CONFORM_SUBSETS: dict[bool, tuple[tuple[str, ...], tuple[str, ...] | None, tuple[str, ...]]] = {
    True: (("primitive.bitwise.popcount",), ("01_vadd_u32", "17_workgroup_reduce"), ()),
    False: (("primitive.math.add", "primitive.math.div", "primitive.bitwise.popcount", "primitive.convert.cast"),
            None, ("reduce.sum",)),
}


@dataclass
class _Launch:
    """One emitted kernel ready to run on the interpreter: its parameters point at the inputs and
    outputs in a simulated device memory, as the CUDA backend lays them out (emit/abi.py)."""

    kernel: Any  # vyre_decl.sim.ptx.Kernel
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    params: bytes
    memory: Any  # vyre_decl.sim.memory.DeviceMemory
    outputs: list[tuple[Any, int, np.ndarray]]  # (declaration, device address, host array of its size)

    def run(self, sanitize: bool, stats: dict[str, Any] | None = None) -> list[Any]:
        """Zero the outputs (a dispatch's outputs start zero-filled), run; the sanitizer's findings."""
        for _, address, host in self.outputs:
            if host.nbytes:
                self.memory.fill(address, 0, host.nbytes)
        return list(self.kernel.run(self.grid, self.block, self.params, self.memory, sanitize, stats=stats))

    def results(self) -> list[np.ndarray]:
        from ..backends.hostio import host_output

        return [host_output(decl, np.frombuffer(self.memory.read(address, host.nbytes) if host.nbytes else b"",
                                                dtype=host.dtype).copy()) for decl, address, host in self.outputs]


def _launch(program: Program, inputs: list[np.ndarray], vector: bool) -> _Launch:
    """The program's emitted sm_90 module loaded into the interpreter, its buffers in a fresh
    simulated memory; ``vector``: the vectorised (.v4) entry with its quarter-size grid."""
    from ..backends.config import DispatchConfig
    from ..backends.hostio import CallPlan, prepare
    from ..emit import emit
    from ..emit.abi import VECTOR_LANES
    from ..sim.memory import DeviceMemory
    from ..sim.ptx import load_module

    ptx = emit(program, None, "sm_90")
    name = ptx.vector_entry if vector else ptx.entry
    assert name is not None, f"{program.name} has no vectorised entry"
    kernel = load_module(ptx.text, 90).kernels[name]
    call = prepare(program, inputs, DispatchConfig())
    memory = DeviceMemory(_BASE)
    address: dict[str, int] = {}
    for p in ptx.abi.params:
        if p.kind == "ptr":
            host = call.memory[p.buffer]
            address[p.buffer] = memory.allocate(max(host.nbytes, 16))
            if host.nbytes:
                memory.write(address[p.buffer], host.tobytes())
    params = bytearray(kernel.param_bytes)
    for slot, p in zip(kernel.params, ptx.abi.params):
        value = address[p.buffer] if p.kind == "ptr" else call.counts[p.buffer]
        struct.pack_into("<Q" if slot.nbytes == 8 else "<I", params, slot.offset, value)
    grid = CallPlan(program).grid(call.counts, lanes=VECTOR_LANES) if vector else call.grid
    outputs = [(d, address[d.name], call.memory[d.name]) for d in program.outputs]
    return _Launch(kernel, grid, program.workgroup_size, bytes(params), memory, outputs)


def _check(launch: _Launch, findings: list[Any], want: list[np.ndarray], what: str) -> None:
    """The interpreter's outputs equal the reference backend's bit for bit; nothing found."""
    assert not findings, f"{what}: the sanitizer reported {[str(f) for f in findings]}"
    for got, expected in zip(launch.results(), want):
        assert np.array_equal(got, expected), f"{what}: the interpreter's result differs from the reference backend's"


def _throughput(what: str, program: Program, inputs: list[np.ndarray], vector: bool, repeats: int) -> Row:
    """Lane-instructions per second of one emitted kernel: sanitizer on (as the simulated driver
    runs kernels) against sanitizer off, median of ``repeats`` after a warm-up, results checked."""
    from ..backends.reference import ReferenceBackend

    want = ReferenceBackend().compile(program).dispatch(inputs)
    launch = _launch(program, inputs, vector)
    stats: dict[str, Any] = {}
    _check(launch, launch.run(True, stats), want, what)  # the warm-up, checked
    steps = int(stats["lane_instructions"])
    timed: dict[bool, float] = {}
    for sanitize in (True, False):
        found: list[Any] = []
        counts: list[int] = []

        def once() -> None:
            got: dict[str, Any] = {}
            found.extend(launch.run(sanitize, got))
            counts.append(int(got["lane_instructions"]))

        timed[sanitize] = median_seconds(once, repeats, warmup=0)
        _check(launch, found, want, f"{what} (sanitizer {'on' if sanitize else 'off'})")
        assert set(counts) == {steps}, f"{what}: the lane-instruction count changed between runs: {set(counts)}"
    on, off = steps / timed[True], steps / timed[False]
    return Row(f"sim: PTX interpreter, {what} (M lane-instr/s)", on / 1e6, "sanitizer off", off / 1e6, "M/s",
               "higher", note=f"{steps:,} lane-instructions a run, {timed[True] * 1e3:.1f} ms with the sanitizer; "
                              f"median of {repeats}; output = reference backend's",
               extra={"lane_instructions": steps, "seconds": timed[True], "seconds_unsanitized": timed[False]})


def interpreter_rows(quick: bool, repeats: int) -> list[Row]:
    """The interpreter on an emitted map (scalar and .v4 entries), a workgroup tree reduction
    (shared memory, barriers) and the corpus' Collatz loop (data-dependent trip counts, divergence)."""
    from ..conform.corpus import corpus_dir

    log_map, log_reduce, log_loop = (14, 12, 12) if quick else (18, 16, 14)
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 2**32, 1 << log_map, dtype=np.uint32) for _ in range(2))
    add = add_program("u32")
    collatz = parse_program((corpus_dir() / "37_collatz.vyre").read_text())
    return [
        _throughput(f"map add u32 2^{log_map}, scalar entry", add, [a, b], False, repeats),
        _throughput(f"map add u32 2^{log_map}, .v4 entry", add, [a, b], True, repeats),
        _throughput(f"workgroup tree reduce u32 2^{log_reduce}", parse_program(REDUCE),
                    [rng.integers(0, 2**32, 1 << log_reduce, dtype=np.uint32)], False, repeats),
        _throughput(f"Collatz loop (corpus 37) u32 2^{log_loop}", collatz,
                    [rng.integers(0, 2**32, 1 << log_loop, dtype=np.uint32)], False, repeats),
    ]


def _conform_command(quick: bool, work: Path) -> list[str]:
    from ..conform.corpus import corpus_dir

    ops, programs, routines = CONFORM_SUBSETS[quick]
    cmd = [sys.executable, "-m", "vyre_decl.conform", "--backend", "cuda", "--cases", "100", "--quiet",
           "--out", str(work / "cert.json")]
    for op in ops:
        cmd += ["--ops", op]
    corpus = corpus_dir()
    if programs is not None:
        corpus = work / "corpus"
        corpus.mkdir()
        for name in programs:
            shutil.copy(corpus_dir() / f"{name}.vyre", corpus)
    cmd += ["--programs", str(corpus)]
    for rid in routines:
        cmd += ["--routines", rid]
    return cmd + ([] if routines else ["--no-routines"])


def conformance_rows(quick: bool) -> list[Row]:
    """``python -m vyre_decl.conform --backend cuda`` in a fresh process on a simulated H100, over
    ``CONFORM_SUBSETS[quick]``: its wall time (process start included); it must pass everything."""
    from ..sim.profiles import PROFILES

    env = dict(os.environ, VYRE_DECL_CUDA_SIM="h100",
               PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory(prefix="vyre-bench-sim-") as tmp:
        cmd = _conform_command(quick, Path(tmp))
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
        wall = time.perf_counter() - start
        if proc.returncode:
            raise AssertionError(f"the simulated conformance run failed (exit {proc.returncode}):\n"
                                 f"{(proc.stdout + proc.stderr)[-3000:]}")
        cert = json.loads((Path(tmp) / "cert.json").read_text())
        programs = len(list((Path(cmd[cmd.index("--programs") + 1])).glob("*.vyre")))
    s = cert["summary"]
    ran_on = cert["backend"]["device"]
    simulated = ran_on == f"{PROFILES['h100'].name} (simulated)" and not cert["self_consistency"]
    assert simulated, f"ran on {ran_on!r}, not the simulator"
    assert s["op_types"] == s["op_types_passed"] > 0 and s["programs"] == s["programs_passed"] == programs, s
    assert s["routines"] == s["routines_passed"] and s["failed_cases"] == 0 and s["laws_failed"] == 0, s
    subset = "quick subset" if quick else "fixed subset"
    return [Row(f"sim: conform --backend cuda on a simulated H100, {subset} (s)", wall, "", None, "s", "lower",
                note=f"{s['op_types']} op x types, {s['programs']} programs, {s['routines']} routine x types, "
                     f"{s['cases']:,} cases, all passed; certificate's own time {cert['elapsed_s']:.1f} s",
                extra={"summary": s, "elapsed_s": cert["elapsed_s"], "command": cmd[1:]})]
