"""What the ``inspect_ai`` entry point of the package loads: importing the task registers it with Inspect as
``takeover/handoff`` (``inspect eval takeover/handoff``)."""

from takeover.inspect_task.task import handoff

__all__ = ["handoff"]
