"""The agent loop: mini-swe-agent's ``DefaultAgent`` with the protocol's limits, accounting and snapshots
(docs/protocol.md sections 5 and 8).

mini-swe-agent runs the loop (query the model, parse one action, execute it, render the observation);
:class:`TakeoverAgent` adds what the protocol needs around its hooks:

- ``query``: the run's limits (:class:`~takeover.limits.RunLimits`), each with its own
  :class:`~takeover.vocabulary.ExitStatus`; timing of every model call; usage of every call, format-error
  turns included; an endpoint failure ends the run with ``model_error`` instead of an exception.
- ``execute_actions``: per-command time limit (never more than the wall time left); timing; a snapshot
  of the workspace after every executed action (:meth:`takeover.agents.recorder.RunRecorder.take_snapshot`,
  docs/protocol.md section 5 source (a)).
- ``save`` (called by mini-swe-agent after every step): the recorder writes the step
  (:class:`~takeover.agents.recorder.RunRecorder`, the messages turned into events by
  :class:`~takeover.agents.mini_swe_agent.messages.MessageEvents`); the native trajectory (rewritten
  whole, its cost grows with the run) is rewritten every :data:`NATIVE_EVERY` steps and when the run ends,
  each command's ``raw_output`` clipped to :data:`RAW_OUTPUT_MAX_CHARS` (:func:`clip_raw_outputs`).
"""

from __future__ import annotations

import time
from pathlib import Path

from takeover._util.redact import redact
from takeover.agents.mini_swe_agent import _mswea
from takeover.agents.mini_swe_agent.messages import MessageEvents
from takeover.agents.mini_swe_agent.mswea_model import call_usage
from takeover.agents.recorder import RunRecorder
from takeover.errors import EnvironmentFailure
from takeover.limits import RunLimits
from takeover.llm import ReasoningOnlyReply, Usage
from takeover.vocabulary import ExitStatus

_mswea.load()

from minisweagent.agents.default import DefaultAgent
from minisweagent.exceptions import FormatError, InterruptAgentFlow, Submitted, TimeExceeded

#: Steps between rewrites of the native trajectory (always written at the end).
NATIVE_EVERY = 10

#: Characters of a command's output kept in the native trajectory's ``extra.raw_output`` (head and tail
#: halves): mini-swe-agent keeps the whole output there beside the observation it showed the model (which
#: its observation template clips, as the events do), so two long commands made a 74.8 MB file.
RAW_OUTPUT_MAX_CHARS = 10_000


def clip_raw_outputs(data: dict, limit: int = RAW_OUTPUT_MAX_CHARS) -> dict:
    """``data`` (a serialized native trajectory) with each message's ``extra.raw_output`` longer than
    ``limit`` characters cut to its first and last ``limit // 2`` characters around a line saying how many
    were left out; the messages the agent holds are not changed (the clipped ones are copies)."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        return data
    clipped = []
    for message in messages:
        extra = message.get("extra") if isinstance(message, dict) else None
        raw = extra.get("raw_output") if isinstance(extra, dict) else None
        if isinstance(raw, str) and len(raw) > limit:
            half = limit // 2
            left_out = len(raw) - 2 * half
            raw = (f"{raw[:half]}\n[... {left_out} characters of {len(raw)} left out of the native "
                   f"trajectory ...]\n{raw[-half:]}")
            message = {**message, "extra": {**extra, "raw_output": raw}}
        clipped.append(message)
    return {**data, "messages": clipped}


def _exit_message(status: ExitStatus, detail: str = "") -> dict:
    """mini-swe-agent's ``exit`` message that ends a run with ``status`` (``detail``: the error, if any)."""
    return {
        "role": "exit",
        "content": detail or status.value,
        "extra": {"exit_status": status.value, "submission": "", "exception_str": detail},
    }


