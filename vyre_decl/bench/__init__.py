"""The benchmark suite: ``python -m vyre_decl.bench`` measures each case beside its baseline in
the same process on the machine it runs on, and prints one table (``--json FILE`` writes it).

Rooms: ``core`` (rows, timing, the table), ``host`` (CPU cases: the reference backend, cold
start), ``sim`` (CPU cases of the simulated CUDA device: PTX interpreter throughput, a simulated
conformance run), ``device`` (GPU cases: bandwidth against a hand-written v4 kernel and the copy engine,
a fused chain against PyTorch, launch, replay and small-dispatch host costs), ``library``
(routines and float functions against the copy engine, CuPy and PyTorch), ``gpu`` (runs the GPU
cases on one backend), ``kernels`` (the programs and the hand-written PTX they are measured with).
"""
