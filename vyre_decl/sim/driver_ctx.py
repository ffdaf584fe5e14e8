"""The simulated driver's initialisation, version, error strings, device queries and primary
contexts (``cuInit`` .. ``cuCtxSynchronize``).

Every method takes the C arguments as ctypes hands them to a callback (integers; pointers as
integers or None) and returns the CUresult; ``DriverError`` raised inside becomes that code.
"""

from __future__ import annotations

import ctypes
from ctypes import c_int, c_size_t, c_void_p
from typing import Final

from .driver_errors import ERRORS, INVALID_CONTEXT, INVALID_VALUE, DriverError
from .driver_queue import flush
from .driver_state import CtxState, DriverBase, write_out
from .profiles import DRIVER_VERSION

__all__ = ["ContextCalls"]

# the strings cuGetErrorName/String point at: static, like the driver's own
_NAMES: Final = {code: ctypes.create_string_buffer(name.encode()) for code, (name, _) in ERRORS.items()}
_TEXTS: Final = {code: ctypes.create_string_buffer(text.encode()) for code, (_, text) in ERRORS.items()}


class ContextCalls(DriverBase):
    """cuInit, versions, error strings, devices and primary contexts."""

    def cuInit(self, flags: int) -> int:
        if flags != 0:
            raise DriverError(INVALID_VALUE, "cuInit flags must be 0")
        self.initialized = True
        return 0

    def cuDriverGetVersion(self, version: int | None) -> int:
        write_out(c_int, version, DRIVER_VERSION)
        return 0

    def cuGetErrorName(self, code: int, out: int | None) -> int:
        return _error_string(_NAMES, code, out)

    def cuGetErrorString(self, code: int, out: int | None) -> int:
        return _error_string(_TEXTS, code, out)

    def cuDeviceGetCount(self, count: int | None) -> int:
        self.require_init()
        write_out(c_int, count, len(self.devices))
        return 0

    def cuDeviceGet(self, device: int | None, ordinal: int) -> int:
        write_out(c_int, device, self.device(ordinal).ordinal)
        return 0

    def cuDeviceGetName(self, name: int | None, length: int, device: int) -> int:
        dev = self.device(device)
        if not name or length <= 0:
            raise DriverError(INVALID_VALUE, "cuDeviceGetName needs a buffer")
        # the name says "simulated" so that a certificate or log of a run here is never taken for a GPU's
        text = f"{dev.profile.name} (simulated)".encode()[: length - 1] + b"\0"
        ctypes.memmove(name, text, len(text))
        return 0

    def cuDeviceGetAttribute(self, value: int | None, attribute: int, device: int) -> int:
        dev = self.device(device)
        found = dev.profile.attribute(attribute)
        if found is None:
            raise DriverError(INVALID_VALUE, f"device attribute {attribute} is not modelled")
        write_out(c_int, value, found)
        return 0

    def cuDeviceTotalMem_v2(self, nbytes: int | None, device: int) -> int:
        write_out(c_size_t, nbytes, self.device(device).profile.total_memory)
        return 0

    def cuDevicePrimaryCtxRetain(self, context: int | None, device: int) -> int:
        dev = self.device(device)
        write_out(c_void_p, context, dev.context.handle)
        primary = dev.context
        primary.refs += 1
        if primary.state is None:
            primary.state = CtxState(primary, dev)
        return 0

    def cuDevicePrimaryCtxRelease_v2(self, device: int) -> int:
        primary = self.device(device).context
        if primary.refs == 0 or primary.state is None:
            raise DriverError(INVALID_CONTEXT, "the primary context is not retained")
        primary.refs -= 1
        if primary.refs == 0:
            self.destroy(primary.state)
        return 0

    def cuCtxSetCurrent(self, context: int | None) -> int:
        self.require_init()
        self.current = self.context_by_handle(context) if context else None
        return 0

    def cuCtxGetCurrent(self, context: int | None) -> int:
        self.require_init()
        current = self.current
        write_out(c_void_p, context, current.handle if current is not None else None)
        return 0

    def cuCtxSynchronize(self) -> int:
        state = self.ctx()
        self.unsafe_during_capture()
        flush(state, self)
        self.check_healthy(state)
        return 0


def _error_string(table: dict[int, ctypes.Array[ctypes.c_char]], code: int, out: int | None) -> int:
    found = table.get(code)
    write_out(c_void_p, out, ctypes.addressof(found) if found is not None else None)
    return 0 if found is not None else INVALID_VALUE
