"""The user's own agent as an agent runtime (``--agent command --agent-option agent_command=TEMPLATE``;
docs/protocol.md section 8.4). Its options (:class:`CommandOptions`) are ``agent_command`` and
``session_glob``.

The template is a shell command (``bash -c``) run once in the workspace, with these placeholders, each
replaced by a shell-quoted value:

- ``{prompt_file}``: a file holding the takeover (or task) prompt;
- ``{session_file}``: where the agent's own session record is to be found afterwards (the option ``session_glob``
  instead, for agents that choose their own file name: a glob relative to the run's ``session/`` folder,
  absolute, or starting with ``~/``: the agent's home, ``session/home``);
- ``{workspace}``: the repository as the command sees it (``/testbed`` in the sandbox);
- ``{model}``, ``{base_url}``: the run's model settings (``--model``, ``--base-url``), for agents pointed at
  an OpenAI-compatible endpoint.

The same values are in the command's environment as ``TAKEOVER_PROMPT_FILE``, ``TAKEOVER_SESSION_FILE``,
``TAKEOVER_WORKSPACE``, ``TAKEOVER_MODEL`` and ``TAKEOVER_BASE_URL``, for use inside quoted strings.

For example ``codex exec --json --skip-git-repo-check "$(cat {prompt_file})" > {session_file}`` or
``claude -p --permission-mode acceptEdits --allowedTools Bash Edit Write Read < {prompt_file}`` with
``--agent-option session_glob='~/.claude/projects/*/*.jsonl'``.

What is recorded: the session file, read with takeover's readers (Claude Code, Codex CLI, OpenHands,
mini-swe-agent, SWE-agent: :func:`takeover.trajectories.registry.read_trajectories`), gives the events and
the model calls with the usage the agent recorded (``usage: unavailable`` when it recorded none: the report
says n/a); the final patch is the workspace's diff at the end, as for every runtime. The repository states
of the events cannot be known (``snapshots: unavailable``): points and checkpoints of such a run come from a
replay. The run's wall clock starts when the command starts.

Limits: the wall-time limit is enforced (the command and everything it started are killed:
``time_limit``). The agent's steps, commands, tokens and format errors are its own: ``step_limit``,
``command_timeout`` and ``max_consecutive_format_errors`` are accepted only at their defaults (the agent's
own limits apply), and ``prompt_token_limit``/``cost_limit`` are refused. Exit status: ``submitted`` when the
command exits 0, ``time_limit`` when it was stopped, ``environment_error`` otherwise. A command that leaves
no session record fails the run with a message naming where it was looked for.

Confinement (``command_backend`` ``local``; ``docker`` is refused): with bubblewrap the command runs with
the host's network (the agent must reach its model) and writes only in the workspace, the run's
``session/`` folder (its ``HOME``) and its private ``/tmp``; without bubblewrap it runs unconfined, as
``run.json`` says. A program the template names by a path under ``/tmp`` is mounted read-only (the
sandbox's ``/tmp`` is the run's own). The process keeps this process's environment (API keys included: the agent needs its
own), with ``HOME`` moved to ``session/home``.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from takeover._util import sandbox
from takeover._util.io import atomic_write_text
from takeover._util.processes import run_process
from takeover._util.redact import redact
from takeover.agents.command_backend import CommandBackend
from takeover.agents.runtime import AgentChoice, AgentRun, RuntimeOutcome
from takeover.errors import InputError, TakeoverError
from takeover.limits import RunLimits
from takeover.trajectories.events import Trajectory
from takeover.trajectories.registry import read_trajectories
from takeover.vocabulary import ExitStatus

#: The placeholders of an agent command template.
PLACEHOLDERS = ("prompt_file", "session_file", "workspace", "model", "base_url")
#: The run folder's folder for the agent: its prompt file, session file and home.
SESSION_DIR = "session"
_DEFAULTS = RunLimits()
#: A placeholder: a name alone in braces (``{prompt_file}``; ``{name="x"}`` is none).
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class AgentSessionMissing(TakeoverError):
    """The agent command left no session record where the run looked for one: the run ran and failed."""

    exit_status = 1


def check_template(template: str | None, *, where: str = "agent_command") -> str:
    """``template`` when it is a command template whose placeholders are all known.

    Raises:
        InputError: no template, or an unknown placeholder (``where`` names the flag or key).
    """
    if not template or not template.strip():
        raise InputError(where, "the command runtime needs a command template (its option agent_command)")
    unknown = [name for name in _PLACEHOLDER.findall(template) if name not in PLACEHOLDERS]
    if unknown:
        raise InputError(where, f"bad placeholder {{{unknown[0]}}} in {template!r}: use "
                         + ", ".join("{" + p + "}" for p in PLACEHOLDERS))
    return template


def render(template: str, values: dict[str, str]) -> str:
    """``template`` with each placeholder ``{name}`` of :data:`PLACEHOLDERS` replaced by its shell-quoted
    value; other braces (a TOML table in an agent's ``-c`` flag) stay as they are."""
    return _PLACEHOLDER.sub(lambda m: shlex.quote(values[m.group(1)]) if m.group(1) in values else m.group(0),
                            template)


class CommandOptions(BaseModel):
    """The ``command`` runtime's own options (an agent choice's ``options``; ``--agent-option NAME=VALUE``).

    Attributes:
        agent_command: the command template that runs the user's agent (required; its placeholders are
            checked: :func:`check_template`).
        session_glob: where the agent writes its session record when it names the file itself (relative to
            the run's ``session/`` folder, absolute, or ``~/...`` in its home); ``None``: ``{session_file}``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_command: str
    session_glob: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _a_template(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("agent_command"):
            raise ValueError("the command runtime needs a command template (its option agent_command)")
        return data

    @field_validator("agent_command")
    @classmethod
    def _known_placeholders(cls, value: str) -> str:
        try:
            return check_template(value)
        except InputError as exc:
            raise ValueError(exc.reason) from None


class CommandRuntime:
    """The ``command`` runtime (:class:`takeover.agents.runtime.AgentRuntime`)."""

    Options = CommandOptions

    def check(self, limits: RunLimits, choice: AgentChoice, commands: CommandBackend) -> None:
        """Refuse limits the agent's own loop keeps (other than their defaults) or nobody can keep here.

        Raises:
            InputError: a non-default ``step_limit``, ``command_timeout`` or ``max_consecutive_format_errors``,
                a ``prompt_token_limit`` or ``cost_limit``, or the ``docker`` command backend.
        """
        for name in ("step_limit", "command_timeout", "max_consecutive_format_errors"):
            if getattr(limits, name) != getattr(_DEFAULTS, name):
                raise InputError("agent command", f"cannot enforce {name} on the agent's own loop (its own "
                                 f"limits apply): leave it at its default {getattr(_DEFAULTS, name)}", field=name)
        for name in ("prompt_token_limit", "cost_limit"):
            if getattr(limits, name) is not None:
                raise InputError("agent command", f"cannot stop the agent at a {name}", field=name)
        if not commands.on_host:
            raise InputError("agent command", "runs the agent command on this host (in bubblewrap when "
                             "available)", field="command_backend")

    def run(self, run: AgentRun) -> RuntimeOutcome:
        """Run the agent command and record its session.

        Raises:
            InputError: the run has no (valid) command template.
            AgentSessionMissing: the command left no session record.
            InputError: the session record is in no format takeover reads (names the file).
        """
        spec, rec = run.spec, run.recorder
        options = CommandOptions.model_validate(spec.agent.options)
        template = options.agent_command
        session = run.out_dir / SESSION_DIR
        home = session / "home"
        home.mkdir(parents=True, exist_ok=True)
        prompt_file = session / "prompt.md"
        atomic_write_text(prompt_file, spec.prompt)
        session_file = session / "session.jsonl"
        values = {"prompt_file": str(prompt_file), "session_file": str(session_file), "workspace": run.command_root,
                  "model": spec.model.model, "base_url": spec.model.base_url or ""}
        command = render(template, values)
        sandboxed = run.command_root != str(run.workspace)
        argv = ["bash", "-c", command]
        if sandboxed:
            named = _named_under_tmp(template)
            argv = sandbox.wrap(argv, run.workspace, cwd=run.command_root, writable=[session], tmp=run.tmp_dir,
                                readable=[*run.readable, *named], mount_at=run.command_root,
                                network=True, home=None)
            rec.record.sandbox = ("sandbox: bubblewrap around the agent command (host network kept for its model; "
                                  "writes only in the workspace, the run's session folder and /tmp; shown besides "
                                  "the task: " + (", ".join(map(str, named)) or "nothing") + ")")
            rec.record.environment["agent_paths"] = [str(p) for p in named]
        env = {**os.environ, **(run.task_env if run.commands.uses_task_environment else {}), "HOME": str(home),
               **{f"TAKEOVER_{name.upper()}": value for name, value in values.items()}}
        rec.record.environment["agent_command"] = redact(command)
        rec.initial_prompt([{"content": spec.prompt}])
        run.start_clock()
        done = run_process(argv, cwd=run.workspace, env=env, timeout=max(1.0, run.seconds_left()),
                           log_path=session / "command.log")
        rec.accounting.command_seconds += done.seconds
        log = session / "command.log"
        if log.is_file():  # the agent's own output may name its keys
            atomic_write_text(log, redact(log.read_text(encoding="utf-8", errors="replace")))
        found = _session_path(session_file, options.session_glob, session, home)
        if found is None:
            if done.timed_out:  # stopped before it wrote its record: nothing to read, the status says why
                rec.flush()
                return RuntimeOutcome(ExitStatus.time_limit)
            where = str(session_file) + (f" or {options.session_glob!r} under {session}" if options.session_glob else "")
            raise AgentSessionMissing(f"the agent command (exit {done.exit_code}) wrote no session record: looked "
                                      f"for {where}; its output is in {session / 'command.log'}")
        rec.record.environment["session_file"] = str(found)
        _record_session(run, read_trajectories(found)[-1])
        if done.timed_out:
            return RuntimeOutcome(ExitStatus.time_limit)
        if done.exit_code != 0:
            return RuntimeOutcome(ExitStatus.environment_error,
                                  exit_detail=f"the agent command exited {done.exit_code} (output: {session / 'command.log'})")
        return RuntimeOutcome(ExitStatus.submitted)


def _named_under_tmp(template: str) -> list[Path]:
    """The files and folders the template names by an absolute path that the sandbox does not
    show (outside its system folders, ``/tmp`` included: docs/protocol.md section 8.6): the agent's
    program, its config folder. The user names them; they are mounted read-only and listed in ``run.json``
    (``environment.agent_paths``)."""
    try:
        words = shlex.split(render(template, {name: "" for name in PLACEHOLDERS}))
    except ValueError:
        return []
    named = [Path(w) for w in words if w.startswith("/") and Path(w).exists()]
    # The path itself (a program, a config folder), not the folder around it, and where a link points.
    return [p for p in dict.fromkeys([*named, *(p.resolve() for p in named)]) if sandbox.hidden_by_sandbox([p])]


def _session_path(session_file: Path, pattern: str | None, session: Path, home: Path) -> Path | None:
    """The session record: ``session_file`` when the agent wrote it, else the newest match of ``pattern``."""
    if session_file.is_file() and session_file.stat().st_size > 0:
        return session_file
    if not pattern:
        return None
    if pattern.startswith("~/"):
        pattern = str(home / pattern[2:])
    elif not os.path.isabs(pattern):
        pattern = str(session / pattern)
    matches = [Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).exists()]
    return max(matches, key=lambda p: p.stat().st_mtime) if matches else None


def _record_session(run: AgentRun, traj: Trajectory) -> None:
    """The events and calls of the agent's own record, in order; no event gets a snapshot (they cannot be
    known here: the states come from a replay)."""
    rec = run.recorder
    for call in traj.llm_calls:
        if call.usage is None:
            rec.add_call_without_usage(call.seconds or 0.0, format_error=call.format_error)
        else:
            rec.add_call(call.usage, list(call.attempts or []), call.seconds or 0.0, format_error=call.format_error,
                         cost=0.0)
    for event in traj.events:
        rec.add_event(**event.model_dump(exclude={"index", "snapshot"}))
    rec.record.snapshots = "unavailable"
    rec.flush()
