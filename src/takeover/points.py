"""Handoff point detection (PROTOCOL.md section 4; issue 4)."""
