"""Helpers of the PTX interpreter's tests (tests/test_sim_ptx*.py): run one instruction over many
lanes, run a hand-written kernel, and compare an emitted program run with the CUDA backend's
calling convention (pointers, then u32 element counts; outputs zero-filled; the inferred grid:
``vyre_decl.ops.simcheck.run_program``, which ``ops check`` uses too) with the reference; and
what ``ptxas -v`` says of a text."""

from __future__ import annotations

import os
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from vyre_decl.emit.ptxas import find_ptxas
from vyre_decl.ops.simcheck import SIM_BASE, run_program
from vyre_decl.sim.memory import DeviceMemory
from vyre_decl.sim.ptx import Finding, load_module

BASE = SIM_BASE
HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"

_NP = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "s8": np.int8, "s16": np.int16,
       "s32": np.int32, "s64": np.int64, "f32": np.float32, "f64": np.float64, "b16": np.uint16, "b32": np.uint32,
       "b64": np.uint64, "f16": np.float16, "pred": np.uint32}


def kernel_text(instr: str, dst: str, srcs: Sequence[str], sm: int = 90, version: str = "8.0") -> str:
    """A kernel: lane i loads %a, %b, %c (types ``srcs``) from the i-th elements of the input
    arrays, runs ``instr`` (writing %d of type ``dst``) and stores %d to the output."""
    names = "abce"[: len(srcs)]
    params = ", ".join([f".param .u64 p{n}" for n in names] + [".param .u64 pd"])
    lines = [f".version {version}", f".target sm_{sm}", ".address_size 64",
             f".visible .entry k({params})", "{", "\t.reg .u64 %ad<16>;", "\t.reg .u32 %t;", "\t.reg .pred %q;"]
    for n, t in list(zip(names, srcs)) + [("d", dst)]:
        lines.append(f"\t.reg .{t if t != 'pred' else 'pred'} %{n};")
        if t == "pred":
            lines.append(f"\t.reg .u32 %w{n};")
    lines.append("\tmov.u32 %t, %tid.x;")
    for k, (n, t) in enumerate(zip(names, srcs)):
        size = 4 if t == "pred" else np.dtype(_NP[t]).itemsize
        lines += [f"\tld.param.u64 %ad{k}, [p{n}];", f"\tmul.wide.u32 %ad{8 + k}, %t, {size};",
                  f"\tadd.u64 %ad{k}, %ad{k}, %ad{8 + k};"]
        if t == "pred":
            lines += [f"\tld.global.u32 %w{n}, [%ad{k}];", f"\tsetp.ne.u32 %{n}, %w{n}, 0;"]
        else:
            lines.append(f"\tld.global.{t} %{n}, [%ad{k}];")
    size = 4 if dst == "pred" else np.dtype(_NP[dst]).itemsize
    lines += [f"\t{instr};", "\tld.param.u64 %ad7, [pd];", f"\tmul.wide.u32 %ad15, %t, {size};",
              "\tadd.u64 %ad7, %ad7, %ad15;"]
    if dst == "pred":
        lines += ["\tselp.u32 %wd, 1, 0, %d;", "\tst.global.u32 [%ad7], %wd;"]
    else:
        lines.append(f"\tst.global.{dst} [%ad7], %d;")
    lines += ["\tret;", "}", ""]
    return "\n".join(lines)


def run_op(instr: str, dst: str, srcs: Sequence[tuple[str, Any]], sm: int = 90) -> tuple[np.ndarray, list[Finding]]:
    """Run ``instr`` (e.g. 'mul.hi.s64 %d, %a, %b') once per element of the source arrays."""
    arrays = [np.ascontiguousarray(np.asarray(v, dtype=_NP[t])) for t, v in srcs]
    n = arrays[0].size if arrays else 1
    assert n <= 1024 and all(a.size == n for a in arrays)
    kernel = load_module(kernel_text(instr, dst, [t for t, _ in srcs], sm), sm).kernels["k"]
    mem = DeviceMemory(BASE)
    ptrs = []
    for a in arrays:
        ptrs.append(mem.allocate(max(a.nbytes, 8)))
        mem.write(ptrs[-1], a.tobytes())
    out_dt = np.dtype(_NP[dst])
    ptrs.append(mem.allocate(n * out_dt.itemsize))
    findings = kernel.run((1, 1, 1), (n, 1, 1), struct.pack(f"<{len(ptrs)}Q", *ptrs), mem)
    return np.frombuffer(mem.read(ptrs[-1], n * out_dt.itemsize), dtype=out_dt).copy(), findings


def launch(text: str, entry: str, grid: tuple[int, int, int], block: tuple[int, int, int],
           buffers: Sequence[np.ndarray], scalars: Sequence[int] = (), sanitize: bool = True,
           sm: int = 90) -> tuple[list[np.ndarray], list[Finding]]:
    """Run a hand-written kernel whose parameters are one u64 pointer per buffer, then one u32 per
    scalar; the buffers as they are after the run."""
    kernel = load_module(text, sm).kernels[entry]
    mem = DeviceMemory(BASE)
    ptrs = []
    for a in buffers:
        ptrs.append(mem.allocate(max(a.nbytes, 8)))
        mem.write(ptrs[-1], np.ascontiguousarray(a).tobytes())
    params = struct.pack(f"<{len(ptrs)}Q{len(scalars)}I", *ptrs, *scalars)
    findings = kernel.run(grid, block, params, mem, sanitize=sanitize)
    out = [np.frombuffer(mem.read(p, a.nbytes), dtype=a.dtype).copy() if a.nbytes else a for p, a in zip(ptrs, buffers)]
    return out, findings


def f32(bits: int) -> float:
    return float(np.array(bits, dtype=np.uint32).view(np.float32))


def bits32(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def bits64(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).view(np.uint64)


def assert_matches(program: Any, inputs: Sequence[Any], expected: Sequence[np.ndarray],
                   grid: tuple[int, int, int] | None = None, **kw: Any) -> None:
    """The simulator's outputs equal ``expected`` (the reference's) bit for bit, all NaNs equal,
    and the sanitizer found nothing."""
    from vyre_decl.conform.programs import program_mismatches
    from vyre_decl.ir.text import print_program

    got, findings = run_program(program, inputs, grid, **kw)
    wrong = program_mismatches(program, list(expected), got)
    shown = {k: v for k, v in kw.items() if k != "ptx"}
    where = f"{program.name} {shown} sizes {[len(a) for a in inputs]}"
    if wrong:
        decl, idx, want, have = wrong[0]
        raise AssertionError(f"{where}: {decl.name}[{idx[:5]}] reference {want[idx[:3]]} simulator {have[idx[:3]]}\n"
                             f"{print_program(program)}")
    assert not findings, f"{where}: {[str(f) for f in findings]}"


def ptxas_verbose(text: str, arch: str = "sm_90") -> str:
    """What ``ptxas -v`` says of ``text`` for ``arch`` (registers, stack frame, spills); the
    assembly must succeed."""
    exe = find_ptxas()
    assert exe is not None
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(text)
        proc = subprocess.run([exe, "-v", f"-arch={arch}", str(src), "-o", os.path.join(tmp, "k.cubin")],
                              capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr
