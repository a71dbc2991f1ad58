"""Report: tables, statistics, plots and an HTML page from per-unit result files (docs/protocol.md
section 9).

Public API: :func:`build_report` (``takeover report OUT_DIR``) and :class:`Report`.

Modules, in the order data flows through them: :mod:`.stats` (medians, bootstrap, McNemar, Wilson),
:mod:`.rows` (reading unit files into one row per takeover run), :mod:`.tables` (the summary tables),
:mod:`.markdown` (``report.md``), :mod:`.plots` (PNG plots), :mod:`.experiment_report` (writes every file).
"""

from takeover.report.experiment_report import Report, build_report

__all__ = ["Report", "build_report"]
