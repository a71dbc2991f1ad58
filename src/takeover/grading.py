"""SWE-bench grading of a patch and the handoff state of a checkpoint (PROTOCOL.md sections 6, 8; issue 3)."""
