"""Report: tables, statistics, plots and HTML pages from per-unit result files (docs/protocol.md
section 9).

Public API: :func:`build_report` (``takeover report OUT_DIR``) and :class:`Report`;
:func:`write_run_page` (``takeover show RUN_DIR|TRAJECTORY``); :class:`ReportNotice` and
:func:`write_notice` (a notice every report of a folder shows, :mod:`.notice`).

Modules, in the order data flows through them: :mod:`.stats` (medians, paired bootstrap, McNemar,
Wilson), :mod:`.rows` (unit files read once, one row per takeover run), :mod:`.tables` (the summary
tables), :mod:`.markdown` (``report.md``), :mod:`.plots` (PNG plots), :mod:`.charts` (inline SVG charts),
:mod:`.transcript` (a run's steps from any trajectory), :mod:`.drilldown` (everything behind one handoff
point), :mod:`.page` (what ``report.html`` shows), :mod:`.html_page` (the Jinja templates in
``templates/``), :mod:`.experiment_report` (writes every file) and :mod:`.run_page` (``takeover show``).
"""

from takeover.report.experiment_report import Report, build_report, require_whole
from takeover.report.notice import ReportNotice, read_notice, write_notice
from takeover.report.run_page import write_run_page

__all__ = ["Report", "ReportNotice", "build_report", "read_notice", "require_whole", "write_notice", "write_run_page"]
