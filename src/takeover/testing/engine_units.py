"""Small unit functions for testing and benchmarking the experiment engine (no model, no repository).

Each follows the unit protocol of :mod:`takeover.experiments.units`: ``fn(inputs, ctx) -> UnitOutcome``.
They live in the package (not in a test file) so that worker processes and Ray workers, which receive a
unit function by reference, can import them.
"""

from __future__ import annotations

import json
import os
import time

from takeover.experiments.units import UnitContext, UnitFailure, UnitOutcome


def record_call(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Sleep ``inputs["sleep"]`` seconds, append ``{key, pid, start, end, resources}`` to the JSON Lines
    file ``inputs["log"]``, and return ``{"double": 2 * inputs["value"]}`` with ``value`` prompt tokens
    and 1 completion token."""
    start = time.time()
    time.sleep(float(inputs.get("sleep", 0)))
    end = time.time()
    line = json.dumps({"key": ctx.key, "pid": os.getpid(), "start": start, "end": end,
                       "resources": inputs.get("resources", []), "value": inputs.get("value")})
    with open(inputs["log"], "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    return UnitOutcome(output={"double": 2 * inputs.get("value", 0)}, prompt_tokens=inputs.get("value", 0),
                       completion_tokens=1)


def fail_unless_file(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Fail (``inputs["kind"]``: ``infrastructure``, ``agent`` or ``crash`` for a plain exception) unless
    the file ``inputs["ok_file"]`` exists; then succeed with ``{"ok": true}``. A failure reports
    ``inputs["prompt_tokens"]`` prompt tokens spent (default 0)."""
    if not os.path.exists(inputs["ok_file"]):
        if inputs.get("kind") == "crash":
            raise RuntimeError("boom")
        raise UnitFailure(f"{inputs['ok_file']} is missing", inputs.get("kind", "infrastructure"),
                          prompt_tokens=inputs.get("prompt_tokens", 0))
    return UnitOutcome(output={"ok": True})
