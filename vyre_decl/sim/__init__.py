"""A simulated CUDA device: a model of the CUDA driver API (this package's ``driver*`` modules)
and a PTX interpreter with a sanitizer (``ptx*``, ``memory``), so that vyre_decl's real CUDA
backend, its driver binding and the PTX it emits run on a machine without a GPU.

``VYRE_DECL_CUDA_SIM=h100`` (or ``h100,t4``: one simulated device per profile, see
``profiles.PROFILES``) selects it; ``driver_library(spec)`` returns the object that stands in for
``ctypes.CDLL("libcuda.so.1")``. The package depends on nothing else in vyre_decl: it is an
independent second reading of the driver's and of PTX's semantics.
"""

from __future__ import annotations

from .driver_lib import PROTOTYPES, Driver, SimDriverLibrary
from .profiles import PROFILES, Profile, profile

__all__ = ["driver_library", "SimDriverLibrary", "Driver", "PROTOTYPES", "PROFILES", "Profile", "ENV"]

ENV = "VYRE_DECL_CUDA_SIM"


def driver_library(spec: str) -> SimDriverLibrary:
    """The simulated driver for ``spec`` (``VYRE_DECL_CUDA_SIM``'s value: profile names separated
    by commas, one device each, e.g. ``"h100"``, ``"h100,t4"``); ValueError for an empty spec or
    an unknown profile, naming the known ones."""
    names = [part.strip() for part in spec.split(",")]
    if not spec.strip() or any(not n for n in names):
        raise ValueError(f"{ENV}={spec!r} names no simulated GPU; known profiles: {', '.join(PROFILES)} "
                         "(several separated by commas, e.g. 'h100,t4')")
    return SimDriverLibrary(Driver([profile(n) for n in names]), ",".join(n.lower() for n in names))
