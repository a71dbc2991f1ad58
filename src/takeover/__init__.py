"""takeover: measure handoff debt, the extra work a coding agent pays to resume a half-done task.

Implements the takeover protocol of "Handoff Debt" (arXiv 2606.02875); see docs/protocol.md. The package is
laid out by the protocol's concepts, in the order data flows through them:

tasks -> trajectories -> (repos, environments, snapshots, replay) -> points -> checkpoints -> grading
-> views -> agents -> experiments -> report
"""

__version__ = "0.1.0"
