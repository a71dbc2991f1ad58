"""Isolation per run in the report, and the warning above its tables (docs/protocol.md section 8.6).

Every agent run records what its isolation probe found (``run.json``'s ``isolation``,
:class:`takeover.agents.isolation.Isolation`). The report lists every predecessor and takeover run with
``isolated``, ``not isolated`` (what the probe found, in words), ``not verified`` (a run made before the
probe existed: its record has no ``isolation``) or ``imported`` (a predecessor recorded by another tool,
confined by its recording's environment, which takeover cannot probe). When any run is ``not isolated`` or
``not verified``, a warning heads the report: a difference between views is then not known to be the
view's alone. An imported predecessor is not counted there: it is the same run behind every view of its
points, so it cannot make one view differ from another.

A stored run made before the probe is reused (its inputs key is unchanged: isolation is how a run was
confined, not what it was asked to do, and re-running every stored predecessor would cost its model calls)
and marked ``not verified`` here instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from takeover.report.rows import ExperimentUnits

#: The stages whose units are agent runs (each output names its ``run_dir``).
RUN_STAGES = ("predecessor", "takeover")
ISOLATED, NOT_ISOLATED, NOT_VERIFIED, IMPORTED = "isolated", "not isolated", "not verified", "imported"


def _status(run_dir: str | None) -> tuple[str, list[str]]:
    """``(status, problems)`` of the run in ``run_dir`` from its ``run.json``."""
    if not run_dir:
        return NOT_VERIFIED, ["no run folder recorded"]
    try:
        record = json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return NOT_VERIFIED, [f"{run_dir}/run.json cannot be read"]
    found = record.get("isolation")
    if not isinstance(found, dict):
        return NOT_VERIFIED, ["made before the isolation probe existed"]
    if found.get("isolated"):
        return ISOLATED, []
    return NOT_ISOLATED, [str(p) for p in found.get("problems") or ["the probe found a leak"]]


def run_isolation(units: ExperimentUnits) -> dict[str, Any]:
    """Isolation of every finished agent run of the folder.

    Returns:
        ``{"runs": [{"stage", "key", "instance_id", "view", "status", "problems"}], "counts": {status: n}}``
        in plan order; ``status`` is ``isolated``, ``not isolated``, ``not verified`` or ``imported``.
    """
    runs: list[dict[str, Any]] = []
    for stage in RUN_STAGES:
        for entry in units.entries(stage):
            unit = units.done(stage, entry["key"])
            if unit is None:
                continue
            if stage == "predecessor" and not unit.output.get("run_dir") and unit.output.get("file"):
                status, problems = IMPORTED, [f"recorded by {unit.output.get('format') or 'another tool'}, not probed"]
            else:
                status, problems = _status(unit.output.get("run_dir"))
            runs.append({"stage": stage, "key": entry["key"], "instance_id": entry["labels"].get("instance_id"),
                         "view": entry["labels"].get("view"), "status": status, "problems": problems})
    counts = {s: sum(r["status"] == s for r in runs) for s in (ISOLATED, NOT_ISOLATED, NOT_VERIFIED, IMPORTED)}
    return {"runs": runs, "counts": counts}


def isolation_markdown(isolation: dict[str, Any] | None) -> str:
    """The warning above the report's tables when any run is not isolated (``""`` when all are)."""
    if not isolation:
        return ""
    bad = [r for r in isolation["runs"] if r["status"] in (NOT_ISOLATED, NOT_VERIFIED)]
    if not bad:
        return ""
    counts = isolation["counts"]
    probed = len(isolation["runs"]) - counts.get(IMPORTED, 0)
    warning = (f"> **Warning: {len(bad)} of {probed} agent runs were not isolated** "
               f"({counts.get(NOT_ISOLATED, 0)} not isolated, {counts.get(NOT_VERIFIED, 0)} not verified): their "
               "agents may have read more than their view (newer commits, the dataset, other runs' files), so "
               "differences between views are not known to be the views' alone (docs/protocol.md section 8.6).")
    lines = [warning, ">"]
    for r in bad[:20]:
        what = f"{r['stage']} {r['instance_id']}" + (f" {r['view']}" if r.get("view") else "")
        lines.append(f"> - {what}: {r['status']}: {'; '.join(r['problems'])[:300]}")
    if len(bad) > 20:
        lines.append(f"> - and {len(bad) - 20} more (report.json, `isolation`)")
    return "\n".join(lines) + "\n\n"


def isolation_table(isolation: dict[str, Any] | None) -> str:
    """The per-run section ``## Isolation``: one line per run (``""`` without runs)."""
    if not isolation or not isolation["runs"]:
        return ""
    out = ["## Isolation\n", "| stage | instance | view | isolation |", "|---|---|---|---|"]
    for r in isolation["runs"]:
        out.append(f"| {r['stage']} | {r['instance_id']} | {r.get('view') or ''} | {r['status']} |")
    return "\n".join(out) + "\n\n"
