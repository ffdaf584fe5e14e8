"""Certifying on a Dask distributed cluster (``--dask ADDRESS`` or ``--dask local:N``): shards run
as tasks, each needing one GPU (the worker resource ``GPU=1``) or, for the reference backend, any
worker. Dask re-runs a shard whose worker dies; a shard that raises is retried twice. Progress
counts shards done / running / failed. ``fleet_certificates`` runs one whole certification on
every worker's device instead (see ``fleet``).

Dask is an optional dependency (``pip install 'vyre-decl[dask]'``); nothing here imports it
before it is needed. A worker runs the GPU backend in a subprocess of its own (the usual
isolation), so its process must be allowed children: start workers with ``--no-nanny`` or with
the setting ``distributed.worker.daemon: false``; ``local:N`` does this itself and pins worker i
to device i.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from typing import Any, Callable, Iterator

from .certificate import merge
from .certify import RunSpec, SetupError, run_shard
from .devicepool import DistributedRun, PoolError
from .isolation import DeviceLost, runs_in_process

__all__ = ["ClusterError", "connect", "cluster_backend", "certify_on_dask", "fleet_certificates", "SHARD_EVENT"]

SHARD_EVENT = "vyre-decl-shard"  # every shard attempt logs {"shard", "pid", "worker"} under this topic


class ClusterError(Exception):
    """The cluster cannot be reached or cannot run the work (exit status 2)."""


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ClusterError("--dask needs Dask distributed. Fix: pip install 'vyre-decl[dask]'") from None
    return distributed


def _device_backends(name: str) -> list[Any]:
    """The registrations of ``name`` (``auto``: of every backend) that run on devices."""
    from ..backends import backend_info, list_backends

    infos = list_backends() if name == "auto" else [backend_info(name)]
    return [i for i in infos if i is not None and i.devices is not None]


def _needs_device(backend: str) -> bool:
    """Whether a task of ``backend`` needs a device (the resource GPU=1) of its worker."""
    return bool(_device_backends(backend))


def _local_gpus(backend: str) -> int:
    return next((i.device_count() or 0 for i in _device_backends(backend) if i.is_available()), 0)


@contextlib.contextmanager
def connect(address: str, backend: str, timeout: float = 20.0) -> Iterator[Any]:
    """A client of the cluster at ``address``, or of a new local cluster for ``local:N`` (N
    worker processes; for a GPU backend, when this machine has GPUs, worker i has the resource
    GPU=1 and device i as its device)."""
    distributed = _distributed()
    if not address.startswith("local:"):
        try:
            client = distributed.Client(address, timeout=f"{timeout}s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ClusterError(f"cannot reach the Dask scheduler at {address!r}: {exc}. Fix: pass the "
                               "scheduler's address (tcp://HOST:8786) or local:N") from None
        with client:
            yield client
        return
    count = address.partition(":")[2]
    if not (count.isascii() and count.isdigit() and int(count) > 0):
        raise ClusterError(f"bad --dask {address!r}. Fix: write local:N with N >= 1, e.g. local:2")
    import dask

    gpus = _local_gpus(backend)
    gpu = gpus > 0
    if gpu and int(count) > gpus:
        raise ClusterError(f"--dask {address} asks for {count} GPU workers and this machine has {gpus} GPUs. "
                           f"Fix: --dask local:{gpus}, or --backend reference for CPU workers")
    workers = {
        i: {"cls": distributed.Nanny,
            "options": {"nthreads": 1, "name": i, "resources": {"GPU": 1} if gpu else {},
                        "silence_logs": 40,  # errors only: the progress lines are ours
                        "env": {"VYRE_DECL_CUDA_DEVICE": str(i)} if gpu else {}}}
        for i in range(int(count))
    }
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard_address": None}}
    with dask.config.set({"distributed.worker.daemon": False}):  # workers start the backend's subprocess
        with distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=40) as cluster:
            with distributed.Client(cluster) as client:
                client.wait_for_workers(int(count))
                yield client


def cluster_backend(client: Any, name: str) -> str:
    """The backend the workers are to certify: ``auto`` is cuda when some worker offers a GPU,
    else the reference; a name must be a registered backend (its devices are the workers')."""
    from ..backends import list_backends

    if name == "auto":
        offered = [w.get("resources", {}).get("GPU", 0) for w in client.scheduler_info()["workers"].values()]
        wanted = (lambda i: i.devices is not None) if any(offered) else (lambda i: i.defines_semantics)
        return next(i.name for i in list_backends() if wanted(i))
    names = [i.name for i in list_backends()]
    if name not in names:
        raise ClusterError(f"no backend named {name!r} for the cluster. Fix: use one of auto, {', '.join(names)} "
                           "(each worker certifies its own device: no :N)")
    return name


def _slot(backend: str) -> str:
    from distributed import get_worker

    worker = get_worker()
    device = os.environ.get("VYRE_DECL_CUDA_DEVICE")
    return f"{backend}{':' + device if device and _needs_device(backend) else ''}@{worker.name}"


def _shard_task(spec: RunSpec, backend: str, index: int, count: int, run: str) -> dict[str, Any]:
    """A shard on a Dask worker (logs its attempt first, for progress and for the retry count)."""
    import multiprocessing

    from distributed import get_worker

    get_worker().log_event(SHARD_EVENT, {"run": run, "shard": index, "pid": os.getpid(),
                                         "worker": get_worker().address})
    if not runs_in_process(backend) and multiprocessing.current_process().daemon:
        raise SetupError("this Dask worker is a daemon process and cannot start the backend's subprocess. Fix: "
                         "start workers with the setting distributed.worker.daemon: false "
                         "(DASK_DISTRIBUTED__WORKER__DAEMON=False)")
    try:
        result = run_shard(spec, backend, index, count)
    except DeviceLost as exc:  # a BaseException: Dask must see an ordinary failure
        raise SetupError(str(exc)) from None
    for d in result["certificate"]["devices"]:
        d["slot"] = _slot(backend)
    return result


def _requirements(client: Any, backend: str) -> dict[str, Any]:
    """The task resources for ``backend``; ClusterError when no worker offers them."""
    if not _needs_device(backend):
        return {}
    offered = [w.get("resources", {}).get("GPU", 0) for w in client.scheduler_info()["workers"].values()]
    if not any(offered):
        raise ClusterError(f"no worker of the cluster offers a GPU, and the {backend} backend needs one. Fix: start "
                           "workers with --resources GPU=1 (one per GPU), or certify --backend reference")
    return {"GPU": 1}


def _attempts(client: Any, run: str) -> dict[int, int]:
    """How many times each shard of ``run`` has started (more than once: its worker died, or it raised)."""
    counts: dict[int, int] = {}
    for _, event in client.get_events(SHARD_EVENT):
        if event.get("run") == run:
            counts[event["shard"]] = counts.get(event["shard"], 0) + 1
    return counts


def certify_on_dask(client: Any, spec: RunSpec, backend: str, shards: int | None = None,
                    progress: Callable[[str], None] = lambda s: None, poll: float = 0.2) -> DistributedRun:
    """Certify ``spec`` on the cluster's workers (``shards`` pieces, default four per worker)."""
    resources = _requirements(client, backend)
    workers = len(client.scheduler_info()["workers"])
    count = shards or 4 * max(workers, 1)
    run = uuid.uuid4().hex[:8]
    futures = [client.submit(_shard_task, spec, backend, i, count, run, key=f"vyre-shard-{run}-{i}", resources=resources,
                             retries=2, pure=False) for i in range(count)]
    t0, shown = time.perf_counter(), ""
    attempts: dict[int, int] = {}
    while True:
        attempts = _attempts(client, run)
        done = sum(f.status == "finished" for f in futures)
        failed = sum(f.status in ("error", "cancelled", "lost") for f in futures)
        running = sum(1 for i, f in enumerate(futures) if i in attempts and f.status == "pending")
        line = f"shards: {done}/{count} done, {running} running, {failed} failed"
        if line != shown:
            progress(f"{line}  ({time.perf_counter() - t0:.1f} s)")
            shown = line
        if done + failed == count:
            break
        time.sleep(poll)
    errors = [(i, f.exception()) for i, f in enumerate(futures) if f.status != "finished"]
    if errors:
        raise PoolError("; ".join(f"shard {i}/{count}: {type(e).__name__}: {e}" for i, e in errors))
    results = client.gather(futures)
    cert = merge([r["certificate"] for r in results])
    cert["elapsed_s"] = round(time.perf_counter() - t0, 3)
    retried = [{"slot": "dask", "shard": f"{i}/{count}", "message": f"ran {n} times (a worker died or the shard "
                "raised)"} for i, n in sorted(attempts.items()) if n > 1]
    cert["faults"] = retried
    return DistributedRun(cert, {k: v for r in results for k, v in r["capsules"].items()}, retried, attempts)


def _fleet_task(spec: RunSpec, backend: str, run: str) -> dict[str, Any]:
    return _shard_task(spec, backend, 0, 1, run)


def fleet_certificates(client: Any, spec: RunSpec, backend: str,
                       progress: Callable[[str], None] = lambda s: None) -> list[dict[str, Any]]:
    """One whole certification on every worker (pinned by worker name, which a restarted worker
    keeps): each worker's certificate, in worker order."""
    resources = _requirements(client, backend)
    names = sorted((w.get("name", a) for a, w in client.scheduler_info()["workers"].items()), key=str)
    run = uuid.uuid4().hex[:8]
    futures = [client.submit(_fleet_task, spec, backend, run, key=f"vyre-fleet-{run}-{n}", workers=[n],
                             allow_other_workers=False, resources=resources, retries=1, pure=False) for n in names]
    progress(f"fleet: certifying on {len(names)} workers")
    out = []
    for name, f in zip(names, futures):
        try:
            result = f.result()
        except Exception as exc:  # noqa: BLE001 - one broken worker is a row of the report, not the end
            result = {"worker": name, "error": f"{type(exc).__name__}: {exc}"}
        result["worker"] = str(name)
        out.append(result)
        progress(f"fleet: {len(out)}/{len(names)} workers done")
    return out
