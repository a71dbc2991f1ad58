"""Checkpoint materialization (PROTOCOL.md section 5; issue 4)."""
