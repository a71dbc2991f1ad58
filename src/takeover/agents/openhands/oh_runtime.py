"""OpenHands as an agent runtime (``--agent openhands``; docs/protocol.md section 8.4): the paper's agent.

OpenHands (``openhands-sdk``/``openhands-tools``, pinned in ``environments/openhands_requirements.lock``) runs in its own Python
(:mod:`takeover.environments.openhands_venv`) as a subprocess, the driver
(:mod:`takeover.agents.openhands.oh_driver`): a local conversation on the workspace with the terminal and
file-editor tools (no browser, no condenser), OpenHands' text action protocol (``native_tool_calling=False``),
``max_iteration_per_run`` = ``step_limit``, ``persistence_dir`` = ``<run folder>/openhands``.

How the protocol's guarantees are kept:

- **Commands**: OpenHands runs them in its own terminal, in its own process, so with bubblewrap the whole
  driver runs in the sandbox: no network, writes only in the workspace (seen at ``/testbed``, as by the
  mini-swe-agent runtime's commands), in OpenHands' record folder and in the run's private ``/tmp``
  (``HOME`` is there). The model is reached through :class:`~takeover.agents.openhands.model_relay.ModelRelay`
  (a Unix socket; the API key stays outside). Without bubblewrap the driver runs unconfined and ``run.json``
  says so, as for any ``local`` run. The ``docker`` command backend is refused: OpenHands' terminal is not
  the container.
- **Limits**: ``step_limit`` is OpenHands' own ``max_iteration_per_run`` (one model call per step);
  ``wall_time_limit_seconds``, ``prompt_token_limit`` and ``max_consecutive_format_errors`` are checked by
  the driver after every event (the conversation pauses before its next model call) and the wall time also
  by this process, which ends the driver :data:`GRACE_SECONDS` after the limit; ``command_timeout`` caps the
  time a command may hold the terminal in the foreground (OpenHands' own terminal semantics otherwise: a
  command with no new output for a while returns to the agent and goes on running). ``cost_limit`` is refused: OpenHands prices no local model.
- **Snapshots**: after every event the driver asks for a snapshot and waits: this process takes it with
  :meth:`~takeover.agents.recorder.RunRecorder.take_snapshot` (the same rules as every runtime), so every
  event's state is exact and a recorded OpenHands run gives checkpoints without replay.
- **Calls and events** come from OpenHands' own record after the run (:mod:`takeover.agents.openhands.oh_events`).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from takeover._util import sandbox
from takeover._util.io import atomic_write_json, atomic_write_text
from takeover._util.processes import kill_group
from takeover._util.redact import redact
from takeover.agents.command_backend import CommandBackend, clean_environ
from takeover.agents.openhands.model_relay import ModelRelay
from takeover.agents.openhands.oh_events import conversation_folder, record_conversation
from takeover.agents.runtime import AgentChoice, AgentRun, NoOptions, RuntimeOutcome
from takeover.environments.openhands_venv import litellm_model, openhands_environment
from takeover.errors import EnvironmentFailure, EnvironmentUnavailable, InputError
from takeover.limits import RunLimits
from takeover.vocabulary import ExitStatus

#: Seconds the driver gets after the wall-time limit to stop by itself before it is killed.
GRACE_SECONDS = 20.0
#: Seconds OpenHands may take to start (import, tools) before its first event.
STARTUP_SECONDS = 600.0
#: The script the environment's Python runs (:mod:`takeover.agents.openhands.oh_driver`).
DRIVER = Path(__file__).with_name("oh_driver.py")
#: OpenHands' record of the run, inside the run folder (its ``persistence_dir``).
RECORD_DIR = "openhands"
_MODEL_ERRORS = ("LLM", "API", "RateLimit", "Timeout", "ServiceUnavailable", "BadRequest", "Authentication",
                 "ContextWindow", "InternalServer", "NotFound")


class OpenHandsRuntime:
    """The OpenHands runtime (:class:`takeover.agents.runtime.AgentRuntime`); it has no options of its own."""

    Options = NoOptions

    def check(self, limits: RunLimits, choice: AgentChoice, commands: CommandBackend) -> None:
        """Refuse what OpenHands cannot honour here.

        Raises:
            InputError: ``protocol`` ``tools`` (the paper's OpenHands used its text protocol), the ``docker``
                command backend, or a ``cost_limit``.
        """
        if choice.protocol != "text":
            raise InputError("agent openhands", "runs OpenHands' text action protocol only (native tool "
                             "calling off, as in the paper)", field="protocol")
        if not commands.on_host:
            raise InputError("agent openhands", "runs its commands in OpenHands' own terminal on this host "
                             "(in bubblewrap when available)", field="command_backend")
        if limits.cost_limit is not None:
            raise InputError("agent openhands", "cannot stop at a cost limit (OpenHands prices no local "
                             "model)", field="cost_limit")

    def run(self, run: AgentRun) -> RuntimeOutcome:
        """Run OpenHands on ``run`` and record it.

        Raises:
            EnvironmentUnavailable: OpenHands' environment cannot be built (no Python 3.12/3.13, packages
                not to be had).
            BaseException: an interruption (the driver is killed first).
        """
        env = openhands_environment()
        record = run.recorder.record
        record.versions.update({f"openhands:{k}": v for k, v in env.versions.items()})
        record.environment["agent_environment"] = {k: v for k, v in env.description.items() if k != "packages"}
        record.environment["agent_environment"]["root"] = str(env.root)
        if run.command_root != str(run.workspace):
            record.sandbox = ("sandbox: bubblewrap around OpenHands (its commands have no network but the model "
                              "relay, and write only in the workspace, OpenHands' record and the run's /tmp)")
        home = run.out_dir / RECORD_DIR
        persistence = home / "conversation"
        persistence.mkdir(parents=True, exist_ok=True)
        spec = run.spec
        sock_dir = Path(tempfile.mkdtemp(prefix="takeover-oh-"))  # a Unix socket's path must be short
        try:
            with ModelRelay(sock_dir / "model.sock", spec.model.base_url or "https://api.openai.com/v1",
                            spec.model.api_key(), spec.model.timeout) as relay:
                return self._drive(run, env.python, home, persistence, sock_dir, relay)
        finally:
            for leftover in sock_dir.iterdir():
                leftover.unlink(missing_ok=True)
            sock_dir.rmdir()

    def _drive(self, run: AgentRun, python: Path, home: Path, persistence: Path, sock_dir: Path,
               relay: ModelRelay) -> RuntimeOutcome:
        spec, limits, rec = run.spec, run.spec.limits, run.recorder
        sandboxed = run.command_root != str(run.workspace)
        prompt_file = run.tmp_dir / "takeover-prompt.md"
        atomic_write_text(prompt_file, spec.prompt)
        requests_r, requests_w = os.pipe()
        answers_r, answers_w = os.pipe()
        outcome_file = home / "outcome.json"
        outcome_file.unlink(missing_ok=True)
        config = {
            "workspace": run.command_root,
            "persistence_dir": str(persistence),
            "prompt_file": "/tmp/takeover-prompt.md" if sandboxed else str(prompt_file),
            "model": litellm_model(spec.model.model, spec.model.base_url),
            "base_path": urlsplit((spec.model.base_url or "https://api.openai.com/v1").rstrip("/")).path,
            "temperature": spec.model.temperature,
            "max_output_tokens": spec.model.max_tokens,
            "timeout": spec.model.timeout,
            "num_retries": spec.model.retries,
            "step_limit": limits.step_limit,
            "seconds": limits.wall_time_limit_seconds,
            "prompt_token_limit": limits.prompt_token_limit,
            "max_consecutive_format_errors": limits.max_consecutive_format_errors,
            "relay_socket": str(relay.socket_path),
            "outcome_file": str(outcome_file),
            "snapshot_fds": [answers_r, requests_w],
        }
        config_file = home / "driver.json"
        atomic_write_json(config_file, config)
        # The venv's interpreter by its folder's real path: the sandbox mounts folders at their real paths, so a
        # cache reached through a link (TAKEOVER_CACHE, or a folder in it, a symbolic link) would hide it.
        argv = [str(python.parent.resolve() / python.name), "-I", str(DRIVER), str(config_file)]
        variables = {**(run.task_env if run.commands.uses_task_environment else {}),
                     "HOME": "/tmp" if sandboxed else str(run.tmp_dir), "OPENHANDS_SUPPRESS_BANNER": "1",
                     # OpenHands' user folder (profiles, skills cache), kept with its record of the run.
                     "OH_PERSISTENCE_DIR": str(home / "user"),
                     # OpenHands caps what a command may wait in the foreground at 90% of this.
                     "OH_RUNTIME_IDLE_TIMEOUT_SECONDS": str(limits.command_timeout / 0.9)}
        if sandboxed:
            argv = sandbox.wrap(argv, run.workspace, writable=[home, sock_dir], tmp=run.tmp_dir,
                                # its own venv (and the interpreter it was made from) and the driver: the only additions
                                readable=[*run.readable, DRIVER.parent, python.parent.parent,
                                          *sandbox.base_prefixes([python.parent.parent])],
                                mount_at=run.command_root)
        snapshots: dict[str, str] = {}
        failure: list[str] = []
        log = open(home / "driver.log", "wb")  # noqa: SIM115 - closed below, after the process
        try:
            proc = subprocess.Popen(argv, cwd=run.workspace, env=clean_environ(variables), stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, pass_fds=(answers_r, requests_w),
                                    start_new_session=True)
        except OSError as exc:
            log.close()
            raise EnvironmentUnavailable(f"cannot start OpenHands ({python}): {exc}") from None
        finally:
            os.close(answers_r)
            os.close(requests_w)
        server = threading.Thread(target=_serve_snapshots, args=(run, requests_r, answers_w, snapshots, failure),
                                  daemon=True)
        server.start()
        killed = False
        launched = time.perf_counter()
        try:
            while proc.poll() is None:
                # The wall clock starts with OpenHands' first event; until then only a start-up limit applies.
                late = run.seconds_left() < -GRACE_SECONDS if run.started else (
                    time.perf_counter() - launched > STARTUP_SECONDS)
                if late or failure:
                    kill_group(proc.pid)
                    killed = run.started
                    proc.wait()
                    if not run.started and not failure:
                        failure.append(f"OpenHands did not start within {STARTUP_SECONDS:.0f} s "
                                       f"(log: {home / 'driver.log'})")
                    break
                time.sleep(0.2)
        except BaseException:
            kill_group(proc.pid)
            proc.wait()
            raise
        finally:
            log.close()
            server.join(timeout=30)
        final = rec.take_snapshot() if run.workspace.is_dir() else None
        folder = conversation_folder(persistence)
        if folder is not None:
            record_conversation(rec, folder, snapshots, final, list(relay.exchanges))
        if failure:
            return RuntimeOutcome(ExitStatus.environment_error, exit_detail=failure[0])
        return _outcome(outcome_file, killed, proc.returncode, home / "driver.log")


def _serve_snapshots(run: AgentRun, requests_fd: int, answers_fd: int, snapshots: dict[str, str],
                     failure: list[str]) -> None:
    """Answer the driver's snapshot requests (one JSON line each) until it closes its end. The first comes
    with the task message, just before OpenHands' first model call: the run's clock starts there."""
    with os.fdopen(requests_fd, "r") as requests, os.fdopen(answers_fd, "w", buffering=1) as answers:
        for line in requests:
            run.start_clock()
            try:
                event_id = json.loads(line)["event"]
                snapshots[event_id] = run.recorder.take_snapshot()
            except EnvironmentFailure as exc:
                failure.append(redact(str(exc))[:2000])
                return
            except (ValueError, KeyError, TypeError):
                continue
            try:
                answers.write("ok\n")
            except OSError:
                return


def _outcome(path: Path, killed: bool, returncode: int | None, log: Path) -> RuntimeOutcome:
    """The run's exit status from the driver's ``outcome.json`` (docs/protocol.md section 8.2)."""
    if killed:
        return RuntimeOutcome(ExitStatus.time_limit)
    if not path.is_file():
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:] if log.is_file() else []
        return RuntimeOutcome(ExitStatus.environment_error,
                              exit_detail=f"OpenHands ended (exit {returncode}) without an outcome: "
                              + " | ".join(tail) + f" (log: {log})")
    outcome = json.loads(path.read_text(encoding="utf-8"))
    status = outcome.get("status")
    if status == "error":
        code = str(outcome.get("error_code") or "")
        kind = ExitStatus.model_error if any(word in code for word in _MODEL_ERRORS) else ExitStatus.environment_error
        return RuntimeOutcome(kind, exit_detail=str(outcome.get("detail") or code))
    return RuntimeOutcome(ExitStatus(status), submission=outcome.get("submission"))
