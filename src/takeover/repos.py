"""Repository mirrors and workspaces (PROTOCOL.md sections 5, 6; issue 3)."""
