"""Small unit functions for testing and benchmarking the experiment engine (no model, no repository).

Each follows the unit protocol of :mod:`takeover.experiments.units`: ``fn(inputs, ctx) -> UnitOutcome``.
They live in the package (not in a test file) so that worker processes and Ray workers, which receive a
unit function by reference, can import them.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

from takeover.experiments.units import UnitContext, UnitFailure, UnitOutcome


def record_call(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Sleep ``inputs["sleep"]`` seconds, append ``{key, pid, start, end, resources}`` to the JSON Lines
    file ``inputs["log"]``, and return ``{"double": 2 * inputs["value"]}`` with ``value`` prompt tokens
    and 1 completion token.

    With ``inputs["meet"]`` (a folder), the unit also writes ``<meet>/<value>`` when it starts and waits
    (at most 120 seconds) until every file named in ``inputs["peers"]`` exists there: units that meet
    prove they ran at the same time, whatever the machine's load.

    Raises:
        UnitFailure: a peer did not start within 120 seconds (``infrastructure``).
    """
    start = time.time()
    if inputs.get("meet"):
        meet = inputs["meet"]
        with open(os.path.join(meet, str(inputs.get("value"))), "w", encoding="utf-8"):
            pass
        deadline = time.monotonic() + 120
        while not all(os.path.exists(os.path.join(meet, str(p))) for p in inputs.get("peers", [])):
            if time.monotonic() > deadline:
                raise UnitFailure(f"peers {inputs.get('peers')} did not start within 120 s", "infrastructure")
            time.sleep(0.05)
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


def wait_for_release(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """A unit that blocks: append ``{key, value, pid, attempt}`` to the JSON Lines file ``inputs["log"]``
    (``attempt``: 1 for the first start of this unit, counted from that file), start ``sleep
    inputs["sleep_token"]`` as the leader of a session of its own (as the process runner starts commands),
    then wait until the file ``inputs["release"]`` exists (looking every 0.05 s, at most ``inputs["timeout"]``
    seconds, default 600), stop the sleep and return ``{"double": 2 * value}`` with ``value`` prompt tokens.

    ``inputs["block"] = False``: do not wait. ``inputs["once"] = True``: wait on the first attempt only (a
    redone unit returns at once). The output depends on ``value`` only, so that an interrupted and resumed
    run can be compared with an uninterrupted one.
    """
    log = inputs["log"]
    attempt = 1
    if os.path.exists(log):
        with open(log, encoding="utf-8") as fh:
            attempt += sum(1 for line in fh if json.loads(line)["key"] == ctx.key)
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"key": ctx.key, "value": inputs["value"], "pid": os.getpid(), "attempt": attempt})
                 + "\n")
    sleeper = None
    if inputs.get("sleep_token"):
        sleeper = subprocess.Popen(["sleep", str(inputs["sleep_token"])], start_new_session=True)
    try:
        block = inputs.get("block", True) and not (inputs.get("once") and attempt > 1)
        deadline = time.monotonic() + float(inputs.get("timeout", 600))
        while block and not os.path.exists(inputs["release"]) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
    return UnitOutcome(output={"double": 2 * inputs["value"]}, prompt_tokens=inputs["value"], completion_tokens=1)
