"""Running units of work: resumability, executors (local processes or Ray) and concurrency caps.

:func:`run_units` takes the planned units of one stage and, for each, reuses the stored result when its
key (hash of its inputs) has one, and otherwise sends it to an executor. Caps are enforced by the
coordinator, the same way for every executor: at most ``workers`` units in flight, at most
``caps["model"]`` of those that call a model and ``caps["env"]`` of those that use a test environment.
A unit holds its resources for its whole duration (a takeover run holds a model slot and an environment
slot from start to end), which is what bounds the load on an endpoint and on the machine.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from takeover._io import atomic_write_json
from takeover.errors import EnvironmentUnavailable
from takeover.experiments.units import (
    UnitResult,
    UnitSpec,
    _reason,
    blocked_result,
    check_result,
    execute_unit,
    note_rejected,
    unit_path,
)

ProgressCallback = Callable[["ProgressEvent"], None]


class ProgressEvent(BaseModel):
    """What the engine reports as it goes: ``planned`` (with the number of units and of those reused),
    ``started`` and ``finished`` (with the result) for each unit that runs."""

    kind: Literal["planned", "started", "finished"]
    stage: str
    total: int = 0
    reused: int = 0
    reused_failed: int = 0
    reused_tokens: int = 0
    key: str | None = None
    result: UnitResult | None = None


class Executor:
    """Where units run. ``submit`` returns a handle; ``wait`` returns the handles that have finished.

    ``submit(function, spec_json, out_dir)`` runs :func:`takeover.experiments.units.execute_unit` with
    those arguments somewhere; ``function`` is a module-level function (it is pickled by reference).
    """

    workers: int = 1

    def submit(self, function: Callable, spec_json: str, out_dir: str) -> Any:
        """Start one unit; returns a handle for :meth:`wait`."""
        raise NotImplementedError

    def wait(self, handles: Iterable[Any], timeout: float) -> list[tuple[Any, str | BaseException]]:
        """Finished handles with their result JSON (or the exception that escaped the worker); waits at most
        ``timeout`` seconds for the first one."""
        raise NotImplementedError

    def close(self, *, terminate: bool = False) -> None:
        """Release the workers; ``terminate``: the run is being interrupted, stop running units too."""


class InlineExecutor(Executor):
    """Runs each unit in this process, one at a time (``workers = 1``)."""

    workers = 1

    def __init__(self) -> None:
        self._done: dict[int, str | BaseException] = {}
        self._n = 0

    def submit(self, function: Callable, spec_json: str, out_dir: str) -> int:
        """Run the unit now; the handle is a counter."""
        self._n += 1
        try:
            self._done[self._n] = execute_unit(function, spec_json, out_dir)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._done[self._n] = exc
        return self._n

    def wait(self, handles, timeout):
        """Every handle is finished at once (``timeout`` is not needed)."""
        return [(h, self._done.pop(h)) for h in list(handles) if h in self._done]


class ProcessExecutor(Executor):
    """``workers`` worker processes (``concurrent.futures.ProcessPoolExecutor``, spawn start method so
    that no thread of the coordinator, such as the live display, is forked)."""

    def __init__(self, workers: int):
        self.workers = workers
        self._pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, function: Callable, spec_json: str, out_dir: str) -> cf.Future:
        """Send the unit to a worker process; the handle is its future."""
        return self._pool.submit(execute_unit, function, spec_json, out_dir)

    def wait(self, handles, timeout):
        """The futures that finished within ``timeout`` seconds; a dead worker's exception is its value."""
        done, _ = cf.wait(list(handles), timeout=timeout, return_when=cf.FIRST_COMPLETED)
        out: list[tuple[Any, str | BaseException]] = []
        for fut in done:
            try:
                out.append((fut, fut.result()))
            except BaseException as exc:  # noqa: BLE001 - a dead worker becomes a failed unit
                out.append((fut, exc))
        return out

    def close(self, *, terminate: bool = False) -> None:
        """Shut the pool down; with ``terminate`` (the run is being interrupted), kill the workers first
        so that no unit keeps running without a coordinator (its result would be redone anyway)."""
        if terminate:
            for proc in list(getattr(self._pool, "_processes", {}).values()):
                proc.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor(Executor):
    """Runs units as Ray tasks (optional extra ``ray``).

    ``address=None`` starts a private local Ray instance bound to 127.0.0.1 with ``workers`` CPUs and no
    dashboard; otherwise ``ray.init(address=...)`` joins an existing cluster (``"auto"`` or
    ``ray://host:10001``). On a cluster, every node needs ``takeover`` installed and the output folder on
    a shared file system, because each task writes its unit result file itself.
    """

    def __init__(self, workers: int, address: str | None = None):
        try:
            import ray
        except ImportError as exc:  # pragma: no cover - depends on the extra
            raise EnvironmentUnavailable(
                "the Ray executor needs the optional extra: pip install 'takeover[ray]'"
            ) from exc
        self.ray = ray
        self.workers = workers
        self._owned = False
        if not ray.is_initialized():
            if address is None:
                ray.init(
                    address="local",
                    num_cpus=workers,
                    include_dashboard=False,
                    _node_ip_address="127.0.0.1",
                    log_to_driver=False,
                    configure_logging=False,
                )
            else:
                ray.init(address=address, log_to_driver=False)
            self._owned = True
        self._remote = ray.remote(num_cpus=1, max_retries=0)(execute_unit)

    def submit(self, function: Callable, spec_json: str, out_dir: str):
        """Start the unit as a Ray task; the handle is its object reference."""
        return self._remote.remote(function, spec_json, out_dir)

    def wait(self, handles, timeout):
        """The first task that finished within ``timeout`` seconds; a lost task's exception is its value."""
        handles = list(handles)
        if not handles:
            return []
        ready, _ = self.ray.wait(handles, num_returns=1, timeout=timeout)
        out: list[tuple[Any, str | BaseException]] = []
        for ref in ready:
            try:
                out.append((ref, self.ray.get(ref)))
            except Exception as exc:  # noqa: BLE001 - a lost task becomes a failed unit
                out.append((ref, exc))
        return out

    def close(self, *, terminate: bool = False) -> None:
        """Shut down the Ray instance this executor started (a joined cluster is left running)."""
        if self._owned:
            self.ray.shutdown()


