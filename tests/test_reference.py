"""The reference interpreter: control flow, scopes, workgroup memory, atomics, ids, memory formats."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_decl.backends.config import DispatchConfig
from vyre_decl.ir import VyreError, parse_program


def test_divergent_if_else_and_early_return(run):
    src = """program m workgroup(16, 1, 1) {
      buffer a: read i32[] @0
      buffer o: write i32[len(a)] @1
      let i = gid.x
      if i >= len(a) { return }
      let v = a[i]
      if v < 0i32 {
        o[i] = -v
        return
      } else {
        if v == 0i32 { o[i] = 100i32 } else { o[i] = v * 2i32 }
      }
      o[i] = o[i] + 1000i32
    }"""
    a = np.array([-3, 0, 4, -7, 5], np.int32)
    (o,) = run(src, a)
    assert o.tolist() == [3, 1100, 1008, 7, 1010]


def test_loops_with_per_invocation_bounds_and_return_inside(run):
    src = """program m workgroup(8, 1, 1) {
      buffer n: read u32[] @0
      buffer o: write u32[len(n)] @1
      let i = gid.x
      let acc = 0u32
      loop k in 0u32 .. n[i] {
        if k == 5u32 { o[i] = acc + 1000u32
          return }
        acc = acc + k
        loop j in k .. k + 2u32 { acc = acc + 1u32 }
      }
      o[i] = acc
    }"""
    n = np.array([0, 1, 3, 6, 2], np.uint32)
    (o,) = run(src, n)
    # k in 0..n: acc += k + 2 ; invocation with n=6 returns at k=5 with acc = sum(k+2 for k<5) = 20
    assert o.tolist() == [0, 2, 9, 1020, 5]


def test_loop_bounds_evaluated_once_and_signed_ranges(run):
    src = """program m workgroup(1, 1, 1) {
      buffer o: write i32[1] @0
      let hi = 3i32
      let acc = 0i32
      loop k in -2i32 .. hi {
        hi = 100i32
        acc = acc + k
      }
      loop k in 5i32 .. 1i32 { acc = 999i32 }
      o[0u32] = acc
    }"""
    (o,) = run(src)
    assert o.tolist() == [-2 - 1 + 0 + 1 + 2]


def test_workgroup_reduction_with_barriers(run):
    src = """program wgsum workgroup(64, 1, 1) {
      buffer a: read u32[] @0
      buffer sums: write u32[4] @1
      buffer s: workgroup u32[64]
      let l = lid.x
      s[l] = a[gid.x]
      barrier
      loop step in 0u32 .. 6u32 {
        let half = 32u32 >> step
        if l < half { s[l] = s[l] + s[l + half] }
        barrier
      }
      if l == 0u32 { sums[wgid.x] = s[0u32] }
    }"""
    a = np.arange(200, dtype=np.uint32)
    (sums,) = run(src, a, grid=(4, 1, 1))
    padded = np.concatenate([a, np.zeros(56, np.uint32)])
    assert sums.tolist() == [int(padded[64 * w: 64 * w + 64].sum()) for w in range(4)]


def test_workgroup_memory_is_per_workgroup_and_zeroed(run):
    src = """program m workgroup(4, 1, 1) {
      buffer o: write u32[8] @0
      buffer s: workgroup u32[4]
      let before = s[lid.x]
      barrier
      s[lid.x] = wgid.x + 10u32
      barrier
      o[gid.x] = s[(lid.x + 1u32) % 4u32] + before
    }"""
    (o,) = run(src, grid=(2, 1, 1))
    assert o.tolist() == [10, 10, 10, 10, 11, 11, 11, 11]


def test_atomics_apply_in_invocation_order(run):
    src = """program m workgroup(64, 1, 1) {
      buffer keys: read u32[] @0
      buffer hist: read_write u32[8] @1
      buffer seen: write u32[len(keys)] @2
      let i = gid.x
      if i < len(keys) { seen[i] = atomic primitive.atomic.add(hist[keys[i]], 1u32) }
    }"""
    keys = np.array([3, 1, 3, 3, 0, 1, 7, 3], np.uint32)
    hist, seen = run(src, keys, np.zeros(8, np.uint32))
    assert hist.tolist() == [1, 2, 0, 4, 0, 0, 0, 1]
    assert seen.tolist() == [0, 0, 1, 2, 0, 1, 0, 3]  # each key's counter counts up in invocation order


@pytest.mark.parametrize("op, expect_mem", [("min", 2), ("max", 9), ("exchange", 4), ("or", 15), ("xor", 12)])
def test_every_atomic_op_sequential(run, op, expect_mem):
    src = f"""program m workgroup(8, 1, 1) {{
      buffer v: read u32[] @0
      buffer m: read_write u32[1] @1
      buffer olds: write u32[len(v)] @2
      let i = gid.x
      if i < len(v) {{ olds[i] = atomic primitive.atomic.{op}(m[0u32], v[i]) }}
    }}"""
    v = np.array([9, 2, 6, 4], np.uint32)
    m, olds = run(src, v, np.array([5], np.uint32))
    assert m.tolist() == [expect_mem]
    fn = {"min": min, "max": max, "exchange": lambda a, b: b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}[op]
    cur, want = 5, []
    for x in v.tolist():
        want.append(cur)
        cur = fn(cur, x)
    assert olds.tolist() == want


def test_compare_exchange_and_and(run):
    src = """program m workgroup(8, 1, 1) {
      buffer m: read_write i64[2] @0
      buffer olds: write i64[8] @1
      let i = gid.x
      olds[i] = atomic primitive.atomic.compare_exchange(m[0u32], i as i64, (i as i64) + 1i64)
      let t = atomic primitive.atomic.and(m[1u32], -2i64)
    }"""
    m, olds = run(src, np.array([0, -1], np.int64), grid=(1, 1, 1))
    # invocation k sees k (set by k-1) and bumps it: a chain through all 8
    assert olds.tolist() == list(range(8)) and m.tolist() == [8, -2]


def test_shared_memory_atomics_histogram(run):
    src = """program m workgroup(32, 1, 1) {
      buffer keys: read u32[] @0
      buffer out: read_write u32[4] @1
      buffer local: workgroup u32[4]
      let i = gid.x
      if i < len(keys) { let o = atomic primitive.atomic.add(local[keys[i] % 4u32], 1u32) }
      barrier
      if lid.x < 4u32 { let o2 = atomic primitive.atomic.add(out[lid.x], local[lid.x]) }
    }"""
    keys = np.arange(100, dtype=np.uint32) * 3
    out, = run(src, keys, np.zeros(4, np.uint32))
    assert out.tolist() == np.bincount(keys % 4, minlength=4).tolist()


def test_2d_and_3d_ids_with_explicit_grid(run):
    src = """program m workgroup(4, 2, 2) {
      buffer o: write u32[512] @0
      let x = gid.x
      let y = gid.y
      let z = gid.z
      let flat = (z * 8u32 + y) * 8u32 + x
      o[flat] = wgid.x * 1000000u32 + wgid.y * 10000u32 + wgid.z * 100u32 + lid.x * 10u32 + lid.y + lid.z * 5u32
    }"""
    (o,) = run(src, grid=(2, 4, 4))
    o = o.reshape(8, 8, 8)  # z, y, x
    for z, y, x in [(0, 0, 0), (7, 7, 7), (3, 5, 6), (1, 2, 3)]:
        want = (x // 4) * 1000000 + (y // 2) * 10000 + (z // 2) * 100 + (x % 4) * 10 + (y % 2) + (z % 2) * 5
        assert o[z, y, x] == want


def test_narrow_storage_types_widen_on_load_and_narrow_on_store(run):
    src = """program m workgroup(8, 1, 1) {
      buffer a: read u8[] @0
      buffer b: read i8[] @1
      buffer h: read f16[] @2
      buffer g: read bf16[] @3
      buffer oa: write u8[len(a)] @4
      buffer ob: write i16[len(a)] @5
      buffer oh: write f16[len(a)] @6
      buffer og: write bf16[len(a)] @7
      buffer wide: write i32[len(a)] @8
      let i = gid.x
      if i < len(a) {
        oa[i] = a[i] + 10u32
        ob[i] = b[i] * 300i32
        oh[i] = h[i] * 3.0f32
        og[i] = g[i] + 1.0f32
        wide[i] = b[i]
      }
    }"""
    a = np.array([250, 1, 255], np.uint8)
    b = np.array([-128, 1, 127], np.int8)
    h = np.array([65504, 1e-7, 0.1], np.float16)
    g = (np.array([1.0, 255.0, np.nan], np.float32).view(np.uint32) >> 16).astype(np.uint16)
    oa, ob, oh, og, wide = run(src, a, b, h, g)
    assert oa.tolist() == [4, 11, 9]  # u8 wraps
    assert ob.tolist() == [(-128 * 300 + 32768) % 65536 - 32768, 300, 127 * 300 - 65536]  # i16 wraps
    assert np.isinf(oh[0]) and oh[2] == np.float16(np.float32(np.float16(0.1)) * 3)
    assert (og[:2].astype(np.uint32) << 16).view(np.float32).tolist() == [2.0, 256.0]
    assert og[2] & 0x7F80 == 0x7F80 and og[2] & 0x7F  # NaN stays NaN
    assert wide.tolist() == [-128, 1, 127]  # i8 loads sign-extend


def test_region_shares_scope_and_select_is_eager(run):
    src = """program m workgroup(4, 1, 1) {
      buffer o: write u32[4] @0
      buffer a: read u32[2] @1
      region "gen" { let x = gid.x * 2u32 }
      o[gid.x] = select(gid.x < 2u32, a[gid.x], x + a[gid.x])
    }"""
    (o,) = run(src, np.array([7, 8], np.uint32))
    assert o.tolist() == [7, 8, 4, 6]  # out-of-range loads in the unused arm are harmless (0)


def test_repeat_runs_fixpoint_iterations(run):
    src = """program m workgroup(4, 1, 1) {
      buffer v: read_write u32[4] @0
      v[gid.x] = v[gid.x] * 2u32 + 1u32
    }"""
    (v,) = run(src, np.zeros(4, np.uint32), repeat=5)
    assert v.tolist() == [31] * 4


def test_large_dispatch_spans_several_chunks(run):
    src = """program m workgroup(256, 1, 1) {
      buffer a: read u32[] @0
      buffer o: write u32[len(a)] @1
      buffer total: read_write u64[1] @2
      let i = gid.x
      if i < len(a) {
        o[i] = a[i] ^ 0xFFu32
        let t = atomic primitive.atomic.add(total[0u32], a[i] as u64)
      }
    }"""
    a = np.arange(3_000_000, dtype=np.uint32)
    o, total = run(src, a, np.zeros(1, np.uint64))
    assert (o == (a ^ 0xFF)).all() and int(total[0]) == int(a.astype(np.uint64).sum())


def test_timeout_stops_a_runaway_loop(backend):
    src = """program m workgroup(1, 1, 1) {
      buffer o: write u32[1] @0
      loop k in 0u32 .. 4294967295u32 { o[0u32] = k }
    }"""
    with pytest.raises(VyreError, match="Fix:") as info:
        backend.dispatch(parse_program(src), [], DispatchConfig(timeout=0.2))
    assert info.value.codes == ["D013"]
    # a grid of 2^31 - 1 workgroups (the most a grid has: D009 beyond) stops between chunks of workgroups
    import time

    wide = parse_program("program w workgroup(64, 1, 1) {\n buffer o: write u32[4] @0\n"
                         " if gid.x == 0u32 { o[0u32] = 1u32 }\n}")
    t0 = time.monotonic()
    with pytest.raises(VyreError) as info:
        backend.dispatch(wide, [], DispatchConfig(grid=(2**31 - 1, 1, 1), timeout=0.3))
    assert info.value.codes == ["D013"] and time.monotonic() - t0 < 3
    # 64 nested loops (2^64 iterations: legal, and a runaway) validate at once and stop at the deadline
    nested = parse_program("program n workgroup(1, 1, 1) {\n buffer o: write u32[4] @0\n"
                           + "".join(f"loop v{j} in 0u32 .. 2u32 {{\n" for j in range(64)) + "o[0u32] = 1u32\n"
                           + "}\n" * 64 + "}")
    with pytest.raises(VyreError) as info:
        backend.dispatch(nested, [], DispatchConfig(timeout=0.3))
    assert info.value.codes == ["D013"]


def test_atomic_operands_run_even_when_the_atomic_is_out_of_bounds(run):
    src = """program m workgroup(4, 1, 1) {
      buffer c: read_write u32[2] @0
      buffer d: read_write u32[1] @1
      let old = atomic primitive.atomic.add(c[5u32], atomic primitive.atomic.add(d[0u32], 1u32))
    }"""
    c, d = run(src, np.zeros(2, np.uint32), np.zeros(1, np.uint32), grid=(1, 1, 1))
    assert c.tolist() == [0, 0] and d.tolist() == [4]


def test_contended_compare_exchange_is_linear_enough(run):
    src = """program m workgroup(64, 1, 1) {
      buffer m: read_write u32[1] @0
      buffer o: write u32[32768] @1
      o[gid.x] = atomic primitive.atomic.compare_exchange(m[0u32], gid.x, gid.x + 1u32)
    }"""
    m, o = run(src, np.zeros(1, np.uint32))
    assert m.tolist() == [32768] and (o == np.arange(32768)).all()  # a chain through every invocation


def test_op_function_cache_follows_the_registry(tmp_path):
    import gc

    from vyre_decl.reference.interpreter import op_function
    from vyre_decl.registry import load

    results = set()
    for i in range(30):
        (tmp_path / "e.toml").write_text(
            '[dialect]\nname = "ext"\nversion = "1.0.0"\n[[op]]\nid = "ext.f"\nsummary = "s"\n'
            f'signature = "(a: u32, b: u32) -> u32"\ncompose = "{"a + b" if i % 2 else "a - b"}"\n')
        reg = load([tmp_path], standard=True, env=False)
        got = int(op_function(reg, reg.get("ext.f"), ())([np.uint32(10), np.uint32(3)]))
        results.add((i % 2, got))
        del reg
        gc.collect()
    assert results == {(0, 7), (1, 13)}
