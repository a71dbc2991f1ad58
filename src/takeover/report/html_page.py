"""Rendering of the report's HTML pages with the package's Jinja templates (docs/protocol.md section 9).

Templates live in ``takeover/report/templates``: ``report.html.j2`` (``report.html``), ``run.html.j2``
(``takeover show``), and the page's own ``page.css`` and ``page.js``, inlined so that a page is one
self-contained file (no server, no network, no external script or font). Undefined template variables
fail loudly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from takeover._util.io import atomic_write_chunks
from takeover.report.markdown import format_number
from takeover.report.page import MAX_LISTED_PROBLEMS, ReportPage
from takeover.report.rows import order_states


def _opt(x: float | None) -> str:
    """A count with thousands separators; empty when unknown."""
    return "" if x is None else f"{x:,}"


@cache
def _environment() -> Environment:
    env = Environment(loader=PackageLoader("takeover.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, keep_trailing_newline=True)
    env.globals.update(num=format_number, opt=_opt, max_listed=MAX_LISTED_PROBLEMS)
    return env


@cache
def _asset(name: str) -> Markup:
    """``page.css`` or ``page.js`` as trusted text for inlining."""
    return Markup((files("takeover.report") / "templates" / name).read_text(encoding="utf-8"))


#: Columns of the run table in the page index (one JSON array per run, in this order).
RUN_COLUMNS = ("takeover_key", "point_key", "successor", "instance_id", "point_type", "handoff_state", "view",
               "resolved", "status", "failure_kind", "reason", "exit_status", "agent_events", "llm_calls",
               "prompt_tokens", "cached_tokens", "completion_tokens", "estimated_calls")
#: Characters of a failure reason kept in the run table (the drill-down has it whole).
REASON_CHARS = 300


def _script_json(value: Any) -> Markup:
    """JSON that is safe inside ``<script>``: ``<``, ``>`` and ``&`` are written as ``\\u`` escapes."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _index_chunks(index: dict[str, Any], rows_per_chunk: int = 500) -> Iterator[Markup]:
    """The JSON of :func:`page_index` in pieces of ``rows_per_chunk`` runs, so that the text of a large
    index is never built whole."""
    runs, rest = index["runs"], {k: v for k, v in index.items() if k != "runs"}
    yield Markup('{"runs":{"columns":') + _script_json(runs["columns"]) + Markup(',"rows":[')
    rows = runs["rows"]
    for start in range(0, len(rows), rows_per_chunk):
        part = _script_json(rows[start:start + rows_per_chunk])[1:-1]
        yield Markup(",") + part if start else part
    yield Markup("]}")
    for key, value in rest.items():
        yield Markup(",") + _script_json(key) + Markup(":") + _script_json(value)
    yield Markup("}")


def page_index(page: ReportPage) -> dict[str, Any]:
    """What the page's script builds the run table and the list of handoff points from:
    ``{"runs": {"columns": RUN_COLUMNS, "rows": [[...], ...]}, "points": [[point_key, instance_id,
    point_type, handoff_state, [[successor, view, resolved, status, takeover_key], ...], several
    successors?], ...]}``."""
    rows = []
    at = RUN_COLUMNS.index("reason")
    for r in page.runs:
        row = [getattr(r, c) for c in RUN_COLUMNS]
        if row[at] and len(row[at]) > REASON_CHARS:
            row[at] = row[at][:REASON_CHARS] + "..."
        rows.append(row)
    points = [[p.point_key, p.instance_id, p.point_type, p.handoff_state,
               [[r["successor"], r["view"], r["resolved"], r["status"], r["takeover_key"]] for r in p.runs],
               len(p.successors) > 1] for p in page.points]
    return {"runs": {"columns": list(RUN_COLUMNS), "rows": rows}, "points": points}


def _report_chunks(page: ReportPage, blobs: dict[str, str]) -> Iterator[str]:
    states = order_states(list({s for c in page.data["table1"]["points"].values() for s in c}))
    return _environment().get_template("report.html.j2").generate(
        page=page, data=page.data, blobs=blobs, states=states, index=_index_chunks(page_index(page)),
        css=_asset("page.css"), js=_asset("page.js"))


def render_report(page: ReportPage, blobs: dict[str, str]) -> str:
    """The text of ``report.html`` for ``page`` and its encoded drill-downs ``{point_key: blob}``."""
    return "".join(_report_chunks(page, blobs))


def render_run_page(title: str, source: str, formats: list[str], points: list[dict[str, Any]],
                    *, open_first: int = 1) -> str:
    """The text of a ``takeover show`` page.

    Args:
        title: the page heading; source: the path that was read; formats: trajectory format names.
        points: ``[{"key", "label", "blob"}]``, one per run (``blob`` from
            :func:`takeover.report.page.encode_section`).
        open_first: how many of them are open (and built) when the page loads.
    """
    return _environment().get_template("run.html.j2").render(
        title=title, source=source, formats=formats, points=points, open_first=open_first,
        css=_asset("page.css"), js=_asset("page.js"))


def write_report_html(path: Path | str, page: ReportPage, blobs: dict[str, str]) -> Path:
    """Write ``report.html`` atomically, chunk by chunk as the template renders; returns its path."""
    return atomic_write_chunks(path, _report_chunks(page, blobs))