def make_executor(kind: str, workers: int, *, ray_address: str | None = None) -> Executor:
    """``local`` with one worker runs inline; ``local`` with more uses processes; ``ray`` uses Ray."""
    if kind == "ray":
        return RayExecutor(workers, ray_address)
    if kind != "local":
        raise ValueError(f"unknown executor {kind!r} (local or ray)")
    return InlineExecutor() if workers <= 1 else ProcessExecutor(workers)


def run_units(
    specs: list[UnitSpec],
    out_dir: Path | str,
    executor: Executor,
    *,
    caps: dict[str, int] | None = None,
    retry_failed: bool = False,
    progress: ProgressCallback | None = None,
) -> dict[str, UnitResult]:
    """Run the units that have no stored result (and, with ``retry_failed``, those whose stored result
    failed); return every unit's result by key, in the order of ``specs``.

    Args:
        specs: the stage's planned units (same stage; duplicate keys are run once).
        caps: ``{"model": n, "env": m}``: most units holding each resource at a time.
        retry_failed: redo units whose stored result is ``failed``.
        progress: called with :class:`ProgressEvent` as units are planned, start and finish.
    """
    out_dir = str(out_dir)
    caps = caps or {}
    results: dict[str, UnitResult] = {}
    todo: deque[UnitSpec] = deque()
    seen: set[str] = set()
    reused = reused_failed = reused_tokens = 0
    stage = specs[0].stage if specs else ""
    for spec in specs:
        key = spec.key
        if key in seen:
            continue
        seen.add(key)
        stored, problem = check_result(out_dir, spec.stage, key, spec.inputs.get("instance_id"))
        if problem:
            note_rejected(out_dir, spec.stage, key, problem)
        if stored is not None and (stored.status == "done" or not retry_failed):
            results[key] = stored
            reused += 1
            reused_failed += stored.status == "failed"
            reused_tokens += stored.prompt_tokens + stored.completion_tokens
        else:
            todo.append(spec)
    if progress and specs:
        progress(ProgressEvent(kind="planned", stage=stage, total=len(seen), reused=reused,
                               reused_failed=reused_failed, reused_tokens=reused_tokens))
    in_use = {r: 0 for r in ("model", "env")}
    running: dict[Any, UnitSpec] = {}

    def fits(spec: UnitSpec) -> bool:
        return all(in_use[r] < caps.get(r, executor.workers) for r in spec.resources)

    while todo or running:
        # Start every unit that fits, in plan order, skipping over units whose resource is saturated.
        skipped: deque[UnitSpec] = deque()
        while todo and len(running) < executor.workers:
            spec = todo.popleft()
            if not fits(spec):
                skipped.append(spec)
                continue
            for r in spec.resources:
                in_use[r] += 1
            if progress:
                progress(ProgressEvent(kind="started", stage=spec.stage, key=spec.key))
            handle = executor.submit(spec.function, spec.model_dump_json(), out_dir)
            running[handle] = spec
        todo.extendleft(reversed(skipped))
        if not running:
            break
        for handle, value in executor.wait(running.keys(), timeout=0.5):
            spec = running.pop(handle)
            for r in spec.resources:
                in_use[r] -= 1
            if isinstance(value, BaseException):
                # The worker died before writing a result (killed, out of memory): record it here.
                result = blocked_result(spec, f"worker failed: {_reason(value)}")
                atomic_write_json(unit_path(out_dir, spec.stage, spec.key), result)
            else:
                result = UnitResult.model_validate_json(value)
            results[spec.key] = result
            if progress:
                progress(ProgressEvent(kind="finished", stage=spec.stage, key=spec.key, result=result))
    return {spec.key: results[spec.key] for spec in specs if spec.key in results}
