"""The embedded default model endpoint (issue 8)."""
