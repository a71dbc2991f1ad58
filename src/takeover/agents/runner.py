"""Predecessor and takeover runs over mini-swe-agent's ``DefaultAgent`` (docs/protocol.md sections 5 and 8).

mini-swe-agent runs the loop (query the model, parse one action, execute it, render the observation);
:class:`TakeoverAgent` adds what the protocol needs around its hooks:

- ``query``: our limits (steps, wall time, prompt tokens, cost), each with its own :class:`ExitStatus`;
  timing of every model call; usage of every call, format-error turns included; an endpoint failure ends
  the run with ``model_error`` instead of an exception.
- ``execute_actions``: per-command time limit (never more than the wall time left); timing; a snapshot
  of the workspace after every executed action (:func:`takeover.snapshots.take_snapshot`, docs/protocol.md
  section 5 source (a)).
- ``save`` (called by mini-swe-agent after every step): appends the step's events and calls to
  ``events.jsonl``/``calls.jsonl`` with fsync and rewrites ``run.json`` atomically, so a crash loses at
  most the current step; the native trajectory (rewritten whole, its cost grows with the run) is
  rewritten every ``NATIVE_EVERY`` steps and when the run ends.

Run directory (``out_dir``)::

    run.json              RunRecord (accounting, exit status, model settings without secrets, versions)
    prompt.md             the prompt given to the agent (task prompt, or a view's takeover prompt)
    events.jsonl          one takeover.trajectories.events.Event per line
    calls.jsonl           one LLMCall per line (usage of every model call)
    <instance_id>.traj.json  mini-swe-agent's native trajectory (format mini-swe-agent-1.1)
    patch.diff            final diff of the workspace against base_commit (untracked files included)
    workspace/            the repository; its .git keeps every snapshot tree (refs/takeover/snapshots/*)

Events: each executed action is one ``action`` event followed by one ``observation`` event, both with the
snapshot taken after the command; a format-error turn is an ``action`` (``format_error``) plus the
harness's reminder (``observation`` from ``user``), both with the unchanged snapshot; the submission
command is an action of type ``finish`` and its observation holds the submitted text.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from takeover import sandbox
from takeover._io import (
    append_jsonl,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    sha256_text,
    stable_hash,
)
from takeover.agents import _mswea
from takeover.agents.environment import (
    TESTBED,
    EnvironmentFailure,
    command_root,
    git_alternates,
    make_environment,
)
from takeover.agents.model import make_model, usage_of
from takeover.agents.records import ExitStatus, Protocol, RunLimits, RunRecord, TakeoverOrigin
from takeover.checkpoints import load_checkpoint
from takeover.errors import EnvironmentUnavailable, InputError
from takeover.models import ModelSettings
from takeover.redact import redact, redact_obj
from takeover.repos import RepoSource
from takeover.tasks import SourceTask
from takeover.trajectories.events import Event, LLMCall

_mswea.load()

from minisweagent.agents.default import DefaultAgent
from minisweagent.exceptions import FormatError, InterruptAgentFlow, Submitted, TimeExceeded

SNAPSHOT_REF_PREFIX = "refs/takeover/snapshots/"
NATIVE_EVERY = 10  # steps between rewrites of the native trajectory (always written at the end)
_MSWEA_EXIT = {"Submitted": ExitStatus.submitted, "RepeatedFormatError": ExitStatus.format_errors}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _exit_message(status: ExitStatus, detail: str = "") -> dict:
    return {
        "role": "exit",
        "content": detail or status.value,
        "extra": {"exit_status": status.value, "submission": "", "exception_str": detail},
    }


def _snapshot_functions():
    """``(take_snapshot, snapshot_patch, patch_bytes)`` from :mod:`takeover.snapshots` (issue 4)."""
    from takeover import snapshots

    return snapshots.take_snapshot, snapshots.snapshot_patch, snapshots.patch_bytes


class _Recorder:
    """Builds events, calls and the accounting of one run, and writes the run directory step by step."""

    def __init__(
        self, out_dir: Path, record: RunRecord, *, model_name: str, protocol: str, action_regex: str
    ):
        self.out_dir = out_dir
        self.record = record
        self.model_name = model_name
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
    def acc(self):
        return self.record.accounting

    def initial_prompt(self, messages: list[dict]) -> None:
        self.acc.initial_prompt_chars = sum(len(m.get("content") or "") for m in messages[:2])

    def add_call(
        self,
        response: Any,
        prompt_messages: list[dict],
        text: str,
        seconds: float,
        *,
        format_error: bool,
        cost: float,
    ):
        usage = usage_of(
            response, model_name=self.model_name, prompt_messages=prompt_messages, completion_text=text
        )
        call = LLMCall(
            index=len(self.calls),
            usage=usage,
            model=self.record.model.get("name"),
            format_error=format_error,
            seconds=round(seconds, 6),
        )
        self.calls.append(call)
        acc = self.acc
        acc.llm_calls += 1
        acc.format_errors += int(format_error)
        acc.prompt_tokens += usage.prompt_tokens
        acc.completion_tokens += usage.completion_tokens
        if usage.cached_tokens is not None:
            acc.cached_tokens = (acc.cached_tokens or 0) + usage.cached_tokens
        if usage.estimated:
            acc.usage = "estimated"
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
        event = self.events[self._open_actions[position]]
        event.snapshot = snapshot
        if finish:
            event.type = "finish"

    def add_observations(self, observations: list[dict], submission: str | None = None) -> None:
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
        acc = self.acc
        acc.agent_events = len(self.events)
        acc.actions = sum(1 for e in self.events if e.kind == "action")
        acc.observations = acc.agent_events - acc.actions
        acc.wall_seconds = round(time.perf_counter() - self.t_start, 6)
        acc.overhead_seconds = round(max(0.0, acc.wall_seconds - acc.model_seconds - acc.command_seconds), 6)
        acc.model_seconds = round(acc.model_seconds, 6)
        acc.command_seconds = round(acc.command_seconds, 6)
        acc.snapshot_seconds = round(acc.snapshot_seconds, 6)

    def flush(self, native: dict | None) -> None:
        """Append new events and calls (fsync), then rewrite run.json and the native trajectory atomically.

        Events of an action whose command has not finished yet stay in memory until the next flush.
        """
        ready = len(self.events)
        if self._open_actions:
            ready = min(ready, self._open_actions[0])
        if ready > self._flushed_events:
            _append_many(
                self.events_path,
                [redact_obj(e.model_dump(mode="json")) for e in self.events[self._flushed_events : ready]],
            )
            self._flushed_events = ready
        if len(self.calls) > self._flushed_calls:
            _append_many(
                self.calls_path,
                [redact_obj(c.model_dump(mode="json")) for c in self.calls[self._flushed_calls :]],
            )
            self._flushed_calls = len(self.calls)
        self.update_totals()
        if native is not None:
            # Redacted string by string: in serialized JSON an observation's "\nghp_..." reads "nghp_...",
            # where no key pattern's word boundary matches.
            plain = json.loads(json.dumps(native, default=str))
            atomic_write_text(self.trajectory_path, json.dumps(redact_obj(plain)))
        self.write_record()

    def write_record(self) -> None:
        atomic_write_json(self.run_path, redact_obj(self.record.model_dump(mode="json")))


def _append_many(path: Path, rows: list[dict]) -> None:
    if len(rows) == 1:
        append_jsonl(path, rows[0])
        return
    import os

    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        fh.flush()
        os.fsync(fh.fileno())


class TakeoverAgent(DefaultAgent):
    """mini-swe-agent's ``DefaultAgent`` with the protocol's limits, accounting and snapshots.

    Keyword arguments beyond ``DefaultAgent``'s: ``recorder`` (internal), ``limits`` (:class:`RunLimits`),
    ``workspace`` (host path snapshotted after each command) and ``snapshot`` (the snapshot function,
    ``None`` to record no snapshots).
    """

    def __init__(
        self, model, env, *, recorder: _Recorder, limits: RunLimits, workspace: Path, snapshot, **kwargs
    ):
        super().__init__(model, env, **kwargs)
        self.recorder = recorder
        self.limits = limits
        self.workspace = workspace
        self.snapshot_fn = snapshot

    def _elapsed(self) -> float:
        return time.perf_counter() - self.recorder.t_start

    def query(self) -> dict:
        rec, lim = self.recorder, self.limits
        if self.n_calls >= lim.steps:
            raise InterruptAgentFlow(_exit_message(ExitStatus.step_limit))
        if lim.cost is not None and self.cost >= lim.cost:
            raise InterruptAgentFlow(_exit_message(ExitStatus.cost_limit))
        if lim.prompt_tokens is not None and rec.acc.prompt_tokens >= lim.prompt_tokens:
            raise InterruptAgentFlow(_exit_message(ExitStatus.token_limit))
        if self._elapsed() >= lim.wall_seconds:
            raise TimeExceeded(_exit_message(ExitStatus.time_limit))
        if self.n_calls == 0:
            rec.initial_prompt(self.messages)
        self.n_calls += 1
        prompt_messages = list(self.messages)
        t0 = time.perf_counter()
        try:
            message = self.model.query(self.messages)
        except FormatError as exc:
            extra = exc.messages[0].get("extra", {})
            call = rec.add_call(
                extra.get("response"),
                prompt_messages,
                extra.get("model_response") or "",
                time.perf_counter() - t0,
                format_error=True,
                cost=float(extra.get("cost") or 0.0),
            )
            rec.add_format_error(exc.messages[0], call)
            raise
        except Exception as exc:  # noqa: BLE001 - endpoint failure after the settings' retries
            rec.acc.failed_calls += 1
            rec.acc.model_seconds += time.perf_counter() - t0
            detail = redact(f"{type(exc).__name__}: {exc}")[:2000]
            rec.record.exit_detail = detail
            raise InterruptAgentFlow(_exit_message(ExitStatus.model_error, detail)) from None
        extra = message.get("extra", {})
        calls_text = "".join(
            str((c.get("function") or {}).get("arguments") or "") for c in message.get("tool_calls") or []
        )
        call = rec.add_call(
            extra.get("response"),
            prompt_messages,
            (message.get("content") or "") + calls_text,  # what the completion held, for estimates
            time.perf_counter() - t0,
            format_error=False,
            cost=float(extra.get("cost") or 0.0),
        )
        self.cost += extra.get("cost", 0.0)
        self.add_messages(message)
        rec.add_actions(message, call)
        return message

    def _take_snapshot(self) -> str | None:
        if self.snapshot_fn is None:
            return None
        t0 = time.perf_counter()
        try:
            tree = self.snapshot_fn(self.workspace)
            if tree != self.recorder.snapshot:
                # A ref per new tree, as it is taken: `git gc` (by the agent or later) keeps it.
                _git(self.workspace, "update-ref", f"{SNAPSHOT_REF_PREFIX}{tree}", tree)
        except Exception as exc:  # any snapshot failure ends the run as environment_error
            raise EnvironmentFailure(f"snapshot of {self.workspace} failed: {exc}") from exc
        finally:
            self.recorder.acc.snapshot_seconds += time.perf_counter() - t0
        self.recorder.snapshot = tree
        return tree

    def execute_actions(self, message: dict) -> list[dict]:
        rec, lim = self.recorder, self.limits
        actions = message.get("extra", {}).get("actions", [])
        outputs: list[dict] = []
        try:
            for position, action in enumerate(actions):
                remaining = lim.wall_seconds - self._elapsed()
                timeout = max(1.0, min(lim.command_seconds, remaining))
                t0 = time.perf_counter()
                try:
                    output = self.env.execute(action, timeout=timeout)
                except Submitted as exc:
                    rec.acc.command_seconds += time.perf_counter() - t0
                    rec.command_done(position, self._take_snapshot(), finish=True)
                    observations = self.model.format_observation_messages(
                        message, outputs, self.get_template_vars()
                    )
                    submission = exc.messages[0].get("extra", {}).get("submission", "")
                    rec.add_observations(observations[: len(outputs)], submission=submission)
                    raise
                rec.acc.command_seconds += time.perf_counter() - t0
                outputs.append(output)
                rec.command_done(position, self._take_snapshot(), finish=False)
        except EnvironmentFailure as exc:
            detail = redact(str(exc))[:2000]
            rec.record.exit_detail = detail
            rec._open_actions = rec._open_actions[: len(outputs)]
            observations = self.model.format_observation_messages(message, outputs, self.get_template_vars())
            rec.add_observations(observations[: len(outputs)])
            raise InterruptAgentFlow(_exit_message(ExitStatus.environment_error, detail)) from None
        observations = self.model.format_observation_messages(message, outputs, self.get_template_vars())
        rec.add_observations(observations)
        return self.add_messages(*observations)

    def save(self, path: Path | None, *extra_dicts) -> dict | None:
        # The native trajectory is rewritten whole, so its cost grows with the run: every
        # NATIVE_EVERY steps and at the end. events.jsonl/calls.jsonl/run.json are written every step.
        ended = bool(self.messages) and self.messages[-1].get("role") == "exit"
        data = self.serialize(*extra_dicts) if ended or self.n_calls % NATIVE_EVERY == 0 else None
        self.recorder.flush(data)
        return data


# -- setting up runs -------------------------------------------------------------------------------------


def _git(cwd: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, input=input, check=False)


def _task_environment(task: SourceTask | None, workspace: Path) -> tuple[dict[str, str], dict]:
    """Variables from the task's prepared environment (issue 3), and a description for run.json."""
    if task is None:
        return {}, {"kind": "host", "note": "no task record given: commands use the host's interpreters"}
    try:
        from takeover.environments import prepare_environment
    except ImportError:
        return {}, {"kind": "host", "note": "task environments are not available in this version"}
    prepared = prepare_environment(task, workspace)
    described = (
        prepared.model_dump(mode="json") if hasattr(prepared, "model_dump") else {"repr": repr(prepared)}
    )
    return dict(prepared.env_vars()), described


