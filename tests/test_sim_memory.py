"""The simulated device's global memory (vyre_decl/sim/memory.py): allocations with bounds, faults
naming the address, vector gather/scatter in lane order."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_decl.sim.memory import ALIGNMENT, DeviceMemory, MemoryFault

BASE = 0x7F00_0000_0000


def test_allocations_are_aligned_zeroed_and_disjoint():
    mem = DeviceMemory(BASE)
    a, b, c = mem.allocate(10), mem.allocate(1), mem.allocate(1000)
    assert a == BASE and all(x % ALIGNMENT == 0 for x in (a, b, c))
    assert a + 10 < b and b + 1 < c  # never adjacent: an access past the end faults
    assert mem.read(c, 1000) == bytes(1000)
    assert mem.range_of(a + 9) == (a, 10) and mem.range_of(a + 10) is None and mem.range_of(BASE - 1) is None
    with pytest.raises(ValueError):
        mem.allocate(0)


def test_read_write_fill_and_faults():
    mem = DeviceMemory(BASE)
    a = mem.allocate(16)
    mem.write(a + 4, b"\x01\x02\x03")
    mem.fill(a + 8, 0x1FF, 8)  # the low byte of the value
    assert mem.read(a, 16) == bytes(4) + b"\x01\x02\x03" + b"\x00" + b"\xff" * 8
    for call in (lambda: mem.read(a + 12, 5), lambda: mem.write(a + 15, b"ab"), lambda: mem.fill(a - 1, 0, 2)):
        with pytest.raises(MemoryFault):
            call()
    with pytest.raises(MemoryFault) as info:
        mem.write(a + 16, b"x")
    assert (info.value.address, info.value.nbytes, info.value.write) == (a + 16, 1, True)


def test_free_makes_the_range_a_fault_and_is_not_reused():
    mem = DeviceMemory(BASE)
    a = mem.allocate(64)
    assert mem.free(a + 8) is False  # not the start of an allocation
    assert mem.free(a) is True and mem.free(a) is False
    with pytest.raises(MemoryFault):
        mem.read(a, 4)
    assert mem.allocate(64) != a  # a stale pointer never points into a newer allocation
    assert mem.range_of(a) is None


def test_gather_scatter_across_allocations_and_lane_order():
    mem = DeviceMemory(BASE)
    a, b = mem.allocate(8), mem.allocate(8)
    mem.write(a, bytes(range(8)))
    mem.write(b, bytes(range(100, 108)))
    got = mem.gather(np.array([b + 4, a, a + 6], dtype=np.uint64), 2)
    assert got.tolist() == [[104, 105], [0, 1], [6, 7]]
    # three lanes write one address: the last lane wins; overlapping wider writes likewise per byte
    mem.scatter(np.array([a, a, a], dtype=np.uint64), np.array([[1, 1], [2, 2], [3, 3]], dtype=np.uint8))
    mem.scatter(np.array([b + 1, b], dtype=np.uint64), np.array([[7, 7], [9, 9]], dtype=np.uint8))
    assert mem.read(a, 2) == b"\x03\x03" and mem.read(b, 3) == b"\x09\x09\x07"


def test_vector_faults_name_the_first_bad_lane():
    mem = DeviceMemory(BASE)
    a = mem.allocate(8)
    with pytest.raises(MemoryFault) as info:
        mem.gather(np.array([a, a + 7, a + 100], dtype=np.uint64), 2)
    assert info.value.address == a + 7 and not info.value.write
    with pytest.raises(MemoryFault) as info:
        mem.scatter(np.array([a, 0], dtype=np.uint64), np.zeros((2, 1), dtype=np.uint8))
    assert info.value.address == 0 and info.value.write
    with pytest.raises(MemoryFault):  # an address near 2^64 does not wrap around into an allocation
        mem.gather(np.array([2**64 - 1], dtype=np.uint64), 4)


def test_typed_load_store():
    mem = DeviceMemory(BASE)
    a = mem.allocate(12)  # not a whole number of u64 elements
    mem.store(np.array([a, a + 4, a + 4], dtype=np.uint64), np.array([1, 2, 3], dtype=np.uint32))
    assert mem.load(np.array([a + 4, a], dtype=np.uint64), np.dtype(np.uint32)).tolist() == [3, 1]
    mem.store(np.array([a + 4], dtype=np.uint64), np.array([0x0102030405060708], dtype=np.uint64))
    assert mem.load(np.array([a + 4], dtype=np.uint64), np.dtype(np.uint64)).tolist() == [0x0102030405060708]
    with pytest.raises(MemoryFault):
        mem.load(np.array([a + 8], dtype=np.uint64), np.dtype(np.uint64))
