"""mini-swe-agent as an agent runtime (``--agent mini-swe-agent``, the default; docs/protocol.md section 8).

mini-swe-agent's own SWE-bench configuration (:func:`takeover.agents.mini_swe_agent._mswea.benchmark_config`)
and agent loop (:class:`~takeover.agents.mini_swe_agent.loop.TakeoverAgent`) run in this process: its
model through :class:`takeover.llm.ModelClient` (:mod:`.mswea_model`), its commands in the run's command
sandbox, a snapshot after every action. It honours every limit of :class:`takeover.limits.RunLimits`, both
action protocols and every command backend. Its own trajectory is ``<instance_id>.traj.json`` in the run
folder (format ``mini-swe-agent-1.1``).
"""

from __future__ import annotations

import time

from takeover._util.redact import redact
from takeover.agents.command_backend import CommandBackend
from takeover.agents.mini_swe_agent import _mswea
from takeover.agents.mini_swe_agent.loop import TakeoverAgent
from takeover.agents.mini_swe_agent.messages import MessageEvents
from takeover.agents.mini_swe_agent.mswea_model import make_model
from takeover.agents.runtime import AgentChoice, AgentRun, NoOptions, RuntimeOutcome
from takeover.limits import RunLimits
from takeover.vocabulary import ExitStatus

#: mini-swe-agent's own exit statuses that are named otherwise in docs/protocol.md section 8.2.
_MSWEA_EXIT = {"Submitted": ExitStatus.submitted, "RepeatedFormatError": ExitStatus.format_errors}
#: The text protocol's action block when mini-swe-agent's model config names none.
_DEFAULT_ACTION_REGEX = r"```mswea_bash_command\s*\n(.*?)\n```"


def _outcome(result: dict) -> RuntimeOutcome:
    """The outcome of mini-swe-agent's final ``extra`` (``exit_status``, ``submission``)."""
    text = result.get("exit_status", "")
    try:
        status = _MSWEA_EXIT.get(text) or ExitStatus(text)
    except ValueError:  # an exception mini-swe-agent caught and named: the environment failed
        return RuntimeOutcome(ExitStatus.environment_error, result.get("submission") or None,
                              redact(str(result.get("exception_str") or text))[:2000])
    return RuntimeOutcome(status, result.get("submission") or None)


class MiniSweAgentRuntime:
    """The mini-swe-agent runtime (:class:`takeover.agents.runtime.AgentRuntime`)."""

    Options = NoOptions

    def check(self, limits: RunLimits, choice: AgentChoice, commands: CommandBackend) -> None:
        """Nothing to refuse: the loop checks every limit itself, speaks both protocols and runs its
        commands in any command backend."""

    def run(self, run: AgentRun) -> RuntimeOutcome:
        """Run mini-swe-agent's loop on ``run`` with its SWE-bench configuration for ``spec.agent.protocol``.

        Raises:
            EnvironmentUnavailable: the command backend cannot start.
            BaseException: an interruption or a bug (the last status mini-swe-agent reached is recorded).
        """
        spec = run.spec
        config = _mswea.benchmark_config(spec.agent.protocol)
        env = run.command_sandbox((config.get("environment") or {}).get("env") or {})
        model = make_model(spec.model, spec.agent.protocol, dict(config.get("model") or {}))
        regex = getattr(model.config, "action_regex", _DEFAULT_ACTION_REGEX)
        agent = TakeoverAgent(
            model,
            env,
            recorder=run.recorder,
            events=MessageEvents(run.recorder, protocol=spec.agent.protocol, action_regex=regex),
            limits=spec.limits,
            native_name=f"{spec.instance_id}.traj.json",
            **_mswea.agent_templates(spec.agent.protocol),
        )
        run.start_clock()
        agent._start_time = time.time()
        try:
            result = agent.run(spec.prompt)
        except BaseException:
            # A bug or an interrupt: keep the status the loop had reached, then let it go on.
            last = _outcome(agent.messages[-1].get("extra", {}) if agent.messages else {})
            record = run.recorder.record
            record.exit_status = last.exit_status
            record.exit_detail = last.exit_detail or record.exit_detail
            raise
        return _outcome(result)