def default_task_prompt(task: SourceTask) -> str:
    """The original task prompt of a predecessor run: :func:`takeover.views.task_prompt` (issue 5) when
    available, else the problem statement."""
    try:
        from takeover.views import task_prompt
    except ImportError:
        try:
            from takeover.views.prompt import task_prompt
        except ImportError:
            return task.problem_statement
    return task_prompt(task)


_MODEL_INPUTS = ("name", "temperature", "max_tokens", "extra")


def run_inputs(
    *,
    kind: str,
    instance_id: str,
    base_commit: str,
    prompt: str,
    model: ModelSettings,
    limits: RunLimits,
    protocol: str,
    backend: str,
    view: str | None = None,
    patch_sha256: str | None = None,
) -> dict[str, Any]:
    """What determines an agent run (its ``inputs_key`` is :func:`takeover._io.stable_hash` of this):
    task, checkpoint patch and view, the prompt's sha256, the model settings that change answers (name,
    temperature, max_tokens, extra), limits, protocol and backend. Host paths are left out, so that the same run in another folder has the same key."""
    return {
        "kind": kind,
        "instance_id": instance_id,
        "base_commit": base_commit,
        "checkpoint_patch_sha256": patch_sha256,
        "view": view,
        "prompt_sha256": sha256_text(prompt),
        # What the model answers depends on these; the endpoint's address and its transport settings
        # (timeout, retries) do not (a local server restarted on another port is the same model).
        "model": {k: v for k, v in model.public().items() if k in _MODEL_INPUTS},
        "limits": limits.model_dump(mode="json"),
        "protocol": protocol,
        "backend": backend,
    }


