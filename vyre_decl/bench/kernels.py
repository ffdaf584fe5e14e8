"""The programs the suite measures, and the hand-written PTX baseline they are held against."""

from __future__ import annotations

from ..ir import parse_program
from ..ir.nodes import Program

__all__ = ["add_program", "map_program", "chain_program", "CHAIN_STEPS", "v4_add_ptx", "TWO"]


def add_program(dtype: str) -> Program:
    """out[i] = a[i] + b[i]: the elementwise map every bandwidth row runs."""
    return parse_program(f"""program add_{dtype} workgroup(256, 1, 1) {{
  buffer a: read {dtype}[] @0
  buffer b: read {dtype}[] @1
  buffer out: write {dtype}[len(a)] @2
  let i = gid.x
  if i < len(out) {{ out[i] = a[i] + b[i] }}
}}""")


TWO = add_program("u32")


def map_program(op: str, dtype: str) -> Program:
    """out[i] = op(a[i]): one function over a buffer."""
    return parse_program(f"""program map workgroup(256, 1, 1) {{
  buffer a: read {dtype}[] @0
  buffer out: write {dtype}[len(a)] @1
  let i = gid.x
  if i < len(out) {{ out[i] = {op}(a[i]) }}
}}""")

# eight dependent f32 steps on one element, as torch would run them one kernel each (eager)
CHAIN_STEPS = ("x * 1.5", "x + 0.25", "x * x", "x - 3.0", "abs(x)", "sqrt(x)", "x * 0.5", "x + 1.0")


def chain_program() -> Program:
    """The fused chain of ``CHAIN_STEPS``, in one kernel."""
    return parse_program("""program chain workgroup(256, 1, 1) {
  buffer a: read f32[] @0
  buffer out: write f32[len(a)] @1
  let i = gid.x
  if i < len(out) {
    let x = a[i] * 1.5f32
    x = x + 0.25f32
    x = x * x
    x = x - 3.0f32
    x = primitive.math.abs(x)
    x = primitive.math.sqrt(x)
    x = x * 0.5f32
    out[i] = x + 1.0f32
  }
}""")


def v4_add_ptx(sm: int, isa: str, ptx_type: str) -> str:
    """A hand-written add kernel: each thread loads a 128-bit vector (four 32-bit elements) of
    each input with ``ld.global.nc.v4``, adds and stores a v4; ``n4`` vectors in all (the caller
    sizes buffers to whole vectors). The roof the emitted kernels are measured against."""
    add = "add.rn.f32" if ptx_type == "f32" else "add.u32"
    lanes = "\n".join(f"  {add} %r{8 + k}, %r{k}, %r{4 + k};" for k in range(4))
    return f""".version {isa}
.target sm_{sm}
.address_size 64
.visible .entry v4add(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 n4)
{{
  .reg .pred %p;
  .reg .b32 %r<16>;
  .reg .b64 %a<8>;
  ld.param.u64 %a0, [pa];
  ld.param.u64 %a1, [pb];
  ld.param.u64 %a2, [pc];
  ld.param.u32 %r12, [n4];
  mov.u32 %r13, %ctaid.x;
  mov.u32 %r14, %ntid.x;
  mov.u32 %r15, %tid.x;
  mad.lo.u32 %r13, %r13, %r14, %r15;
  setp.ge.u32 %p, %r13, %r12;
  @%p bra DONE;
  mul.wide.u32 %a3, %r13, 16;
  add.u64 %a4, %a0, %a3;
  add.u64 %a5, %a1, %a3;
  add.u64 %a6, %a2, %a3;
  ld.global.nc.v4.b32 {{%r0, %r1, %r2, %r3}}, [%a4];
  ld.global.nc.v4.b32 {{%r4, %r5, %r6, %r7}}, [%a5];
{lanes}
  st.global.v4.b32 [%a6], {{%r8, %r9, %r10, %r11}};
DONE:
  ret;
}}
"""
