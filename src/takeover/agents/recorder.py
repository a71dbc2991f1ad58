"""The recorder of an agent run: its events, model calls and accounting, written to the run folder step by
step (the format: :mod:`takeover.trajectories.takeover_run`; docs/protocol.md sections 1 and 8).

Events: each executed action is one ``action`` event followed by one ``observation`` event, both with the
snapshot taken after the command; a format-error turn is an ``action`` (``format_error``) plus the
harness's reminder (``observation`` from ``user``), both with the unchanged snapshot; the submission
command is an action of type ``finish`` and its observation holds the submitted text.

Writing: new events and calls are appended to ``events.jsonl``/``calls.jsonl`` (each line flushed to disk)
and ``run.json`` is rewritten atomically after every step, so a crash loses at most the current step.
Everything written is redacted (:func:`takeover._util.redact.redact_obj`).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from takeover._util.io import append_jsonl, atomic_write_json, atomic_write_text
from takeover._util.redact import redact_obj
from takeover.llm import CallAttempt, Usage
from takeover.trajectories.events import Event, LLMCall
from takeover.trajectories.takeover_run import RunAccounting, RunRecord
from takeover.vocabulary import ActionProtocol


class RunRecorder:
    """Builds the events, calls and accounting of one run and writes them to its run folder.

    Args:
        out_dir: the run folder.
        record: the run's :class:`RunRecord`; its accounting is updated in place.
        protocol: the action protocol, which decides how an action's text and thought are recorded.
        action_regex: the text protocol's pattern of an action block (removed from the thought).

    Attributes:
        events, calls: everything recorded so far (written or not).
        snapshot: the tree id of the latest snapshot of the workspace (``None`` before the first).
        t_start: ``time.perf_counter()`` at the start of the run (the wall clock of the limits).
    """

    def __init__(
        self,
        out_dir: Path,
        record: RunRecord,
        *,
        protocol: ActionProtocol,
        action_regex: str,
    ):
        self.out_dir = out_dir
        self.record = record
        self.protocol = protocol
        self.action_regex = action_regex
        self.events: list[Event] = []
        self.calls: list[LLMCall] = []
        self._flushed_events = 0
        self._flushed_calls = 0
        self.snapshot: str | None = None
        self.t_start = time.perf_counter()
        self.trajectory_path = out_dir / f"{record.instance_id}.traj.json"
        self.events_path = out_dir / "events.jsonl"
        self.calls_path = out_dir / "calls.jsonl"
        self.run_path = out_dir / "run.json"
        self._open_actions: list[int] = []  # action events of the current step awaiting an observation

    # -- accounting ----------------------------------------------------------------------------------
    @property
    def accounting(self) -> RunAccounting:
        """The run's :class:`RunAccounting` (``record.accounting``)."""
        return self.record.accounting

    def initial_prompt(self, messages: list[dict]) -> None:
        """Count the characters of the system and first user message (``initial_prompt_chars``)."""
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
        """Record one model call and add it to the accounting.

        Args:
            usage: the call's usage, estimated counts flagged (:func:`takeover.agents.mswea_model.call_usage`).
            attempts: the call's HTTP attempts (status, seconds, the wait after each, usage).
            seconds: time inside the call, waits between attempts included (seconds).
            format_error: the response was rejected by the action parser.
            cost: US dollars as litellm priced the call.
        Returns:
            The call's index in ``calls.jsonl``.
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
        if usage.estimated:
            acc.usage = "estimated"
            acc.estimated_calls += 1
        if acc.initial_prompt_tokens is None:
            acc.initial_prompt_tokens = usage.prompt_tokens
        acc.cost += cost
        acc.model_seconds += seconds
        return call.index

    # -- events --------------------------------------------------------------------------------------
    def _add(self, **fields) -> Event:
        event = Event(index=len(self.events), **fields)
        self.events.append(event)
        return event

    def _thought(self, content: str) -> str:
        if self.protocol == "text":
            return re.sub(self.action_regex, "", content, flags=re.DOTALL).strip()
        return content.strip()

    def add_actions(self, message: dict, call_index: int) -> None:
        """Record the actions of a parsed response (mini-swe-agent's ``extra.actions``); they await their
        snapshot (:meth:`command_done`) and their observation (:meth:`add_observations`)."""
        content = message.get("content") or ""
        actions = message.get("extra", {}).get("actions", [])
        self._open_actions = []
        for i, action in enumerate(actions):
            command = action.get("command", "")
            if self.protocol == "text":
                text = content
            else:
                text = (
                    content.strip() + "\n\n" if i == 0 and content.strip() else ""
                ) + f"```bash\n{command}\n```"
            ev = self._add(
                kind="action",
                source="agent",
                type="command",
                text=text,
                thought=self._thought(content) if i == 0 else None,
                command=command,
                llm_call=call_index,
                cwd=self.record.command_root or self.record.workspace,
            )
            self._open_actions.append(ev.index)

    def add_format_error(self, error_message: dict, call_index: int) -> None:
        """Record a format-error turn: the rejected response and the harness's reminder (``error_message``,
        mini-swe-agent's ``FormatError`` message), both with the unchanged snapshot."""
        extra = error_message.get("extra", {})
        response = extra.get("response")
        text = extra.get("model_response")
        if text is None and isinstance(response, dict):
            try:
                text = response["choices"][0]["message"].get("content") or ""
                calls = response["choices"][0]["message"].get("tool_calls") or []
                text += "".join(
                    f"\n[tool call {c['function']['name']}: {c['function']['arguments']}]" for c in calls
                )
            except (KeyError, IndexError, TypeError):
                text = ""
        action = self._add(
            kind="action",
            source="agent",
            type="message",
            text=text or "",
            thought=(text or "").strip() or None,
            llm_call=call_index,
            format_error=True,
            snapshot=self.snapshot,
        )
        self._add(
            kind="observation",
            source="user",
            type="message",
            text=error_message.get("content") or "",
            cause=action.index,
            snapshot=self.snapshot,
        )

    def command_done(self, position: int, snapshot: str | None, *, finish: bool) -> None:
        """The command of the ``position``-th open action ran: give its event the ``snapshot`` taken after
        it, and the type ``finish`` when it was the submission."""
        event = self.events[self._open_actions[position]]
        event.snapshot = snapshot
        if finish:
            event.type = "finish"

    def drop_unexecuted(self, executed: int) -> None:
        """Only the first ``executed`` open actions ran: the others get no observation (the run ends)."""
        self._open_actions = self._open_actions[:executed]

    def add_observations(self, observations: list[dict], submission: str | None = None) -> None:
        """Record one observation per executed open action (mini-swe-agent's observation messages, in
        order), then the submitted text as the observation of the submission command, if any."""
        # Observations follow all actions of their response, so each shows the latest repository state.
        for position, obs in enumerate(observations):
            action = self.events[self._open_actions[position]]
            self._add(
                kind="observation",
                source="environment",
                type=action.type,
                text=obs.get("content") or "",
                cause=action.index,
                exit_code=obs.get("extra", {}).get("returncode"),
                snapshot=self.snapshot,
            )
        if submission is not None:
            action = self.events[self._open_actions[len(observations)]]
            self._add(
                kind="observation",
                source="environment",
                type="finish",
                text=submission,
                cause=action.index,
                exit_code=0,
                snapshot=self.snapshot,
            )
        self._open_actions = []

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

    def flush(self, native: dict | None) -> None:
        """Append new events and calls, then rewrite ``run.json`` and, when ``native`` (mini-swe-agent's
        serialized trajectory) is given, the native trajectory, atomically.

        Events of an action whose command has not finished yet stay in memory until the next flush.
        """
        ready = len(self.events)
        if self._open_actions:
            ready = min(ready, self._open_actions[0])
        for event in self.events[self._flushed_events : ready]:
            append_jsonl(self.events_path, redact_obj(event.model_dump(mode="json")))
        self._flushed_events = max(self._flushed_events, ready)
        for call in self.calls[self._flushed_calls :]:
            append_jsonl(self.calls_path, redact_obj(call.model_dump(mode="json")))
        self._flushed_calls = len(self.calls)
        self.update_totals()
        if native is not None:
            # Redacted string by string: in serialized JSON an observation's "\nghp_..." reads "nghp_...",
            # where no key pattern's word boundary matches.
            plain = json.loads(json.dumps(native, default=str))
            atomic_write_text(self.trajectory_path, json.dumps(redact_obj(plain)))
        self.write_record()

    def write_record(self) -> None:
        """Rewrite ``run.json`` (redacted) atomically."""
        atomic_write_json(self.run_path, redact_obj(self.record.model_dump(mode="json")))