def _describe(inputs: dict[str, Any]) -> str:
    model = inputs.get("model") or {}
    parts = [f"view {inputs['view']}"] if inputs.get("view") else [str(inputs.get("kind"))]
    parts.append(f"model {model.get('name')}")
    limits = inputs.get("limits") or {}
    parts.append(f"{limits.get('steps')} steps")
    return ", ".join(parts)


def _prepare_out_dir(out_dir: Path, inputs: dict[str, Any] | None = None) -> RunRecord | None:
    """A finished run in ``out_dir`` with the same inputs is returned as is (re-runs resume); an unfinished
    one (a crash) is removed and the run starts over, because a model loop cannot continue exactly where
    it died.

    Raises:
        InputError: ``out_dir`` holds a finished run with other inputs (:func:`run_inputs`; another model,
            view, limit, prompt or checkpoint), or files that are not a run.
    """
    run_json = out_dir / "run.json"
    if run_json.exists():
        try:
            record = RunRecord.model_validate_json(run_json.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(run_json, f"not a run record ({str(exc).splitlines()[0]})") from None
        if record.finished:
            # Records written before inputs keys existed cannot be checked: they are kept as they are.
            if inputs is not None and record.inputs_key is not None and record.inputs_key != stable_hash(inputs):
                theirs = _describe(record.inputs) if record.inputs else "other inputs"
                changed = sorted(k for k in inputs if record.inputs.get(k) != inputs[k]) if record.inputs else []
                raise InputError(
                    out_dir,
                    f"holds a different run ({theirs}"
                    + (f"; differs in {', '.join(changed)}" if changed else "")
                    + f") than the one asked for ({_describe(inputs)}); use another --out or delete it",
                )
            return record
        shutil.rmtree(out_dir)
    elif out_dir.exists():
        if {p.name for p in out_dir.iterdir()} - {"workspace"}:
            raise InputError(
                out_dir, "run directory exists, is not empty and holds no run.json; choose another --out"
            )
        shutil.rmtree(
            out_dir / "workspace", ignore_errors=True
        )  # a checkout interrupted before the run began
    out_dir.mkdir(parents=True, exist_ok=True)
    return None


def run_agent(
    *,
    kind: str,
    instance_id: str,
    repo: str,
    base_commit: str,
    prompt: str,
    model: ModelSettings,
    out_dir: Path,
    workspace: Path,
    task: SourceTask | None = None,
    limits: RunLimits | None = None,
    protocol: Protocol = "text",
    backend: str = "local",
    origin: TakeoverOrigin | None = None,
    image: str | None = None,
    inputs: dict[str, Any] | None = None,
    setup_started: float | None = None,
) -> RunRecord:
    """Run mini-swe-agent on a prepared ``workspace`` with ``prompt`` and write the run directory.

    ``workspace`` must be a git checkout (at ``base_commit``, plus a checkpoint patch for takeover runs)
    inside ``out_dir``. ``inputs`` (default: :func:`run_inputs` of the arguments) is stored in run.json
    with its key; ``setup_started`` (a ``time.perf_counter()`` value) starts the setup clock (default: now).
    When bubblewrap is available the commands see the workspace at ``/testbed`` (as in SWE-bench images),
    so the prompt is the same whatever the output folder; without a sandbox the prompt names the host
    path instead and run.json says so (``path_note``). Returns the final :class:`RunRecord` (also in ``out_dir/run.json``).

    Raises:
        EnvironmentUnavailable: the backend cannot start (no Docker daemon) or the task environment fails.
    """
    limits = limits or RunLimits()
    config = _mswea.benchmark_config(protocol)
    agent_cfg = dict(config["agent"])
    env_cfg = dict(config.get("environment") or {})
    model_cfg = dict(config.get("model") or {})
    setup_started = time.perf_counter() if setup_started is None else setup_started
    if inputs is None:
        inputs = run_inputs(
            kind=kind,
            instance_id=instance_id,
            base_commit=base_commit,
            prompt=prompt,
            model=model,
            limits=limits,
            protocol=protocol,
            backend=backend,
            view=origin.view if origin else None,
            patch_sha256=origin.patch_sha256 if origin else None,
        )
    root = command_root(backend, workspace)
    path_note = None
    if root != TESTBED:  # the prompt names the working directory the commands really run in
        agent_cfg["instance_template"] = agent_cfg["instance_template"].replace(TESTBED, root)
        path_note = (
            "no sandbox could mount the workspace at /testbed: the prompt names the host path of the "
            "workspace, so prompt characters and tokens depend on the output folder"
        )
    st = sandbox.status()
    record = RunRecord(
        run_id=out_dir.name,
        kind=kind,
        instance_id=instance_id,
        repo=repo,
        base_commit=base_commit,
        protocol=protocol,
        backend=backend,
        sandbox=st.message if backend == "local" else "docker container, no network",
        workspace=str(workspace),
        command_root=root,
        path_note=path_note,
        inputs=inputs,
        inputs_key=stable_hash(inputs),
        model=model.public(),
        limits=limits,
        origin=origin,
        versions=_mswea.versions(),
        started_at=_now(),
    )
    # Written before anything can fail, so that a re-run recognizes (and redoes) an aborted attempt.
    atomic_write_json(out_dir / "run.json", redact_obj(record.model_dump(mode="json")))
    task_env, described = _task_environment(task, workspace)
    record.environment = described
    tmp_dir = out_dir / "tmp"
    tmp_dir.mkdir(exist_ok=True)
    env = make_environment(
        backend,
        workspace=workspace,
        tmp_dir=tmp_dir,
        env={**(env_cfg.get("env") or {}), **(task_env if backend == "local" else {})},
        command_seconds=limits.command_seconds,
        instance_id=instance_id,
        image=image,
        readable=git_alternates(workspace) + [Path(p) for p in [described.get("shared_venv")] if p],
    )
    mini_model = make_model(model, protocol, model_cfg)
    recorder = _Recorder(
        out_dir,
        record,
        model_name=mini_model.config.model_name,
        protocol=protocol,
        action_regex=getattr(mini_model.config, "action_regex", r"```mswea_bash_command\s*\n(.*?)\n```"),
    )
    try:
        take_snapshot, snapshot_patch, patch_bytes = _snapshot_functions()
    except (ImportError, AttributeError):
        take_snapshot = snapshot_patch = patch_bytes = None
        record.snapshots = "unavailable"
    agent = TakeoverAgent(
        mini_model,
        env,
        recorder=recorder,
        limits=limits,
        workspace=workspace,
        snapshot=take_snapshot,
        system_template=agent_cfg["system_template"],
        instance_template=agent_cfg["instance_template"],
        step_limit=limits.steps,
        cost_limit=limits.cost or 0.0,
        wall_time_limit_seconds=int(limits.wall_seconds),
        max_consecutive_format_errors=limits.format_errors,
    )
    recorder.write_record()
    atomic_write_text(out_dir / "prompt.md", redact(prompt))
    (out_dir / "events.jsonl").touch()
    (out_dir / "calls.jsonl").touch()
    if take_snapshot is not None:
        try:
            agent._take_snapshot()
        except EnvironmentFailure as exc:
            raise EnvironmentUnavailable(str(exc)) from None
    initial = recorder.snapshot
    recorder.t_start = time.perf_counter()
    record.setup_seconds = round(recorder.t_start - setup_started, 6)
    agent._start_time = time.time()
    crashed: BaseException | None = None
    try:
        result = agent.run(prompt)
    except BaseException as exc:  # noqa: BLE001 - a bug or an interrupt: keep what was recorded, then re-raise
        crashed = exc
        result = agent.messages[-1].get("extra", {}) if agent.messages else {}
    status_text = result.get("exit_status", "")
    try:
        record.exit_status = _MSWEA_EXIT.get(status_text) or ExitStatus(status_text)
    except ValueError:
        record.exit_status = ExitStatus.environment_error
        record.exit_detail = redact(str(result.get("exception_str") or status_text))[:2000]
    record.submission = redact(result.get("submission") or "") or None
    # Final state: one more snapshot (background processes may have written since the last command).
    if take_snapshot is not None and workspace.is_dir():
        try:
            final = take_snapshot(workspace)
            record.final_snapshot = final
            patch = snapshot_patch(workspace, base_commit, final)
            atomic_write_bytes(out_dir / "patch.diff", patch_bytes(redact(patch)))
            trees = (
                {e.snapshot for e in recorder.events if e.snapshot}
                | {final}
                | ({initial} if initial else set())
            )
            _git(
                workspace,
                "update-ref",
                "--stdin",
                input="".join(f"update {SNAPSHOT_REF_PREFIX}{t} {t}\n" for t in sorted(trees)),
            )
        except Exception as exc:  # noqa: BLE001 - the agent destroyed its repository: say so, keep the rest
            record.exit_detail = (record.exit_detail or "") + redact(f" final snapshot failed: {exc}")[:500]
    shutil.rmtree(tmp_dir, ignore_errors=True)
    record.ended_at = _now()
    record.finished = crashed is None
    recorder.update_totals()
    recorder.write_record()
    if crashed is not None:
        raise crashed
    return record


def run_predecessor(
    task: SourceTask,
    model: ModelSettings,
    out_dir: Path | str,
    *,
    limits: RunLimits | None = None,
    protocol: Protocol = "text",
    backend: str = "local",
    mirror: Path | str | None = None,
    prompt: str | None = None,
    allow_network: bool = True,
    repo_source: RepoSource | None = None,
) -> RunRecord:
    """A predecessor run: a fresh workspace at ``task.base_commit`` and the original task prompt
    (docs/protocol.md section 8). A finished run already in ``out_dir`` is returned without re-running.

    Args:
        task: the source task.
        model: endpoint settings; ``model.public()`` goes into ``run.json``.
        out_dir: the run directory (created).
        limits: defaults to the paper's (500 steps, 4 hours).
        protocol: ``text`` (default) or ``tools``.
        backend: ``local`` (sandboxed when possible) or ``docker``.
        mirror: folder of bare repositories (default ``$TAKEOVER_MIRROR``).
        prompt: override of the task prompt (default :func:`default_task_prompt`).
        repo_source: where repositories come from (default ``RepoSource(mirror, allow_network=...)``).
    Raises:
        RepositoryUnavailable, EnvironmentUnavailable: the workspace or backend cannot be prepared.
    """
    setup_started = time.perf_counter()
    out_dir = Path(out_dir).resolve()
    limits = limits or RunLimits()
    prompt = prompt if prompt is not None else default_task_prompt(task)
    inputs = run_inputs(
        kind="predecessor",
        instance_id=task.instance_id,
        base_commit=task.base_commit,
        prompt=prompt,
        model=model,
        limits=limits,
        protocol=protocol,
        backend=backend,
    )
    done = _prepare_out_dir(out_dir, inputs)
    if done is not None:
        return done
    source = repo_source or RepoSource(mirror, allow_network=allow_network)
    workspace = source.workspace(task.repo, task.base_commit, out_dir / "workspace")
    return run_agent(
        inputs=inputs,
        setup_started=setup_started,
        kind="predecessor",
        instance_id=task.instance_id,
        repo=task.repo,
        base_commit=task.base_commit,
        prompt=prompt,
        model=model,
        out_dir=out_dir,
        workspace=workspace,
        task=task,
        limits=limits,
        protocol=protocol,
        backend=backend,
    )


def checkpoint_workspace(
    checkpoint_dir: Path | str, dest: Path, *, repo_source: RepoSource | None = None
) -> Path:
    """A fresh copy of a checkpoint's repository: ``base_commit`` + ``git apply checkpoint.patch``
    (docs/protocol.md section 5; the predecessor's later events are never visible).

    Raises:
        InputError: the checkpoint is invalid or its patch does not apply.
    """
    checkpoint, _ = load_checkpoint(checkpoint_dir)
    workspace = (repo_source or RepoSource()).workspace(checkpoint.repo, checkpoint.base_commit, dest)
    patch_path = (Path(checkpoint_dir) / "checkpoint.patch").resolve()
    if patch_path.stat().st_size:
        proc = subprocess.run(
            ["git", "apply", "--binary", "--whitespace=nowarn", str(patch_path)],
            cwd=workspace,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise InputError(
                patch_path,
                f"does not apply to {checkpoint.repo}@{checkpoint.base_commit[:12]}: {proc.stderr.strip()[:300]}",
            )
    return workspace


def run_takeover(
    checkpoint_dir: Path | str,
    view: str,
    model: ModelSettings,
    out_dir: Path | str,
    *,
    task: SourceTask | None = None,
    prompt: str | None = None,
    limits: RunLimits | None = None,
    protocol: Protocol = "text",
    backend: str = "local",
    mirror: Path | str | None = None,
    allow_network: bool = True,
    repo_source: RepoSource | None = None,
) -> RunRecord:
    """A takeover run: a fresh copy of the checkpoint workspace and the full takeover prompt of ``view``
    (docs/protocol.md sections 5, 7 and 8). A finished run already in ``out_dir`` is returned without re-running.

    Args:
        checkpoint_dir: folder with ``checkpoint.json``, ``checkpoint.patch`` and ``views/<view>.md``.
        view: ``repo_only``, ``raw_trace``, ``summary_notes`` or ``structured_notes``.
        task: the source task (for its execution environment); optional.
        prompt: the takeover prompt text; default: ``checkpoint_dir/views/<view>.md``.
        Other arguments as in :func:`run_predecessor`.
    Raises:
        InputError: the checkpoint is invalid, its patch does not apply, or the view's prompt is missing.
    """
    setup_started = time.perf_counter()
    checkpoint_dir = Path(checkpoint_dir).resolve()
    checkpoint, _ = load_checkpoint(checkpoint_dir)
    limits = limits or RunLimits()
    if prompt is None:
        view_path = checkpoint_dir / "views" / f"{view}.md"
        if not view_path.is_file():
            raise InputError(
                view_path,
                f"no takeover prompt for view {view!r}; build it with `takeover views` or pass a prompt file",
            )
        prompt = view_path.read_text(encoding="utf-8")
    if task is not None and task.instance_id != checkpoint.instance_id:
        raise InputError(
            checkpoint_dir / "checkpoint.json",
            f"checkpoint is for {checkpoint.instance_id}, not {task.instance_id}",
            field="instance_id",
        )
    out_dir = Path(out_dir).resolve()
    inputs = run_inputs(
        kind="takeover",
        instance_id=checkpoint.instance_id,
        base_commit=checkpoint.base_commit,
        prompt=prompt,
        model=model,
        limits=limits,
        protocol=protocol,
        backend=backend,
        view=view,
        patch_sha256=checkpoint.patch_sha256,
    )
    done = _prepare_out_dir(out_dir, inputs)
    if done is not None:
        return done
    source = repo_source or RepoSource(mirror, allow_network=allow_network)
    workspace = checkpoint_workspace(checkpoint_dir, out_dir / "workspace", repo_source=source)
    origin = TakeoverOrigin(
        checkpoint_dir=str(checkpoint_dir),
        instance_id=checkpoint.instance_id,
        point_type=checkpoint.point.type,
        event_index=checkpoint.point.event_index,
        view=view,
        patch_sha256=checkpoint.patch_sha256,
        method=checkpoint.method,
    )
    return run_agent(
        inputs=inputs,
        setup_started=setup_started,
        kind="takeover",
        instance_id=checkpoint.instance_id,
        repo=checkpoint.repo,
        base_commit=checkpoint.base_commit,
        prompt=prompt,
        model=model,
        out_dir=out_dir,
        workspace=workspace,
        task=task,
        limits=limits,
        protocol=protocol,
        backend=backend,
        origin=origin,
    )
