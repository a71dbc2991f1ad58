"""The recorder of an agent run, shared by every runtime: its events, model calls, snapshots and accounting,
written to the run folder (the format: :mod:`takeover.trajectories.takeover_run`; docs/protocol.md sections
1, 5 and 8).

A runtime (:class:`takeover.agents.runtime.AgentRuntime`) records through one :class:`RunRecorder`:

- every model call with :meth:`RunRecorder.add_call` (its exact usage, the HTTP attempts, seconds, cost),
  or :meth:`RunRecorder.add_failed_call` for a call that ended in an endpoint error;
- every event with :meth:`RunRecorder.add_event`: actions (``llm_call`` names the call that produced
  them) and observations (``cause`` names the action they answer), each with the ``snapshot`` of the
  workspace after it;
- the snapshot after an action with :meth:`RunRecorder.take_snapshot` while the workspace is in that
  state (a runtime whose loop runs in this process); a runtime that learns of its events afterwards gives
  each event the tree it recorded for it, or none at all (docs/protocol.md section 8.4);
- :meth:`RunRecorder.flush` after every step (or once, for a runtime that writes its events after the
  fact) and :meth:`RunRecorder.write_native` for the runtime's own record.

Writing: new events and calls are appended to ``events.jsonl``/``calls.jsonl`` (each line flushed to disk)
and ``run.json`` is rewritten atomically at every flush, so a crash loses at most the current step.
Everything written is redacted (:func:`takeover._util.redact.redact_obj`).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from takeover._util.io import append_jsonl, atomic_write_json, atomic_write_text
from takeover._util.redact import redact_obj
from takeover.errors import EnvironmentFailure
from takeover.llm import CallAttempt, Usage
from takeover.repository_states import snapshots
from takeover.trajectories.events import Event, LLMCall
from takeover.trajectories.takeover_run import RunAccounting, RunRecord

#: Prefix of the ref that keeps each snapshot tree in the workspace's repository (``git gc`` keeps it).
SNAPSHOT_REF_PREFIX = "refs/takeover/snapshots/"


def git(cwd: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    """Run ``git ARGS`` in ``cwd`` (text output captured; a failure is returned, not raised)."""
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, input=input, check=False)


class RunRecorder:
    """Builds the events, calls and accounting of one run and writes them to its run folder.

    Args:
        out_dir: the run folder.
        record: the run's :class:`RunRecord`; its accounting is updated in place. ``record.workspace`` is
            the repository :meth:`take_snapshot` snapshots.

    Attributes:
        events, calls: everything recorded so far (written or not).
        snapshot: the tree id of the latest snapshot of the workspace (``None`` before the first).
        t_start: ``time.perf_counter()`` at the start of the run (the wall clock of the limits; set by
            :meth:`takeover.agents.runtime.AgentRun.start_clock`).
    """

    def __init__(self, out_dir: Path, record: RunRecord):
        self.out_dir = out_dir
        self.record = record
        self.events: list[Event] = []
        self.calls: list[LLMCall] = []
        self._flushed_events = 0
        self._flushed_calls = 0
        self.snapshot: str | None = None
        self.t_start = time.perf_counter()
        self.events_path = out_dir / "events.jsonl"
        self.calls_path = out_dir / "calls.jsonl"
        self.run_path = out_dir / "run.json"

    # -- accounting ----------------------------------------------------------------------------------
    @property
    def accounting(self) -> RunAccounting:
        """The run's :class:`RunAccounting` (``record.accounting``)."""
        return self.record.accounting

    def elapsed(self) -> float:
        """Seconds since the run's clock started (:attr:`t_start`)."""
        return time.perf_counter() - self.t_start

    def initial_prompt(self, messages: list[dict]) -> None:
        """Count the characters of the system and first user message (``initial_prompt_chars``; chat
        messages ``{"role", "content"}`` as the first model call is sent them)."""
        self.accounting.initial_prompt_chars = sum(len(m.get("content") or "") for m in messages[:2])

    def add_call(
        self,
        usage: Usage,
        attempts: list[CallAttempt],
        seconds: float,
        *,
        format_error: bool,
        cost: float,
    ) -> int:
        """Record one model call that returned a response and add it to the accounting.

        Args:
            usage: the call's usage as the endpoint reported it, estimated counts flagged
                (:func:`takeover.llm.complete_usage`).
            attempts: the call's HTTP attempts (status, seconds, the wait after each, usage).
            seconds: time inside the call, waits between attempts included (seconds).
            format_error: the response was rejected by the action parser.
            cost: US dollars as litellm priced the call.
        Returns:
            The call's index in ``calls.jsonl`` (the ``llm_call`` of the actions it produced).
        """
        call = LLMCall(
            index=len(self.calls),
            usage=usage,
            model=self.record.model.get("model"),
            format_error=format_error,
            seconds=round(seconds, 6),
            attempts=attempts,
        )
        self.calls.append(call)
        acc = self.accounting
        acc.llm_calls += 1
        acc.format_errors += int(format_error)
        acc.prompt_tokens += usage.prompt_tokens
        acc.completion_tokens += usage.completion_tokens
        if usage.cached_tokens is not None:
            acc.cached_tokens = (acc.cached_tokens or 0) + usage.cached_tokens
        if usage.reasoning_tokens is not None:
            acc.reasoning_tokens = (acc.reasoning_tokens or 0) + usage.reasoning_tokens
        if usage.estimated and acc.usage != "unavailable":
            acc.usage = "estimated"
            acc.estimated_calls += 1
        if acc.initial_prompt_tokens is None:
            acc.initial_prompt_tokens = usage.prompt_tokens
        acc.cost += cost
        acc.model_seconds += seconds
        return call.index

    def add_call_without_usage(self, seconds: float, *, format_error: bool = False) -> int:
        """Record one model call that returned a response whose usage nobody recorded (an agent's own
        record that keeps none): the call counts, its tokens are unknown, and the run's ``usage`` becomes
        ``unavailable`` (docs/protocol.md section 1: shown as ``n/a``). Returns the call's index."""
        call = LLMCall(index=len(self.calls), usage=None, model=self.record.model.get("model"),
                       format_error=format_error, seconds=round(seconds, 6))
        self.calls.append(call)
        acc = self.accounting
        acc.llm_calls += 1
        acc.format_errors += int(format_error)
        acc.usage = "unavailable"
        acc.model_seconds += seconds
        return call.index

    def add_failed_call(self, seconds: float) -> None:
        """Count a model call that ended in an endpoint error after its retries (it has no usage;
        ``seconds``: time spent in it, waits included)."""
        self.accounting.failed_calls += 1
        self.accounting.model_seconds += seconds

    # -- events and snapshots ------------------------------------------------------------------------
    def add_event(self, **fields: Any) -> Event:
        """Append one event (the fields of :class:`takeover.trajectories.events.Event` but ``index``, which
        is the next position) and return it; it is written at the next :meth:`flush` that reaches it.

        Raises:
            pydantic.ValidationError: a field is unknown or has a wrong value.
        """
        event = Event(index=len(self.events), **fields)
        self.events.append(event)
        return event

    def take_snapshot(self) -> str:
        """Snapshot the workspace (:func:`takeover.repository_states.snapshots.take_snapshot`); its tree id
        becomes :attr:`snapshot`, and a new tree gets a ref at once, so that ``git gc`` (by the agent or
        later) keeps it. The time spent is the accounting's ``snapshot_seconds``.

        Raises:
            EnvironmentFailure: the snapshot failed (the workspace's repository is broken or gone).
        """
        workspace = Path(self.record.workspace)
        t0 = time.perf_counter()
        try:
            tree = snapshots.take_snapshot(workspace)
            if tree != self.snapshot:
                git(workspace, "update-ref", f"{SNAPSHOT_REF_PREFIX}{tree}", tree)
        except Exception as exc:  # any snapshot failure ends the run as environment_error
            raise EnvironmentFailure(f"snapshot of {workspace} failed: {exc}") from exc
        finally:
            self.accounting.snapshot_seconds += time.perf_counter() - t0
        self.snapshot = tree
        return tree

    # -- writing -------------------------------------------------------------------------------------
    def update_totals(self) -> None:
        """Recount the events and the wall and overhead seconds, and round the times to microseconds."""
        acc = self.accounting
        acc.agent_events = len(self.events)
        acc.actions = sum(1 for e in self.events if e.kind == "action")
        acc.observations = acc.agent_events - acc.actions
        acc.wall_seconds = round(time.perf_counter() - self.t_start, 6)
        acc.overhead_seconds = round(max(0.0, acc.wall_seconds - acc.model_seconds - acc.command_seconds), 6)
        acc.model_seconds = round(acc.model_seconds, 6)
        acc.command_seconds = round(acc.command_seconds, 6)
        acc.snapshot_seconds = round(acc.snapshot_seconds, 6)

    def flush(self, ready: int | None = None) -> None:
        """Append the events not yet written, up to the event of index ``ready`` (excluded; default: all of
        them), and the new calls, then rewrite ``run.json`` atomically.

        ``ready`` holds back the events of a step that is not over (an action whose command still runs has
        no snapshot yet): they are written at a later flush.
        """
        ready = len(self.events) if ready is None else min(ready, len(self.events))
        for event in self.events[self._flushed_events : ready]:
            append_jsonl(self.events_path, redact_obj(event.model_dump(mode="json")))
        self._flushed_events = max(self._flushed_events, ready)
        for call in self.calls[self._flushed_calls :]:
            append_jsonl(self.calls_path, redact_obj(call.model_dump(mode="json")))
        self._flushed_calls = len(self.calls)
        self.update_totals()
        self.write_record()

    def write_native(self, name: str, data: Any) -> Path:
        """Write the runtime's own record of the run (JSON-able ``data``) as ``out_dir/name``, redacted,
        atomically; returns the path."""
        # Redacted string by string: in serialized JSON an observation's "\nghp_..." reads "nghp_...",
        # where no key pattern's word boundary matches.
        plain = json.loads(json.dumps(data, default=str))
        return atomic_write_text(self.out_dir / name, json.dumps(redact_obj(plain)))

    def write_record(self) -> None:
        """Rewrite ``run.json`` (redacted) atomically."""
        atomic_write_json(self.run_path, redact_obj(self.record.model_dump(mode="json")))
