"""Handoff views, the takeover prompt and model-written notes (PROTOCOL.md section 7; issue 5)."""
