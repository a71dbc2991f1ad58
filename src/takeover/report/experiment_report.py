"""The report of an experiment: every file ``takeover report OUT`` writes, from the per-unit result
files alone (docs/protocol.md section 9).

Outputs in ``OUT``: ``results.csv`` (one row per takeover run), ``report.json`` (every table),
``report.md`` (the tables as Markdown), ``report.html`` (one self-contained page: the tables, charts and a
drill-down into every handoff point) and the PNG plots ``plots/events_tokens.png`` and
``plots/solved_rate.png``. The rules of the tables are in :mod:`takeover.report.tables`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from takeover._util.io import atomic_write_json, atomic_write_text
from takeover.errors import UnreadableRecords
from takeover.report.html_page import write_report_html
from takeover.report.isolation_warning import run_isolation
from takeover.report.markdown import render_markdown
from takeover.report.note_claims import add_claim_figures, claims_markdown, claims_section
from takeover.report.notice import read_notice
from takeover.report.page import build_drilldown, build_page
from takeover.report.plots import write_plots
from takeover.report.rediscovery import rediscovery_markdown, rediscovery_tables, write_rediscovery_plot
from takeover.report.rows import (
    collect_rows,
    grading_rules_used,
    grading_warnings,
    note_tokens,
    read_units,
    table1,
    write_csv,
)
from takeover.report.stats import DEFAULT_RESAMPLES, DEFAULT_SEED
from takeover.report.tables import summary_tables


class Report(BaseModel):
    """The report of one experiment; ``data`` is exactly what ``report.json`` holds.

    Attributes:
        out_dir: the experiment folder; files: ``{file name: path}`` of what was written.
        rows: one dict per takeover run (the columns of ``results.csv`` plus ``point_key`` and
            ``takeover_key``).
        data: ``name``, ``bootstrap`` settings, ``takeover_runs``, the ``summary`` table and the
            ``by_handoff_state``/``by_point_type`` breakdowns, ``table1`` counts, ``note_writing`` tokens,
            grading ``warnings``, ``grading_rules`` (gradings per verdict rule set; more than one is said in
            the report), ``units`` (status counts per stage), ``not_imported`` (selected instances
            without a predecessor run, with why), ``import_notes`` (trajectory files not imported) and
            ``rediscovery`` (:func:`takeover.report.rediscovery.rediscovery_tables`), ``claims``
            (:func:`takeover.report.note_claims.claims_section`; each summary entry of a checked view also
            carries its ``claims`` figures), ``unreadable_records``
            (other tools' records in the folder that could not be read, a damaged Harbor trial or Inspect
            log: ``{"source", "path", "reason", "takeover_key"}``, the key of the run's row, marked
            ``unreadable``, or ``None`` when no run could be placed; see :func:`require_whole`),
            ``repeated_runs`` (runs of another tool that repeat a (successor, point, view) the tables hold
            already, not counted: ``{"takeover_key", "counted", "successor", "point_key", "view"}``).
        markdown: the text of ``report.md``.
    """

    out_dir: str
    files: dict[str, str] = Field(default_factory=dict)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    data: dict[str, Any] = Field(default_factory=dict)
    markdown: str = ""


def require_whole(data: dict[str, Any]) -> None:
    """Check that a report's folder held no record of another tool it could not read (``data`` is
    ``report.json``'s). ``takeover report`` calls it once the files are written, so that a script sees that
    the report is not whole (exit status 2).

    Raises:
        UnreadableRecords: it held some; the message says how many, where they are listed, and the first
            file and reason.
    """
    records = data.get("unreadable_records") or []
    if records:
        raise UnreadableRecords(f"{len(records)} record(s) of other tools could not be read (listed under "
                                f"\"Unreadable records\" in report.md; runs not solved where they can be placed), "
                                f"e.g. {records[0]['reason']}")


def build_report(out_dir: Path | str, *, plots: bool = True, html: bool = True) -> Report:
    """Read ``OUT/plan.json`` and the unit files, write ``results.csv``, ``report.json``, ``report.md``,
    (with ``html``) ``report.html`` and (with ``plots``) the PNG plots; return the :class:`Report`.

    A notice the folder carries (``OUT/notice.json``, :mod:`takeover.report.notice`: the quickstart's
    "a demonstration, not a measurement") heads ``report.md`` and ``report.html``.

    ``report.html`` also reads each takeover run's folder for its steps (through the unit records'
    paths, or ``OUT/work/takeover/<key>/run``); a missing folder leaves that run without steps.

    The bootstrap settings come from ``plan.json`` (``bootstrap.resamples``, ``bootstrap.seed``; defaults
    5,000 resamples and :data:`takeover.report.stats.DEFAULT_SEED`).

    Raises:
        InputError: ``out_dir`` has no readable ``plan.json``.
    """
    out = Path(out_dir)
    units = read_units(out)
    notice = read_notice(out)
    boot = units.plan.get("bootstrap", {})
    resamples = int(boot.get("resamples", DEFAULT_RESAMPLES))
    seed = int(boot.get("seed", DEFAULT_SEED))
    unreadable: list[dict[str, Any]] = []
    repeated: list[dict[str, Any]] = []
    rows = collect_rows(units, unreadable=unreadable, repeated=repeated)
    # Before the drill-down, which marks each step with the labels stored here.
    rediscovery = rediscovery_tables(out, rows, resamples=resamples, seed=seed)
    claims = claims_section(out)
    # The bootstraps (numpy, without the GIL) run while the drill-down of every point is built.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(summary_tables, rows, resamples=resamples, seed=seed)
        drilldown = build_drilldown(units, rows) if html else None
        tables = pending.result()
    add_claim_figures(tables, claims, rows)
    data: dict[str, Any] = {
        "name": units.plan.get("name", "experiment"),
        **({"notice": notice.model_dump()} if notice else {}),
        "bootstrap": {"resamples": resamples, "seed": seed, "statistic": "relative change of medians, paired"},
        "takeover_runs": len(rows),
        **tables,
        "table1": table1(units),
        "note_writing": note_tokens(units),
        "warnings": grading_warnings(units),
        "isolation": run_isolation(units),
        "grading_rules": grading_rules_used(units),
        "units": units.status,
        "unusable_unit_files": units.unusable,
        "unreadable_records": unreadable,
        "repeated_runs": repeated,
        "not_imported": units.plan.get("not_imported", {}),
        "import_notes": units.plan.get("import_notes", []),
        "rediscovery": rediscovery,
        "claims": claims,
    }
    # Built without validation: the rows and tables are made above, and validating would copy every row.
    report = Report.model_construct(out_dir=str(out), rows=rows, data=data,
                                    markdown=render_markdown(data) + rediscovery_markdown(rediscovery)
                                    + claims_markdown(claims))
    write_csv(out / "results.csv", rows)
    atomic_write_json(out / "report.json", data)
    atomic_write_text(out / "report.md", report.markdown)
    report.files = {"results.csv": str(out / "results.csv"), "report.json": str(out / "report.json"),
                    "report.md": str(out / "report.md")}
    if html:
        page, blobs = build_page(units, rows, data, drilldown=drilldown)
        del drilldown
        del units  # the page is written from its own data: the unit records' memory is reused for it
        report.files["report.html"] = str(write_report_html(out / "report.html", page, blobs))
        del page, blobs  # freed before matplotlib loads: the plots need only the summary table
    else:
        del units
    if plots and rows:
        report.files.update(write_plots(out / "plots", data["summary"]))
        report.files.update(write_rediscovery_plot(out / "plots", rediscovery))
    return report
