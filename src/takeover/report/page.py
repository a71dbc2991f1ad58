"""What the HTML report shows, as data (docs/protocol.md section 9): the summary sections and, per handoff
point, the drill-down encoded for the page.

:func:`build_page` turns the report's tables (``report.json``), its rows and the unit records into a
:class:`ReportPage` (summary tables, charts, token accounting, unfinished units, the run index) and one
encoded drill-down per point (:func:`encode_section`). Drill-downs are encoded as they are built, so a
large experiment never holds more than one point's runs in memory; the page decodes a point only when a
reader opens it.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from takeover.report.charts import paired_differences, paired_differences_chart, solved_rate_chart, work_chart
from takeover.report.drilldown import PointSection, point_sections
from takeover.report.note_claims import mark_claims
from takeover.report.rediscovery import mark_steps, rediscovery_chart
from takeover.report.rows import ExperimentUnits, order_states, order_views
from takeover.vocabulary import POINT_TYPES

#: Counts of a run shown in the run table: from its row (the unit record), else from its run folder.
_COUNTS = ("agent_events", "llm_calls", "prompt_tokens", "cached_tokens", "completion_tokens", "reasoning_tokens",
           "estimated_calls")
#: Units listed per group of unfinished units (the rest are counted).
MAX_LISTED_PROBLEMS = 200


class RunIndexRow(NamedTuple):
    """One row of the page's run table: a takeover run with its counts (events, calls, tokens).

    ``cached_tokens`` is ``None`` when no call reported cached prompt tokens; ``estimated_calls`` counts
    calls whose usage is a tokenizer estimate (``None`` when unknown). A tuple: a report may have tens of
    thousands of rows."""

    takeover_key: str
    point_key: str
    successor: str
    instance_id: str
    point_type: str
    handoff_state: str | None
    view: str
    resolved: bool
    status: str
    failure_kind: str | None
    reason: str | None
    exit_status: str | None
    agent_events: int | None
    llm_calls: int | None
    prompt_tokens: int | None
    cached_tokens: int | None
    completion_tokens: int | None
    reasoning_tokens: int | None
    estimated_calls: int | None


class TokenAccounting(BaseModel):
    """Tokens of the takeover runs of one (successor, view), or of the note writer for one view, summed
    over its runs or units (tokens, calls).

    ``cached_tokens``: cached prompt tokens (a part of ``prompt_tokens``) and ``reasoning_tokens``
    (a part of ``completion_tokens``), ``None`` when nothing reported them; ``estimated_calls``: calls
    whose usage was estimated, ``None`` when no record said; ``llm_calls`` ``None`` when unknown."""

    successor: str | None = None
    view: str
    runs: int
    prompt_tokens: int = 0
    cached_tokens: int | None = None
    completion_tokens: int = 0
    reasoning_tokens: int | None = None
    llm_calls: int | None = None
    estimated_calls: int | None = None

    def add(self, counts: dict[str, Any]) -> None:
        """Add one run's or unit's counts (``None`` counts leave a sum unknown only if all are)."""
        self.runs += 1
        self.prompt_tokens += counts.get("prompt_tokens") or 0
        self.completion_tokens += counts.get("completion_tokens") or 0
        for f in ("cached_tokens", "reasoning_tokens", "llm_calls", "estimated_calls"):
            if counts.get(f) is not None:
                setattr(self, f, (getattr(self, f) or 0) + counts[f])


class ProblemUnit(BaseModel):
    """One unfinished unit in a :class:`ProblemGroup`; ``link`` is the page anchor of what it belongs
    to (a run or a point), when there is one."""

    key: str
    instance_id: str | None = None
    point_type: str | None = None
    view: str | None = None
    successor: str | None = None
    link: str | None = None


class ProblemGroup(BaseModel):
    """Units of one stage that did not finish for the same reason (``status``: failed, missing,
    blocked); at most :data:`MAX_LISTED_PROBLEMS` are listed, ``count`` counts all."""

    stage: str
    status: str
    failure_kind: str
    reason: str
    count: int = 0
    units: list[ProblemUnit] = Field(default_factory=list)


class PointHeader(BaseModel):
    """The closed line of a point's drill-down: what it is and how each of its runs ended."""

    point_key: str
    instance_id: str | None = None
    point_type: str | None = None
    handoff_state: str | None = None
    runs: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def views(self) -> list[str]:
        return order_views(list({r["view"] for r in self.runs}))

    @property
    def successors(self) -> list[str]:
        return sorted({r["successor"] for r in self.runs})


