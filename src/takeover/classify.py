"""File classes, verification commands and verification results (PROTOCOL.md sections 3, 4; issue 4)."""
