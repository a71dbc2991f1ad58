"""Report: tables, statistics and plots from per-unit result files (docs/protocol.md section 9; issue 7).

Public API: :func:`build_report` (``takeover report OUT_DIR``) and :class:`Report`.
"""

from takeover.report.build import Report, build_report

__all__ = ["Report", "build_report"]
