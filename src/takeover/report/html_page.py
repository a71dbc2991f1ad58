"""Rendering of the report's HTML pages with the package's Jinja templates (docs/protocol.md section 9).

Templates live in ``takeover/report/templates``: ``report.html.j2`` (``report.html``), ``run.html.j2``
(``takeover show``), and the page's own ``page.css`` and ``page.js``, inlined so that a page is one
self-contained file (no server, no network, no external script or font). Undefined template variables
fail loudly.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from takeover._io import atomic_write_text
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


def render_report(page: ReportPage, blobs: dict[str, str]) -> str:
    """The text of ``report.html`` for ``page`` and its encoded drill-downs ``{point_key: blob}``."""
    states = order_states(list({s for c in page.data["table1"]["points"].values() for s in c}))
    return _environment().get_template("report.html.j2").render(
        page=page, data=page.data, blobs=blobs, states=states, css=_asset("page.css"), js=_asset("page.js"))


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
    """Write ``report.html`` atomically; returns its path."""
    return atomic_write_text(path, render_report(page, blobs))
