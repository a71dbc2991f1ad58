"""Handoff points as an Inspect AI task (``inspect eval takeover/handoff``; docs/protocol.md section 8.5).

Samples are handoff point x view: the input is the view's takeover prompt (``views/<view>.md`` of a
checkpoint folder), the sandbox starts with the checkpoint's repository, and the metadata names the
instance, the point (its type, or the event of a cut), the view and the handoff state. The solver is any
Inspect agent (its ReAct agent with a bash tool by default; inspect-swe's ``claude_code`` and
``codex_cli`` where installed); the scorer grades the final repository with takeover's SWE-bench grading
and reports ``resolved``, ``agent_events`` and ``prompt_tokens``. ``takeover report`` reads the ``.eval``
logs beside its own results (:mod:`takeover.report.inspect_logs`).

Modules:

- ``dataset.py``: the samples of a folder of checkpoint folders (:func:`handoff_samples`);
- ``workspace.py``: the checkpoint's repository as an archive, and the solver that unpacks it in the sandbox;
- ``scoring.py``: the final patch, its grading and the run's counts (:func:`handoff_scorer`);
- ``task.py``: the task itself (:func:`handoff`); ``_registry.py``: what Inspect's entry point loads.

Needs the ``inspect`` extra (``pip install 'takeover[inspect]'``).
"""

from takeover.inspect_task.task import handoff

__all__ = ["handoff"]
