"""Report: tables, statistics and plots from per-unit result files (PROTOCOL.md section 9; issue 7)."""
