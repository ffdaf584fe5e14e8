"""Certifying on several devices of one host (``--devices``): one worker process per device slot
(``cuda:0``, ``cuda:1``, ...), each running whole shards with its backend in the usual isolated
subprocess pinned to that device; shards handed out from one queue, so a fast device takes more.

A slot faults when its worker process dies, when its backend cannot start, or when its device is
lost mid-shard. The fault is recorded, the shard goes back to the queue for another slot, and the
faulted slot takes no more work; the run fails only when a shard has faulted on every slot or on
three. The shards' certificates merge into the certificate of an unsharded run.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections import Counter, deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .certificate import merge
from .certify import RunSpec, run_shard

__all__ = ["PoolError", "DistributedRun", "certify_on_slots", "MAX_ATTEMPTS"]

MAX_ATTEMPTS = 3  # a shard that faults on three slots is the shard's problem, not the devices'

ShardTask = Callable[[RunSpec, str, int, int], dict[str, Any]]


class PoolError(Exception):
    """The run could not complete: some shard faulted on every slot that tried it."""


@dataclass
class DistributedRun:
    """A merged certificate, the capsule files of all shards, and the faults met on the way."""

    certificate: dict[str, Any]
    capsules: dict[str, str]
    faults: list[dict[str, Any]] = field(default_factory=list)
    attempts: dict[int, int] = field(default_factory=dict)


class _Queue:
    """The shards still to run, the ones running, their results and faults (one lock)."""

    def __init__(self, count: int, slots: int, progress: Callable[[str], None]) -> None:
        self.count, self.slots, self.progress = count, slots, progress
        self.pending: deque[int] = deque(range(count))
        self.running: dict[int, str] = {}
        self.results: dict[int, dict[str, Any]] = {}
        self.faults: list[dict[str, Any]] = []
        self.attempts: Counter[int] = Counter()
        self.tried: dict[int, set[int]] = {}  # by slot position: two slots may share a name
        self.gave_up: list[str] = []
        self.names: dict[int, list[str]] = {}  # the slots a shard faulted on
        self.live = slots
        self.cond = threading.Condition()
        self.t0 = time.perf_counter()

    def take(self, slot: int) -> int | None:
        """The next shard for slot number ``slot``; None when nothing is left for it."""
        with self.cond:
            while True:
                if self.gave_up:
                    return None
                for i in self.pending:
                    if slot not in self.tried.get(i, ()):
                        self.pending.remove(i)
                        self.running[i] = str(slot)
                        self.attempts[i] += 1
                        self.tried.setdefault(i, set()).add(slot)
                        self._show()
                        return i
                if not self.running:
                    return None
                self.cond.wait()  # a running shard may come back for another slot

    def done(self, i: int, result: dict[str, Any]) -> None:
        with self.cond:
            del self.running[i]
            self.results[i] = result
            self._show()
            self.cond.notify_all()

    def fault(self, i: int, slot: int, name: str, message: str) -> None:
        with self.cond:
            del self.running[i]
            self.live -= 1
            self.faults.append({"slot": name, "shard": f"{i}/{self.count}", "message": message})
            self.names.setdefault(i, []).append(name)
            self.progress(f"{name} faulted on shard {i}/{self.count}: {message}; it takes no more shards")
            if self.attempts[i] >= min(MAX_ATTEMPTS, self.slots) or self.live == 0:
                self.gave_up.append(f"shard {i}/{self.count} faulted on {self.names[i]}: {message}")
            else:
                self.pending.appendleft(i)
            self._show()
            self.cond.notify_all()

    def _show(self) -> None:
        self.progress(f"shards: {len(self.results)}/{self.count} done, {len(self.running)} running, "
                      f"{len(self.faults)} failed  ({time.perf_counter() - self.t0:.1f} s)")


def _serve(number: int, slot: str, spec: RunSpec, queue: _Queue, task: ShardTask) -> None:
    """Slot ``number``: its worker process runs shards from the queue until none is left or it faults."""
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        while (i := queue.take(number)) is not None:
            try:
                result = pool.submit(task, spec, slot, i, queue.count).result()
            except BaseException as exc:  # noqa: BLE001 - a dead worker, a lost device, a start failure
                if isinstance(exc, KeyboardInterrupt):
                    raise
                queue.fault(i, number, slot, f"{type(exc).__name__}: {exc}".strip())
                return
            queue.done(i, result)


def certify_on_slots(spec: RunSpec, slots: Sequence[str], shards: int | None = None,
                     progress: Callable[[str], None] = lambda s: None, task: ShardTask = run_shard) -> DistributedRun:
    """Certify ``spec`` on every slot at once (``shards``: how many pieces, default four per slot);
    ``PoolError`` when some shard could not be run anywhere. ``task`` runs one shard in a worker
    process (a module-level function: it is pickled by reference)."""
    if not slots:
        raise PoolError("no device to run on. Fix: name at least one device")
    count = shards or 4 * len(slots)
    queue = _Queue(count, len(slots), progress)
    threads = [threading.Thread(target=_serve, args=(n, slot, spec, queue, task), name=f"vyre-{slot}", daemon=True)
               for n, slot in enumerate(slots)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if queue.gave_up or len(queue.results) < count:
        missing = sorted(set(range(count)) - set(queue.results))
        raise PoolError("; ".join(queue.gave_up) or f"shards {missing} did not run: every device faulted")
    certs = [queue.results[i]["certificate"] for i in range(count)]
    capsules = {name: text for i in range(count) for name, text in queue.results[i]["capsules"].items()}
    cert = merge(certs)
    cert["elapsed_s"] = round(time.perf_counter() - queue.t0, 3)  # wall time, not the shards' sum
    cert["faults"] = queue.faults
    return DistributedRun(cert, capsules, queue.faults, dict(queue.attempts))
