"""Predecessor and successor runs over mini-swe-agent (PROTOCOL.md sections 5, 8; issue 6)."""
