"""Predecessor and successor runs over mini-swe-agent (docs/protocol.md sections 5, 8; issue 6).

Public API (mini-swe-agent and litellm are imported only when a run starts, quietly and offline)::

    from takeover.agents import run_predecessor, run_takeover, RunLimits
    record = run_predecessor(task, ModelSettings(name="qwen", base_url="http://127.0.0.1:8080/v1"), "runs/p1")
    record = run_takeover("ckpt/", "raw_trace", settings, "runs/t1", limits=RunLimits(steps=500))

Records (:mod:`takeover.agents.records`): :class:`RunRecord` (``run.json``), :class:`RunLimits`,
:class:`RunAccounting`, :class:`ExitStatus`. Reading a run directory back as a
:class:`~takeover.trajectories.events.Trajectory`: :func:`takeover.agents.reader.read_run`.
"""

from __future__ import annotations

from typing import Any

from takeover.agents.records import ExitStatus, RunAccounting, RunLimits, RunRecord, TakeoverOrigin

__all__ = [
    "ExitStatus",
    "RunAccounting",
    "RunLimits",
    "RunRecord",
    "TakeoverOrigin",
    "checkpoint_workspace",
    "read_run",
    "run_agent",
    "run_predecessor",
    "run_takeover",
]

_LAZY = {
    "run_agent": "takeover.agents.runner",
    "run_predecessor": "takeover.agents.runner",
    "run_takeover": "takeover.agents.runner",
    "checkpoint_workspace": "takeover.agents.runner",
    "read_run": "takeover.agents.reader",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)
