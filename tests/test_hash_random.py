"""Published known-answer vectors of whole hashes and generators, computed by programs built from the
hash and random step ops — on the reference backend here, and on CUDA where a GPU is present
(the same vectors; marked gpu). Sources are cited in ops/hash.toml and ops/random.toml."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_decl.backends.cuda import cuda_available
from vyre_decl.ir import parse_program

BACKENDS = ["reference", pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")])]


@pytest.fixture(params=BACKENDS)
def backend(request):
    import vyre_decl

    return vyre_decl.acquire(request.param)


def _bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, np.uint8).astype(np.uint32) if data else np.zeros(0, np.uint32)


FNV = parse_program("""program fnv workgroup(1, 1, 1) {
  buffer data: read u32[] @0
  buffer h32: write u32[1] @1
  buffer h64: write u64[1] @2
  let a = 2166136261u32
  let b = 14695981039346656037u64
  loop i in 0u32 .. len(data) {
    a = hash.fnv1a32_step(a, data[i])
    b = hash.fnv1a64_step(b, data[i])
  }
  h32[0u32] = a
  h64[0u32] = b
}""")


@pytest.mark.parametrize("text, want32, want64", [  # lcn2/fnv test_fnv.c
    (b"", 0x811C9DC5, 0xCBF29CE484222325), (b"a", 0xE40C292C, 0xAF63DC4C8601EC8C),
    (b"foobar", 0xBF9CF968, 0x85944171F73967E8), (b"\0", 0x050C5D1F, 0xAF63BD4C8601B7DF),
])
def test_fnv1a(backend, text, want32, want64):
    h32, h64 = backend.dispatch(FNV, [_bytes(text)])
    assert (int(h32[0]), int(h64[0])) == (want32, want64)


CRC = parse_program("""program crc workgroup(1, 1, 1) {
  buffer data: read u32[] @0
  buffer out: write u32[4] @1
  let c = 4294967295u32
  let k = 4294967295u32
  let w = 4294967295u32
  let wk = 4294967295u32
  loop i in 0u32 .. len(data) {
    c = hash.crc32_byte(c, data[i])
    k = hash.crc32c_byte(k, data[i])
  }
  loop j in 0u32 .. len(data) / 4u32 {
    let b = j * 4u32
    let word = data[b] | (data[b + 1u32] << 8u32) | (data[b + 2u32] << 16u32) | (data[b + 3u32] << 24u32)
    w = hash.crc32_word(w, word)
    wk = hash.crc32c_word(wk, word)
  }
  out[0u32] = c ^ 4294967295u32
  out[1u32] = k ^ 4294967295u32
  out[2u32] = w ^ 4294967295u32
  out[3u32] = wk ^ 4294967295u32
}""")


@pytest.mark.parametrize("data, crc32, crc32c", [  # RevEng CRC catalogue: checks and codewords
    (b"123456789", 0xCBF43926, 0xE3069283), (bytes(4), 0x2144DF1C, None),
    (bytes.fromhex("F20183"), 0x24AB9D77, None), (bytes.fromhex("332255AABBCCDDEEFF"), 0xB0AE863D, None),
    (bytes(32), None, 0x8A9136AA), (b"\xff" * 32, None, 0x62A8AB43), (bytes(range(32)), None, 0x46DD794E),
])
def test_crc32_and_crc32c_by_bytes_and_by_words(backend, data, crc32, crc32c):
    (out,) = backend.dispatch(CRC, [_bytes(data)])
    by_words = len(data) % 4 == 0
    if crc32 is not None:
        assert int(out[0]) == crc32 and (not by_words or int(out[2]) == crc32)
    if crc32c is not None:
        assert int(out[1]) == crc32c and (not by_words or int(out[3]) == crc32c)


def _rotl(x: str, r: int, t: str) -> str:
    return f"primitive.bitwise.rotl({x}, {r}{t})"


XXH32 = parse_program(f"""program xxh32 workgroup(1, 1, 1) {{
  buffer data: read u32[] @0
  buffer seed: read u32[] @1
  buffer out: write u32[1] @2
  let n = len(data)
  let s = seed[0u32]
  let h = s + 374761393u32
  let p = 0u32
  if n >= 16u32 {{
    let v1 = s + 2654435761u32 + 2246822519u32
    let v2 = s + 2246822519u32
    let v3 = s
    let v4 = s - 2654435761u32
    loop k in 0u32 .. n / 16u32 {{
      let b = k * 16u32
      v1 = hash.xxh32_round(v1, data[b] | (data[b + 1u32] << 8u32) | (data[b + 2u32] << 16u32) | (data[b + 3u32] << 24u32))
      v2 = hash.xxh32_round(v2, data[b + 4u32] | (data[b + 5u32] << 8u32) | (data[b + 6u32] << 16u32) | (data[b + 7u32] << 24u32))
      v3 = hash.xxh32_round(v3, data[b + 8u32] | (data[b + 9u32] << 8u32) | (data[b + 10u32] << 16u32) | (data[b + 11u32] << 24u32))
      v4 = hash.xxh32_round(v4, data[b + 12u32] | (data[b + 13u32] << 8u32) | (data[b + 14u32] << 16u32) | (data[b + 15u32] << 24u32))
    }}
    h = {_rotl("v1", 1, "u32")} + {_rotl("v2", 7, "u32")} + {_rotl("v3", 12, "u32")} + {_rotl("v4", 18, "u32")}
    p = n / 16u32 * 16u32
  }}
  h = h + n
  loop k in 0u32 .. (n - p) / 4u32 {{
    let b = p + k * 4u32
    let lane = data[b] | (data[b + 1u32] << 8u32) | (data[b + 2u32] << 16u32) | (data[b + 3u32] << 24u32)
    h = {_rotl("h + lane * 3266489917u32", 17, "u32")} * 668265263u32
  }}
  loop k in p + (n - p) / 4u32 * 4u32 .. n {{
    h = {_rotl("h + data[k] * 374761393u32", 11, "u32")} * 2654435761u32
  }}
  out[0u32] = hash.xxh32_avalanche(h)
}}""")

_LANE64 = " | ".join(f"(data[b + {i}u32] as u64 << {8 * i}u64)" for i in range(8)).replace(
    "(data[b + 0u32] as u64 << 0u64)", "(data[b] as u64)")
XXH64 = parse_program(f"""program xxh64 workgroup(1, 1, 1) {{
  buffer data: read u32[] @0
  buffer seed: read u64[] @1
  buffer out: write u64[1] @2
  let n = len(data)
  let s = seed[0u32]
  let h = s + 2870177450012600261u64
  let p = 0u32
  if n >= 32u32 {{
    let v1 = s + 11400714785074694791u64 + 14029467366897019727u64
    let v2 = s + 14029467366897019727u64
    let v3 = s
    let v4 = s - 11400714785074694791u64
    loop k in 0u32 .. n / 32u32 {{
      let b = k * 32u32
      v1 = hash.xxh64_round(v1, {_LANE64})
      b = b + 8u32
      v2 = hash.xxh64_round(v2, {_LANE64})
      b = b + 8u32
      v3 = hash.xxh64_round(v3, {_LANE64})
      b = b + 8u32
      v4 = hash.xxh64_round(v4, {_LANE64})
    }}
    h = {_rotl("v1", 1, "u64")} + {_rotl("v2", 7, "u64")} + {_rotl("v3", 12, "u64")} + {_rotl("v4", 18, "u64")}
    h = hash.xxh64_merge_round(h, v1)
    h = hash.xxh64_merge_round(h, v2)
    h = hash.xxh64_merge_round(h, v3)
    h = hash.xxh64_merge_round(h, v4)
    p = n / 32u32 * 32u32
  }}
  h = h + n as u64
  loop k in 0u32 .. (n - p) / 8u32 {{
    let b = p + k * 8u32
    h = h ^ hash.xxh64_round(0u64, {_LANE64})
    h = {_rotl("h", 27, "u64")} * 11400714785074694791u64 + 9650029242287828579u64
  }}
  p = p + (n - p) / 8u32 * 8u32
  if n - p >= 4u32 {{
    let b = p
    let lane = data[b] | (data[b + 1u32] << 8u32) | (data[b + 2u32] << 16u32) | (data[b + 3u32] << 24u32)
    h = h ^ lane as u64 * 11400714785074694791u64
    h = {_rotl("h", 23, "u64")} * 14029467366897019727u64 + 1609587929392839161u64
    p = p + 4u32
  }}
  loop k in p .. n {{
    h = h ^ data[k] as u64 * 2870177450012600261u64
    h = {_rotl("h", 11, "u64")} * 11400714785074694791u64
  }}
  out[0u32] = hash.xxh64_avalanche(h)
}}""")


def _sanity_buffer(n: int) -> bytes:
    """xxHash cli/xsum_sanity_check.c XSUM_fillTestBuffer."""
    gen, out = 2654435761, bytearray()
    for _ in range(n):
        out.append(gen >> 56)
        gen = (gen * 11400714785074694797) % 2**64
    return bytes(out)


@pytest.mark.parametrize("length, seed, h32, h64", [  # xxHash cli/xsum_sanity_check.c
    (0, 0, 0x02CC5D05, 0xEF46DB3751D8E999), (0, 0x9E3779B1, 0x36B78AE7, 0xAC75FDA2929B17EF),
    (1, 0, 0xCF65B03E, 0xE934A84ADB052768), (1, 0x9E3779B1, 0xB4545AA4, 0x5014607643A9B4C3),
    (14, 0, 0x1208E7E2, 0x8282DCC4994E35C8), (14, 0x9E3779B1, 0x6AF1D1FE, 0xC3BD6BF63DEB6DF0),
    (222, 0, 0x5BD11DBD, 0xB641AE8CB691C174), (222, 0x9E3779B1, 0x58803C5F, 0x20CB8AB7AE10C14A),
])
def test_xxhash32_and_xxhash64(backend, length, seed, h32, h64):
    data = _bytes(_sanity_buffer(length))
    (out32,) = backend.dispatch(XXH32, [data, np.array([seed], np.uint32)])
    (out64,) = backend.dispatch(XXH64, [data, np.array([seed], np.uint64)])
    assert (int(out32[0]), int(out64[0])) == (h32, h64)


SPLITMIX = parse_program("""program splitmix workgroup(64, 1, 1) {
  buffer seed: read u64[1] @0
  buffer count: read u32[] @1
  buffer out: write u64[len(count)] @2
  let i = gid.x
  if i < len(out) { out[i] = hash.splitmix64(seed[0u32] + i as u64 * 11400714819323198485u64) }
}""")
SPLITMIX_VECTORS = {  # Rosetta Code Splitmix64 task; Apache Commons RNG SplitMix64Test.testReferenceCode
    1234567: [0x599ED017FB08FC85, 0x2C73F08458540FA5, 0x883EBCE5A3F27C77, 0x3FBEF740E9177B3F, 0xE3B8346708CB5ECD],
    0x1A2B3C4D5E6F7531: [0x4141302768C9E9D0, 0x64DF48C4EAB51B1A, 0x4E723B53DBD901B3, 0xEAD8394409DD6454,
                         0x3EF60E485B412A0A, 0xB2A23AEE63AECF38, 0x6CC3B8933C4FA332, 0x9C9E75E031E6FCCB],
}


@pytest.mark.parametrize("seed", list(SPLITMIX_VECTORS))
def test_splitmix64_streams(backend, seed):
    want = SPLITMIX_VECTORS[seed]
    (out,) = backend.dispatch(SPLITMIX, [np.array([seed], np.uint64), np.zeros(len(want), np.uint32)])
    assert [int(x) for x in out] == want


PCG = parse_program("""program pcg workgroup(1, 1, 1) {
  buffer out: write u32[6] @0
  let inc = (54u64 << 1u64) | 1u64
  let s = hash.pcg32_advance(0u64, inc)
  s = hash.pcg32_advance(s + 42u64, inc)
  loop k in 0u32 .. 6u32 {
    out[k] = hash.pcg32_output(s)
    s = hash.pcg32_advance(s, inc)
  }
}""")


def test_pcg32_demo_round_one(backend):
    """pcg32_srandom_r(42, 54), then six pcg32_random_r (pcg-c test-high/expected/check-pcg32.out)."""
    (out,) = backend.dispatch(PCG, [])
    assert [int(x) for x in out] == [0xA15C02B7, 0x7B47F409, 0xBA1D3330, 0x83D2F293, 0xBFA4784B, 0xCBED606E]


PHILOX = parse_program("""program philox workgroup(4, 1, 1) {
  buffer v: read u32[] @0
  buffer count: read u32[] @1
  buffer out: write u32[len(count)] @2
  let i = gid.x
  if i < len(out) {
    let b = i / 4u32 * 6u32
    out[i] = random.philox4x32_10(v[b], v[b + 1u32], v[b + 2u32], v[b + 3u32], v[b + 4u32], v[b + 5u32], i % 4u32)
  }
}""")


def test_philox4x32_10_kat_vectors(backend):
    """Random123 tests/kat_vectors, philox4x32 with 10 rounds."""
    vectors = [([0] * 4, [0] * 2, [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
               ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
               ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
                [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1])]
    v = np.array([x for c, k, _ in vectors for x in c + k], np.uint32)
    (out,) = backend.dispatch(PHILOX, [v, np.zeros(12, np.uint32)])
    assert [int(x) for x in out] == [x for _, _, want in vectors for x in want]


NORMAL = parse_program("""program normal workgroup(256, 1, 1) {
  buffer o32: write f32[131072] @0
  buffer o64: write f64[131072] @1
  let i = gid.x
  if i < 131072u32 {
    o32[i] = random.normal_f32(i, 12345u64)
    o64[i] = random.normal_f64(i, 12345u64)
  }
}""")


def test_normal_draws_are_standard_normal_and_the_same_on_every_backend(backend):
    import math

    n = 1 << 17
    o32, o64 = backend.dispatch(NORMAL, [])
    for draws in (o32.astype(np.float64), o64):
        assert abs(draws.mean()) < 0.01 and abs(draws.var() - 1.0) < 0.015
        x = np.sort(draws)
        cdf = 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
        ks = max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))
        assert ks < 1.63 / math.sqrt(n)  # Kolmogorov-Smirnov at the 1 % level
    assert abs(np.corrcoef(o32[:-1], o32[1:])[0, 1]) < 0.01  # neighbouring draws are independent
    if backend.name != "reference":
        import vyre_decl

        ref32, ref64 = vyre_decl.acquire("reference").dispatch(NORMAL, [])
        assert np.array_equal(o32.view(np.uint32), ref32.view(np.uint32))
        assert np.array_equal(o64.view(np.uint64), ref64.view(np.uint64))