class TakeoverAgent(DefaultAgent):
    """mini-swe-agent's ``DefaultAgent`` with the protocol's limits, accounting and snapshots.

    Args:
        model, env: mini-swe-agent's model and environment.
        recorder: records and writes the run (it snapshots the workspace after each command).
        events: turns the run's messages into the recorder's events.
        limits: the run's limits; mini-swe-agent gets its own (``step_limit``, ``cost_limit``,
            ``wall_time_limit_seconds``, ``max_consecutive_format_errors``) from them.
        native_name: file name of mini-swe-agent's own trajectory in the run folder.
        **kwargs: the rest of mini-swe-agent's ``AgentConfig`` (``system_template``, ``instance_template``).
    """

    def __init__(self, model, env, *, recorder: RunRecorder, events: MessageEvents, limits: RunLimits,
                 native_name: str, **kwargs):
        super().__init__(
            model,
            env,
            step_limit=limits.step_limit,
            cost_limit=limits.cost_limit or 0.0,
            wall_time_limit_seconds=int(limits.wall_time_limit_seconds),
            max_consecutive_format_errors=limits.max_consecutive_format_errors,
            **kwargs,
        )
        self.recorder = recorder
        self.events = events
        self.limits = limits
        self.native_name = native_name

    def query(self) -> dict:
        """Check the limits, query the model and record the call (and its actions, or the format error).

        Raises:
            InterruptAgentFlow: a limit is reached, or the endpoint failed (``model_error``).
            TimeExceeded: the wall-time limit is reached.
            FormatError: the response has no action, or more than one (recorded first).
        """
        rec, lim = self.recorder, self.limits
        if self.n_calls >= lim.step_limit:
            raise InterruptAgentFlow(_exit_message(ExitStatus.step_limit))
        if lim.cost_limit is not None and self.cost >= lim.cost_limit:
            raise InterruptAgentFlow(_exit_message(ExitStatus.cost_limit))
        if lim.prompt_token_limit is not None and rec.accounting.prompt_tokens >= lim.prompt_token_limit:
            raise InterruptAgentFlow(_exit_message(ExitStatus.token_limit))
        if rec.elapsed() >= lim.wall_time_limit_seconds:
            raise TimeExceeded(_exit_message(ExitStatus.time_limit))
        if self.n_calls == 0:
            rec.initial_prompt(self.messages)
        self.n_calls += 1
        t0 = time.perf_counter()
        try:
            message = self.model.query(self.messages)
        except FormatError as exc:
            extra = exc.messages[0].get("extra", {})
            call = rec.add_call(
                *call_usage(extra),
                time.perf_counter() - t0,
                format_error=True,
                cost=float(extra.get("cost") or 0.0),
            )
            self.events.add_format_error(exc.messages[0], call)
            raise
        except Exception as exc:  # noqa: BLE001 - endpoint failure after the settings' retries
            if isinstance(exc, ReasoningOnlyReply):  # an answered call: its tokens were spent
                rec.add_call(exc.attempts[-1].usage or Usage(), exc.attempts, time.perf_counter() - t0,
                             format_error=False, cost=0.0)
            else:
                rec.add_failed_call(time.perf_counter() - t0)
            detail = redact(f"{type(exc).__name__}: {exc}")[:2000]
            rec.record.exit_detail = detail
            raise InterruptAgentFlow(_exit_message(ExitStatus.model_error, detail)) from None
        extra = message.get("extra", {})
        call = rec.add_call(
            *call_usage(extra),
            time.perf_counter() - t0,
            format_error=False,
            cost=float(extra.get("cost") or 0.0),
        )
        self.cost += extra.get("cost", 0.0)
        self.add_messages(message)
        self.events.add_actions(message, call)
        return message

    def execute_actions(self, message: dict) -> list[dict]:
        """Run the response's actions, each within ``command_timeout`` and the wall time left, snapshot the
        workspace after each, and record the observations.

        Raises:
            Submitted: an action was the submission command (its observation is recorded first).
            InterruptAgentFlow: the environment failed (``environment_error``).
        """
        rec, events, lim = self.recorder, self.events, self.limits
        actions = message.get("extra", {}).get("actions", [])
        outputs: list[dict] = []
        try:
            for position, action in enumerate(actions):
                remaining = lim.wall_time_limit_seconds - rec.elapsed()
                timeout = max(1.0, min(lim.command_timeout, remaining))
                t0 = time.perf_counter()
                try:
                    output = self.env.execute(action, timeout=timeout)
                except Submitted as exc:
                    rec.accounting.command_seconds += time.perf_counter() - t0
                    events.command_done(position, rec.take_snapshot(), finish=True)
                    observations = self.model.format_observation_messages(
                        message, outputs, self.get_template_vars()
                    )
                    submission = exc.messages[0].get("extra", {}).get("submission", "")
                    events.add_observations(observations[: len(outputs)], submission=submission)
                    raise
                rec.accounting.command_seconds += time.perf_counter() - t0
                outputs.append(output)
                events.command_done(position, rec.take_snapshot(), finish=False)
        except EnvironmentFailure as exc:
            detail = redact(str(exc))[:2000]
            rec.record.exit_detail = detail
            events.drop_unexecuted(len(outputs))
            observations = self.model.format_observation_messages(message, outputs, self.get_template_vars())
            events.add_observations(observations[: len(outputs)])
            raise InterruptAgentFlow(_exit_message(ExitStatus.environment_error, detail)) from None
        observations = self.model.format_observation_messages(message, outputs, self.get_template_vars())
        events.add_observations(observations)
        return self.add_messages(*observations)

    def save(self, path: Path | None, *extra_dicts) -> dict | None:
        """Write the step (called by mini-swe-agent after every step; ``path`` is unused: the recorder
        knows the run folder). Returns the native trajectory when it was rewritten, else ``None``."""
        # The native trajectory is rewritten whole, so its cost grows with the run: every
        # NATIVE_EVERY steps and at the end. events.jsonl/calls.jsonl/run.json are written every step.
        ended = bool(self.messages) and self.messages[-1].get("role") == "exit"
        data = self.serialize(*extra_dicts) if ended or self.n_calls % NATIVE_EVERY == 0 else None
        if data is not None:
            data = clip_raw_outputs(data)
            self.recorder.write_native(self.native_name, data)
        self.recorder.flush(self.events.ready())
        return data
