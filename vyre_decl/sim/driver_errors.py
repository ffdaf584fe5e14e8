"""The CUDA driver's error codes (``CUresult``) as the simulated driver returns them, with the names
and descriptions ``cuGetErrorName``/``cuGetErrorString`` give (cuda.h, CUDA 13.0), and
``DriverError``, which a model function raises to return a code.

Sticky errors (``STICKY``) poison the context they happen in: every later call that needs it
returns the same code, as on hardware.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DriverError", "ERRORS", "STICKY", "SUCCESS", "INVALID_VALUE", "OUT_OF_MEMORY", "NOT_INITIALIZED",
           "INVALID_DEVICE", "INVALID_IMAGE", "INVALID_CONTEXT", "NO_BINARY_FOR_GPU", "INVALID_PTX",
           "JIT_COMPILER_NOT_FOUND", "UNSUPPORTED_PTX_VERSION", "INVALID_HANDLE", "ILLEGAL_STATE", "NOT_FOUND",
           "NOT_READY", "ILLEGAL_ADDRESS", "LAUNCH_OUT_OF_RESOURCES", "LAUNCH_TIMEOUT", "CONTEXT_IS_DESTROYED",
           "COOPERATIVE_LAUNCH_TOO_LARGE", "NOT_SUPPORTED", "CAPTURE_UNSUPPORTED", "CAPTURE_INVALIDATED",
           "CAPTURE_ISOLATION", "CAPTURE_IMPLICIT", "CAPTURED_EVENT", "CAPTURE_WRONG_THREAD", "UNKNOWN",
           "LAUNCH_FAILED", "FAULT_CODES"]

SUCCESS: Final = 0
INVALID_VALUE: Final = 1
OUT_OF_MEMORY: Final = 2
NOT_INITIALIZED: Final = 3
INVALID_DEVICE: Final = 101
INVALID_IMAGE: Final = 200
INVALID_CONTEXT: Final = 201
NO_BINARY_FOR_GPU: Final = 209
INVALID_PTX: Final = 218
JIT_COMPILER_NOT_FOUND: Final = 221
UNSUPPORTED_PTX_VERSION: Final = 222
INVALID_HANDLE: Final = 400
ILLEGAL_STATE: Final = 401
NOT_FOUND: Final = 500
NOT_READY: Final = 600
ILLEGAL_ADDRESS: Final = 700
LAUNCH_OUT_OF_RESOURCES: Final = 701
LAUNCH_TIMEOUT: Final = 702
CONTEXT_IS_DESTROYED: Final = 709
LAUNCH_FAILED: Final = 719
COOPERATIVE_LAUNCH_TOO_LARGE: Final = 720
NOT_SUPPORTED: Final = 801
CAPTURE_UNSUPPORTED: Final = 900
CAPTURE_INVALIDATED: Final = 901
CAPTURE_ISOLATION: Final = 905
CAPTURE_IMPLICIT: Final = 906
CAPTURED_EVENT: Final = 907
CAPTURE_WRONG_THREAD: Final = 908
UNKNOWN: Final = 999

# code -> (name, description)
ERRORS: Final[dict[int, tuple[str, str]]] = {
    0: ("CUDA_SUCCESS", "no error"),
    1: ("CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    2: ("CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
    3: ("CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
    4: ("CUDA_ERROR_DEINITIALIZED", "driver shutting down"),
    34: ("CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"),
    46: ("CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"),
    100: ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
    101: ("CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
    200: ("CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"),
    201: ("CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
    202: ("CUDA_ERROR_CONTEXT_ALREADY_CURRENT", "context already current"),
    209: ("CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"),
    218: ("CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"),
    221: ("CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found"),
    222: ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."),
    400: ("CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"),
    401: ("CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"),
    500: ("CUDA_ERROR_NOT_FOUND", "named symbol not found"),
    600: ("CUDA_ERROR_NOT_READY", "device not ready"),
    700: ("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"),
    701: ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"),
    702: ("CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"),
    709: ("CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"),
    710: ("CUDA_ERROR_ASSERT", "device-side assert triggered"),
    714: ("CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"),
    715: ("CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"),
    716: ("CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"),
    717: ("CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"),
    718: ("CUDA_ERROR_INVALID_PC", "invalid program counter"),
    719: ("CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
    720: ("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"),
    800: ("CUDA_ERROR_NOT_PERMITTED", "operation not permitted"),
    801: ("CUDA_ERROR_NOT_SUPPORTED", "operation not supported"),
    900: ("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"),
    901: ("CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"),
    902: ("CUDA_ERROR_STREAM_CAPTURE_MERGE", "operation would result in a merge of separate capture sequences"),
    903: ("CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "capture was not ended in the same stream as it began"),
    904: ("CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "capturing stream has unjoined work"),
    905: ("CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "dependency created on uncaptured work in another stream"),
    906: ("CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
          "operation would make the legacy stream depend on a capturing blocking stream"),
    907: ("CUDA_ERROR_CAPTURED_EVENT", "operation not permitted on an event last recorded in a capturing stream"),
    908: ("CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
          "attempt to terminate a thread-local capture sequence from another thread"),
    909: ("CUDA_ERROR_TIMEOUT", "wait operation timed out"),
    999: ("CUDA_ERROR_UNKNOWN", "unknown error"),
}

# errors after which the context is unusable (the driver's sticky errors)
STICKY: Final = frozenset({700, 702, 710, 714, 715, 716, 717, 718, 719, 999})

# KernelFault.kind (vyre_decl.sim.ptx) -> the sticky error the launch's context gets
FAULT_CODES: Final[dict[str, int]] = {
    "illegal_address": 700, "misaligned_address": 716, "illegal_instruction": 715, "trap": 719,
    "assert": 710, "invalid_pc": 718, "hardware_stack_error": 714, "invalid_address_space": 717,
}


class DriverError(Exception):
    """Raised inside the model to make the current driver call return ``code``."""

    def __init__(self, code: int, detail: str = "") -> None:
        self.code, self.detail = code, detail
        super().__init__(f"{ERRORS.get(code, ('CUresult', ''))[0]} ({code}){': ' + detail if detail else ''}")
