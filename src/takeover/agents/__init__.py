"""Predecessor and successor runs over mini-swe-agent (docs/protocol.md sections 5 and 8).

Public API (importing it imports mini-swe-agent and litellm, quietly and offline: seconds, for litellm)::

    from takeover.agents import run_predecessor, run_takeover, RunLimits
    record = run_predecessor(task, ModelSettings(model="qwen", base_url="http://127.0.0.1:8080/v1"), "runs/p1")
    record = run_takeover("ckpt/", "raw_trace", settings, "runs/t1", limits=RunLimits(step_limit=500))

Modules:

- ``runs.py``: the entry points :func:`run_predecessor`, :func:`run_takeover` and :func:`run_agent`.
- ``run_folder.py``: :class:`RunSpec` (what determines a run), its inputs key, resuming a run folder.
- ``loop.py``: :class:`~takeover.agents.loop.TakeoverAgent`, mini-swe-agent's agent loop with the
  protocol's limits, accounting and snapshots.
- ``recorder.py``: :class:`~takeover.agents.recorder.RunRecorder`, the events, calls and accounting of a run,
  written step by step.
- ``command_sandbox.py``: where the agent's commands run (mini-swe-agent environments, sandboxed).
- ``mswea_model.py``: mini-swe-agent's model interface over :class:`takeover.llm.ModelClient` (one retry policy,
  usage of every call).
- ``_mswea.py``: importing mini-swe-agent quietly and offline; its SWE-bench config and templates.

The run folder's format and its records (:class:`RunRecord`, :class:`RunAccounting`,
:class:`TakeoverOrigin`, :func:`read_run`) are :mod:`takeover.trajectories.takeover_run`; the limits are
:class:`takeover.limits.RunLimits`; exit statuses :class:`takeover.vocabulary.ExitStatus`.
"""

from takeover.agents.run_folder import RunSpec
from takeover.agents.runs import run_agent, run_predecessor, run_takeover
from takeover.limits import RunLimits
from takeover.trajectories.takeover_run import RunAccounting, RunRecord, TakeoverOrigin, read_run
from takeover.vocabulary import ExitStatus

__all__ = [
    "ExitStatus",
    "RunAccounting",
    "RunLimits",
    "RunRecord",
    "RunSpec",
    "TakeoverOrigin",
    "read_run",
    "run_agent",
    "run_predecessor",
    "run_takeover",
]
