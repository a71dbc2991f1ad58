"""Running units of work: resumability, executors (local processes or Ray) and concurrency caps.

:func:`run_units` takes the planned units of one stage and, for each, reuses the stored result when its
key (hash of its inputs) has one, and otherwise sends it to an executor. Caps are enforced by the
coordinator, the same way for every executor: at most ``workers`` units in flight, at most
``caps["model"]`` of those that call a model and ``caps["env"]`` of those that use a test environment.
A unit holds its resources for its whole duration (a takeover run holds a model slot and an environment
slot from start to end), which is what bounds the load on an endpoint and on the machine.

A worker that dies while it runs a unit (killed, out of memory, its Ray node lost) loses only that unit:
it is redone, up to :data:`LOST_UNIT_REDOS` times, then recorded as failed; every unit that finished
before is in its result file already. Worker processes end with the coordinator: each one is told by the
kernel when the coordinator dies, and watches it too, and then kills every command it started before it
exits (:func:`takeover._util.processes.end_descendants`).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from takeover._util.io import atomic_write_json
from takeover._util.processes import end_descendants, end_with_parent
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
#: Units that become plannable when a unit ends: ``(runnable specs, blocked (spec, reason) pairs)``.
FollowUp = tuple[list[UnitSpec], list[tuple[UnitSpec, str]]]

#: How many times a unit whose worker died is redone before it is recorded as failed.
LOST_UNIT_REDOS = 2
#: Seconds between two looks of a worker process at its coordinator.
PARENT_WATCH_INTERVAL = 0.5


class WorkerLost(Exception):
    """The worker that ran a unit died before it returned (killed, out of memory, its Ray node lost)."""


class ProgressEvent(BaseModel):
    """What the engine reports as it goes: ``planned`` (with the number of units and of those reused),
    ``started`` and ``finished`` (with the result) for each unit that runs, and ``redo`` (with the
    ``reason``) when a unit's worker died and the unit is sent again.

    Units of a stage that follow others (:func:`run_units` ``follow``) are ``planned`` once with the
    stage's full count and ``follows`` set (which of them are reused is not known yet); each then comes as
    ``finished``, with ``reused_result`` when its stored result was taken, with ``blocked`` when it could
    not run (its result says why)."""

    kind: Literal["planned", "started", "finished", "redo"]
    stage: str
    total: int = 0
    reused: int = 0
    reused_failed: int = 0
    reused_tokens: int = 0
    key: str | None = None
    result: UnitResult | None = None
    labels: dict[str, Any] = Field(default_factory=dict)
    reason: str | None = None
    blocked: bool = False
    reused_result: bool = False
    follows: bool = False


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
        """Finished handles with their result JSON, the exception that escaped the unit, or a
        :class:`WorkerLost` when the worker died; waits at most ``timeout`` seconds for the first one."""
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


def guard_worker(coordinator: int) -> None:
    """Make this worker process end with its coordinator (pid ``coordinator``), taking every command it
    started with it. The initializer of :class:`ProcessExecutor`'s workers.

    Three ways in: the kernel sends SIGTERM when the coordinator dies (Linux ``PR_SET_PDEATHSIG``), a
    thread looks every :data:`PARENT_WATCH_INTERVAL` seconds whether the coordinator is still the parent
    (any platform), and the pool's own ``terminate`` sends SIGTERM. Each kills every process below this
    worker (and the sessions they lead, :func:`takeover._util.processes.end_descendants`), then exits. Ctrl-C
    on
    a terminal is the coordinator's to handle (it ends the workers this way): a worker lets SIGINT pass, so
    that no unit is recorded as failed because of it. (A handler, not SIG_IGN: an ignored signal would stay
    ignored in the commands the unit runs, tests included.)
    """
    signal.signal(signal.SIGINT, _let_pass)
    signal.signal(signal.SIGTERM, _end_worker)
    end_with_parent(coordinator, signal.SIGTERM)

    def watch() -> None:
        while os.getppid() == coordinator:
            threading.Event().wait(PARENT_WATCH_INTERVAL)
        _end_worker()

    threading.Thread(target=watch, name="takeover-coordinator-watch", daemon=True).start()


def _let_pass(signum: int, frame: Any) -> None:
    """SIGINT in a worker: nothing (the coordinator decides)."""


def _end_worker(signum: int | None = None, frame: Any = None) -> None:
    end_descendants()
    os._exit(128 + (signum or signal.SIGTERM))


class ProcessExecutor(Executor):
    """``workers`` worker processes (``concurrent.futures.ProcessPoolExecutor``, spawn start method so
    that no thread of the coordinator, such as the live display, is forked). Each worker ends with the
    coordinator (:func:`guard_worker`).

    When a worker dies, the pool breaks and ends its other workers too: every unit in flight comes back as
    :class:`WorkerLost` (:func:`run_units` redoes them) and the next :meth:`submit` starts a new pool.
    """

    def __init__(self, workers: int):
        self.workers = workers
        self._pool = self._new_pool()

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                                      initializer=guard_worker, initargs=(os.getpid(),))

    def submit(self, function: Callable, spec_json: str, out_dir: str) -> cf.Future:
        """Send the unit to a worker process; the handle is its future."""
        try:
            return self._pool.submit(execute_unit, function, spec_json, out_dir)
        except cf.process.BrokenProcessPool:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = self._new_pool()
            return self._pool.submit(execute_unit, function, spec_json, out_dir)

    def wait(self, handles, timeout):
        """The futures that finished within ``timeout`` seconds; a dead worker's units are :class:`WorkerLost`."""
        done, _ = cf.wait(list(handles), timeout=timeout, return_when=cf.FIRST_COMPLETED)
        out: list[tuple[Any, str | BaseException]] = []
        for fut in done:
            try:
                out.append((fut, fut.result()))
            except cf.process.BrokenProcessPool as exc:
                out.append((fut, WorkerLost(f"a worker process died ({exc})")))
            except BaseException as exc:  # noqa: BLE001 - an exception that escaped the unit fails it
                out.append((fut, exc))
        return out

    def close(self, *, terminate: bool = False) -> None:
        """Shut the pool down; with ``terminate`` (the run is being interrupted), end the workers first
        (each kills the commands it started) so that no unit keeps running without a coordinator (its
        result would be redone anyway)."""
        if terminate:
            for proc in list(getattr(self._pool, "_processes", {}).values()):
                proc.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor(Executor):
    """Runs units as Ray tasks (optional extra ``ray``).

    ``address=None`` starts a private local Ray instance bound to 127.0.0.1 with ``workers`` CPUs and no
    dashboard; otherwise ``ray.init(address=...)`` joins an existing cluster (``"auto"`` or
    ``ray://host:10001``). On a cluster, every node needs ``takeover`` installed and the output folder on
    a shared file system, because each task writes its unit result file itself; the result records the
    Ray node that ran it (``UnitResult.node``).

    Ray does not retry a task itself (``max_retries=0``): a task whose worker or node died comes back as
    :class:`WorkerLost` and :func:`run_units` sends it again, wherever Ray places it.
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
        self._remote = ray.remote(num_cpus=1, max_retries=0)(execute_unit_on_ray)
        errors = ray.exceptions
        self._lost = (errors.WorkerCrashedError, errors.NodeDiedError, errors.ObjectLostError,
                      errors.LocalRayletDiedError, errors.OutOfMemoryError)

    def submit(self, function: Callable, spec_json: str, out_dir: str):
        """Start the unit as a Ray task; the handle is its object reference."""
        return self._remote.remote(function, spec_json, out_dir)

    def wait(self, handles, timeout):
        """The first task that finished within ``timeout`` seconds; a task whose worker or node died is
        :class:`WorkerLost`, any other error its exception."""
        handles = list(handles)
        if not handles:
            return []
        ready, _ = self.ray.wait(handles, num_returns=1, timeout=timeout)
        out: list[tuple[Any, str | BaseException]] = []
        for ref in ready:
            try:
                out.append((ref, self.ray.get(ref)))
            except self._lost as exc:
                out.append((ref, WorkerLost(f"the Ray worker died ({type(exc).__name__}: {_first_line(exc)})")))
            except Exception as exc:  # noqa: BLE001 - an exception that escaped the unit fails it
                out.append((ref, exc))
        return out

    def close(self, *, terminate: bool = False) -> None:
        """Shut down the Ray instance this executor started (a joined cluster is left running)."""
        if self._owned:
            self.ray.shutdown()


def execute_unit_on_ray(function: Callable, spec_json: str, out_dir: str) -> str:
    """:func:`~takeover.experiments.units.execute_unit` in a Ray task, recording the Ray node id."""
    import ray

    return execute_unit(function, spec_json, out_dir, node=ray.get_runtime_context().get_node_id())


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]


def make_executor(kind: str, workers: int, *, ray_address: str | None = None) -> Executor:
    """``local``: ``workers`` worker processes that end with this one (even one: a unit never runs in the
    coordinator, so that killing the coordinator ends every command of the run); ``ray``: Ray tasks;
    ``inline``: one unit at a time in this process (for debugging and tests).

    Raises:
        ValueError: an unknown kind.
        EnvironmentUnavailable: ``ray`` without the ``ray`` extra installed.
    """
    if kind == "ray":
        return RayExecutor(workers, ray_address)
    if kind == "inline":
        return InlineExecutor()
    if kind != "local":
        raise ValueError(f"unknown executor {kind!r} (local or ray)")
    return ProcessExecutor(workers)


def run_units(
    specs: list[UnitSpec],
    out_dir: Path | str,
    executor: Executor,
    *,
    caps: dict[str, int] | None = None,
    retry_failed: bool = False,
    progress: ProgressCallback | None = None,
    follow: Callable[[UnitSpec, UnitResult], FollowUp] | None = None,
    following: dict[str, int] | None = None,
) -> dict[str, UnitResult]:
    """Run the units that have no stored result (and, with ``retry_failed``, those whose stored result
    failed); return every unit's result by key, in the order of ``specs`` and then of the units added by
    ``follow``. Blocked units (from ``follow``) have no result here.

    Args:
        specs: the planned units (duplicate keys are run once); they may belong to several stages.
        caps: ``{"model": n, "env": m}``: most units holding each resource at a time.
        retry_failed: redo units whose stored result is ``failed``.
        progress: called with :class:`ProgressEvent` as units are planned, start, finish and are redone.
        follow: called with each unit and its result as soon as it is known (stored or new); returns the
            units of a later stage that it makes plannable (and those it blocks), which join the queue. So a
            takeover run starts as soon as its view is written, and its grading as soon as it ends, while
            other units still run.
        following: the number of units ``follow`` will add, per stage (for progress; blocked ones count).

    A unit whose worker died (:class:`WorkerLost`) is sent again, at most :data:`LOST_UNIT_REDOS` times;
    then its result is written as failed (``infrastructure``) with the reason. When its result file was
    written before the worker died, that result is taken as it is.
    """
    out_dir = str(out_dir)
    caps = caps or {}
    results: dict[str, UnitResult] = {}
    order: list[str] = []
    todo: deque[UnitSpec] = deque()
    seen: set[str] = set()
    reused: dict[str, list[int]] = {}

    def stored(spec: UnitSpec) -> UnitResult | None:
        found, problem = check_result(out_dir, spec.stage, spec.key, spec.inputs.get("instance_id"))
        if problem:
            note_rejected(out_dir, spec.stage, spec.key, problem)
        return found if found is not None and (found.status == "done" or not retry_failed) else None

    def settle(spec: UnitSpec, result: UnitResult) -> None:
        """A unit's result is known: keep it and queue (or reuse) what follows from it."""
        results[spec.key] = result
        if follow is None:
            return
        more, blocked = follow(spec, result)
        for b, reason in blocked:
            if progress:
                progress(ProgressEvent(kind="finished", stage=b.stage, key=b.key, labels=b.labels, blocked=True,
                                       result=blocked_result(b, reason)))
        for f in more:
            if f.key in seen:
                continue
            seen.add(f.key)
            order.append(f.key)
            found = stored(f)
            if found is None:
                todo.append(f)
                continue
            if progress:
                progress(ProgressEvent(kind="finished", stage=f.stage, key=f.key, labels=f.labels, result=found,
                                       reused_result=True))
            settle(f, found)

    found_first: list[tuple[UnitSpec, UnitResult]] = []
    for spec in specs:
        if spec.key in seen:
            continue
        seen.add(spec.key)
        order.append(spec.key)
        count = reused.setdefault(spec.stage, [0, 0, 0, 0])
        count[0] += 1
        found = stored(spec)
        if found is None:
            todo.append(spec)
        else:
            found_first.append((spec, found))
            count[1] += 1
            count[2] += found.status == "failed"
            count[3] += found.prompt_tokens + found.completion_tokens
    if progress:
        for stage, (total, n, n_failed, tokens) in reused.items():
            progress(ProgressEvent(kind="planned", stage=stage, total=total, reused=n, reused_failed=n_failed,
                                   reused_tokens=tokens))
        for stage, total in (following or {}).items():
            progress(ProgressEvent(kind="planned", stage=stage, total=total, follows=True))
    for spec, found in found_first:  # stored results may make later units plannable at once
        settle(spec, found)
    in_use = {r: 0 for r in ("model", "env")}
    running: dict[Any, UnitSpec] = {}
    lost: dict[str, int] = {}

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
                progress(ProgressEvent(kind="started", stage=spec.stage, key=spec.key, labels=spec.labels))
            handle = executor.submit(spec.function, spec.model_dump_json(), out_dir)
            running[handle] = spec
        todo.extendleft(reversed(skipped))
        if not running:
            break
        for handle, value in executor.wait(running.keys(), timeout=0.5):
            spec = running.pop(handle)
            for r in spec.resources:
                in_use[r] -= 1
            if isinstance(value, WorkerLost):
                found, _ = check_result(out_dir, spec.stage, spec.key, spec.inputs.get("instance_id"))
                if found is not None and found.status == "done":
                    value = found.model_dump_json()  # it finished; only the reply was lost
                elif lost.get(spec.key, 0) < LOST_UNIT_REDOS:
                    lost[spec.key] = lost.get(spec.key, 0) + 1
                    todo.appendleft(spec)
                    if progress:
                        progress(ProgressEvent(kind="redo", stage=spec.stage, key=spec.key, labels=spec.labels,
                                               reason=str(value)))
                    continue
                else:
                    value = RuntimeError(f"{value}; {LOST_UNIT_REDOS + 1} attempts")
            if isinstance(value, BaseException):
                # No result file from the worker (it died every time, or the unit raised past the engine).
                result = blocked_result(spec, f"worker failed: {_reason(value)}")
                atomic_write_json(unit_path(out_dir, spec.stage, spec.key), result)
            else:
                result = UnitResult.model_validate_json(value)
            if progress:
                progress(ProgressEvent(kind="finished", stage=spec.stage, key=spec.key, labels=spec.labels,
                                       result=result))
            settle(spec, result)
    return {key: results[key] for key in order if key in results}
