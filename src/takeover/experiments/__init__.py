"""Experiments end to end: config, units of work, executors (PROTOCOL.md sections 2-9; issue 7)."""
