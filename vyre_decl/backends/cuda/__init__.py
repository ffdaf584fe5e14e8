"""The ``cuda`` backend: programs run on an NVIDIA GPU through PTX we emit and our libcuda binding.

One room per concern, each talking to the others through public methods only:

* ``device``   — the context, stream and lock of one GPU, its limits, poisoning after a sticky
  error, events, transfers and synchronisation;
* ``memory``   — pooled device allocations, pinned staging, resident ``DeviceBuffer``s;
* ``kernels``  — PTX and cubins cached in memory and on disk, loaded modules;
* ``pipeline`` — a compiled program: numpy dispatch (one arena, one staging area, one copy each
  way), async and timed dispatch;
* ``launches`` — launches bound to resident buffers, and numpy dispatches in flight;
* ``graphs``   — sequences of resident launches and the CUDA graphs captured from them;
* ``backend``  — ``CudaBackend``, the facade that wires them together.

A dispatch travels: ``CudaBackend.compile`` (kernels) → ``CudaPipeline.dispatch`` → the pipeline's
enqueue on the ``Device`` stream with an arena from ``Memory`` → ``collect``.
"""

from __future__ import annotations

from ..config import Timing
from .backend import CudaBackend
from .device import CudaPoisoned, DeviceInfo, Occupancy, cuda_available, cuda_device_count
from .graphs import CudaGraph, DispatchSequence
from .launches import BoundLaunch, PendingDispatch
from .memory import DeviceBuffer
from .pipeline import CudaPipeline

__all__ = ["CudaBackend", "CudaPipeline", "DeviceBuffer", "PendingDispatch", "Timing", "DispatchSequence",
           "CudaGraph", "DeviceInfo", "CudaPoisoned", "BoundLaunch", "Occupancy", "cuda_available",
           "cuda_device_count"]