class ReportPage(BaseModel):
    """Everything ``report.html`` shows.

    Attributes:
        name: the experiment's name; data: ``report.json`` (tables, Table 1, note tokens, unit counts).
        charts: ``{name: inline SVG}``: ``solved_rate``, ``agent_events``, ``prompt_tokens``,
            ``diff_agent_events``, ``diff_prompt_tokens``.
        runs: the run table, one row per planned takeover run.
        tokens: token accounting of the takeover runs per (successor, view).
        note_tokens: token accounting of the note writer per view (not included in ``tokens``).
        problems: unfinished units grouped by stage and reason.
        points: one header per handoff point (the drill-down sections, in order).
        filters: the values offered by each filter: ``view``, ``successor``, ``state``, ``ptype``.
    """

    name: str
    data: dict[str, Any]
    charts: dict[str, str] = Field(default_factory=dict)
    runs: list[RunIndexRow] = Field(default_factory=list)
    tokens: list[TokenAccounting] = Field(default_factory=list)
    note_tokens: list[TokenAccounting] = Field(default_factory=list)
    problems: list[ProblemGroup] = Field(default_factory=list)
    points: list[PointHeader] = Field(default_factory=list)
    filters: dict[str, list[str]] = Field(default_factory=dict)


def encode_section(section: PointSection) -> str:
    """A drill-down section as the page carries it: JSON (``None`` fields left out), gzip, base64.
    The page decodes it with the browser's ``DecompressionStream`` when the point is opened."""
    raw = json.dumps(section.model_dump(mode="json", exclude_none=True), ensure_ascii=False, separators=(",", ":"))
    return base64.b64encode(gzip.compress(raw.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")


def decode_section(text: str) -> dict[str, Any]:
    """The JSON of an encoded section (:func:`encode_section`), as the page sees it."""
    return json.loads(gzip.decompress(base64.b64decode(text)).decode("utf-8"))


def _problem_link(stage: str, key: str, labels: dict) -> str | None:
    if stage == "takeover":
        return f"#run-{key}"
    if stage == "grade" and labels.get("takeover_key"):
        return f"#run-{labels['takeover_key']}"
    if stage in ("handoff_state", "view") and labels.get("point_key"):
        return f"#point-{labels['point_key']}"
    if stage == "checkpoint":
        return f"#point-{key}"
    return None


def problem_groups(units: ExperimentUnits) -> list[ProblemGroup]:
    """Failed, missing and blocked units grouped by (stage, status, failure kind, reason), in plan order."""
    groups: dict[tuple, ProblemGroup] = {}
    for p in units.problems:
        k = (p.stage, p.status, p.failure_kind, p.reason)
        g = groups.get(k)
        if g is None:
            g = groups[k] = ProblemGroup(stage=p.stage, status=p.status, failure_kind=p.failure_kind, reason=p.reason)
        g.count += 1
        if len(g.units) < MAX_LISTED_PROBLEMS:
            g.units.append(ProblemUnit(key=p.key, instance_id=p.labels.get("instance_id"),
                                       point_type=p.labels.get("point_type"), view=p.labels.get("view"),
                                       successor=p.labels.get("successor"),
                                       link=_problem_link(p.stage, p.key, p.labels)))
    return list(groups.values())


def _token_accounting(runs: list[RunIndexRow]) -> list[TokenAccounting]:
    acc: dict[tuple[str, str], TokenAccounting] = {}
    for r in runs:
        key = (r.successor, r.view)
        if key not in acc:
            acc[key] = TokenAccounting(successor=r.successor, view=r.view, runs=0)
        acc[key].add(r._asdict())
    rank = {v: i for i, v in enumerate(order_views(list({v for _, v in acc})))}
    return [acc[k] for k in sorted(acc, key=lambda k: (k[0], rank[k[1]]))]


def note_token_accounting(units: ExperimentUnits) -> list[TokenAccounting]:
    """Tokens the note writer spent per view (docs/protocol.md section 9: reported apart from the
    successors'), from the ``view`` units that have a result (failed ones included: their tokens were
    spent)."""
    acc: dict[str, TokenAccounting] = {}
    for entry in units.entries("view"):
        unit = units.get("view", entry["key"])
        if unit is None:
            continue
        view = entry["labels"]["view"]
        if view not in acc:
            acc[view] = TokenAccounting(view=view, runs=0)
        acc[view].add({**unit.output, "prompt_tokens": unit.prompt_tokens, "completion_tokens": unit.completion_tokens})
    return [acc[v] for v in order_views(list(acc))]


class Drilldown(NamedTuple):
    """The encoded drill-down of every handoff point (:func:`build_drilldown`).

    Attributes:
        blobs: ``{point_key: encoded section}`` (:func:`encode_section`).
        points: one :class:`PointHeader` per point, in page order.
        counts: per takeover run, the counts the page shows (events, calls, tokens) as its cell had them.
    """

    blobs: dict[str, str]
    points: list[PointHeader]
    counts: dict[str, dict[str, int | None]]


def build_drilldown(units: ExperimentUnits, rows: list[dict], *, steps: bool = True) -> Drilldown:
    """Build and encode every point's drill-down, one point at a time (needs no summary table, so it
    can run while the tables' bootstraps do).

    Args:
        units, rows: from :func:`takeover.report.rows.read_units` / :func:`~takeover.report.rows.collect_rows`.
        steps: read each run folder for its steps (``False``: unit records only, a smaller page).
    """
    found = Drilldown(blobs={}, points=[], counts={})
    view_keys: dict[str, dict[str, str]] = {}
    for entry in units.entries("view"):
        view_keys.setdefault(str(entry["labels"].get("point_key")), {})[str(entry["labels"].get("view"))] = entry["key"]
    for section in point_sections(units, rows, steps=steps):
        mark_steps(section, units.out)
        mark_claims(section, units.out, view_keys.get(section.point_key, {}))
        found.blobs[section.point_key] = encode_section(section)
        found.points.append(PointHeader(
            point_key=section.point_key, instance_id=section.instance_id, point_type=section.point_type,
            handoff_state=section.handoff.handoff_state,
            runs=[{"successor": c.successor, "view": c.view, "resolved": c.resolved, "status": c.status,
                   "takeover_key": c.takeover_key} for c in section.runs]))
        for c in section.runs:
            found.counts[c.takeover_key] = {f: getattr(c, f) for f in _COUNTS}
    return found


def build_page(units: ExperimentUnits, rows: list[dict], data: dict[str, Any], *, steps: bool = True,
               drilldown: Drilldown | None = None) -> tuple[ReportPage, dict[str, str]]:
    """The :class:`ReportPage` and ``{point_key: encoded drill-down}`` of an experiment.

    Args:
        units, rows: from :func:`takeover.report.rows.read_units` / :func:`~takeover.report.rows.collect_rows`.
        data: the ``report.json`` tables built from them.
        steps: read each run folder for its steps (``False``: unit records only, a smaller page).
        drilldown: the points' drill-down when already built (:func:`build_drilldown`).
    """
    page = ReportPage(name=str(data.get("name", "experiment")), data=data)
    summary = data.get("summary") or []
    if summary:
        page.charts["solved_rate"] = solved_rate_chart(summary)
        page.charts["agent_events"] = work_chart(summary, "agent_events")
        page.charts["prompt_tokens"] = work_chart(summary, "prompt_tokens")
        for metric in ("agent_events", "prompt_tokens"):
            diffs = paired_differences(rows, metric)
            if diffs:
                page.charts[f"diff_{metric}"] = paired_differences_chart(diffs, metric)
    if (data.get("rediscovery") or {}).get("summary"):
        page.charts["rediscovery"] = rediscovery_chart(data["rediscovery"])
    drilldown = drilldown or build_drilldown(units, rows, steps=steps)
    page.points = drilldown.points
    for r in rows:
        c = drilldown.counts.get(r["takeover_key"], {})
        page.runs.append(RunIndexRow(
            takeover_key=r["takeover_key"], point_key=r["point_key"], successor=r["successor"],
            instance_id=r["instance_id"], point_type=r["point_type"], handoff_state=r["handoff_state"],
            view=r["view"], resolved=bool(r["resolved"]), status=r["status"], failure_kind=r["failure_kind"],
            reason=r["reason"], exit_status=r["exit_status"],
            **{f: r[f] if r.get(f) is not None else c.get(f) for f in _COUNTS}))
    page.tokens = _token_accounting(page.runs)
    page.note_tokens = note_token_accounting(units)
    page.problems = problem_groups(units)
    page.filters = {
        "view": order_views(list({r["view"] for r in rows})),
        "successor": sorted({r["successor"] for r in rows}),
        "state": order_states(list({r["handoff_state"] or "ungraded" for r in rows})),
        "ptype": sorted({r["point_type"] for r in rows},
                        key=lambda t: (POINT_TYPES.index(t) if t in POINT_TYPES else len(POINT_TYPES), t)),
    }
    return page, drilldown.blobs
