"""The default bound of a backend's waits (issue 25, item 4): ``VYRE_DECL_TIMEOUT`` or
``timeout=``, checked before the backend exists (B008 / D008), and used by the reference backend's
dispatches that name no bound of their own."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_decl.backends.config import DispatchConfig
from vyre_decl.backends.reference import ReferenceBackend
from vyre_decl.ir import VyreError

from test_cuda_lifecycle import SLOW
SPIN = [np.array([1 << 30], np.uint32)]


@pytest.mark.parametrize("raw", ["abc", "0", "-1", "inf", "nan", "1e999", "9" * 5000, "１"])
def test_a_bad_timeout_setting_is_b008(monkeypatch, raw):
    monkeypatch.setenv("VYRE_DECL_TIMEOUT", raw)
    with pytest.raises(VyreError) as e:
        ReferenceBackend()
    assert e.value.codes == ["B008"] and "VYRE_DECL_TIMEOUT" in str(e.value)


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), "5", True])
def test_a_bad_timeout_argument_is_d008(bad):
    with pytest.raises(VyreError) as e:
        ReferenceBackend(timeout=bad)
    assert e.value.codes == ["D008"]


def test_the_setting_bounds_dispatches_that_name_no_bound(monkeypatch):
    monkeypatch.setenv("VYRE_DECL_TIMEOUT", "0.2")
    be = ReferenceBackend()
    assert be.timeout == 0.2
    with pytest.raises(VyreError) as e:
        be.dispatch(SLOW, SPIN)
    assert e.value.codes == ["D013"]
    (out,) = be.dispatch(SLOW, [np.array([3], np.uint32)], DispatchConfig(timeout=30.0))  # its own bound wins
    assert out[0] == ((1 * 3 + 0) * 3 + 1) * 3 + 2
    assert ReferenceBackend(timeout=0.2).timeout == 0.2
    monkeypatch.delenv("VYRE_DECL_TIMEOUT")
    assert ReferenceBackend().timeout is None
