"""Kernel parameter arrays hold their values (issue 25, item 3): a launch made from an argument
tuple kept without the object that packed it reads live memory. The stand-in for cuLaunchKernel
collects garbage, reuses the freed memory, then dereferences every parameter pointer as the
driver would; on 6baef07 ``RawLaunch(...).call`` read freed values (CUDA_ERROR_ILLEGAL_ADDRESS on
the H100)."""

from __future__ import annotations

import ctypes
import gc
from ctypes import c_uint32, c_uint64, c_void_p

import pytest

from vyre_decl import libcuda as cu
from vyre_decl.bench import device as bench_device

POINTERS = [0x7F00_0000_1000 + 0x100 * k for k in range(3)]
COUNT = 1024


def _stand_in(seen: list[list[int]]):
    """A cuLaunchKernel that reads its kernelParams after the garbage is gone and its memory reused."""
    def launch(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        gc.collect()
        spray = [c_uint64(0xDEAD_BEEF_DEAD_BEEF) for _ in range(20000)] + [c_uint32(0xBAD) for _ in range(20000)]
        words = len(POINTERS) * 2
        addresses = [params[i] for i in range(words)]
        seen.append([c_uint64.from_address(a).value for a in addresses[:len(POINTERS)]] +
                    [c_uint32.from_address(a).value for a in addresses[len(POINTERS):]])
        del spray
        return 0
    return launch


@pytest.fixture
def seen(monkeypatch):
    calls: list[list[int]] = []
    monkeypatch.setattr(cu, "raw", lambda name, hold_gil=False: _stand_in(calls))
    return calls


def test_the_raw_launch_baseline_keeps_its_parameter_values_alive(seen):
    call = bench_device.RawLaunch(c_void_p(1), POINTERS, COUNT, c_void_p(0)).call  # the instance is dropped at once
    for _ in range(3):
        call()
    assert seen == [POINTERS + [COUNT] * len(POINTERS)] * 3


def test_a_launchers_argument_tuple_outlives_the_launcher(seen):
    values = [c_uint64(p) for p in POINTERS] + [c_uint32(COUNT) for _ in POINTERS]
    launch, args = cu.Launcher(c_void_p(1), values, (64, 1, 1)).function_and_args()
    del values
    launch(*args)
    assert seen == [POINTERS + [COUNT] * len(POINTERS)]


def test_packed_parameters_point_at_their_values():
    values = [c_uint64(5), c_uint32(7)]
    params = cu.pack_params(values)
    assert [ctypes.cast(params[i], ctypes.POINTER(t)).contents.value for i, t in enumerate((c_uint64, c_uint32))] == [5, 7]
