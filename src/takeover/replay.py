"""Replay of imported runs in a fresh workspace (PROTOCOL.md section 5 source (c); issue 4)."""
