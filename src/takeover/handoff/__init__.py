"""Handoffs in real work: the takeover prompt for an interrupted agent session, and its successor.

``takeover handoff SESSION --repo DIR`` and ``takeover resume`` are thin layers over this package:

- ``worktree.py``: the repository's state at the handoff, read without changing it
  (:func:`repository_state`: diff against the session's starting commit or ``HEAD``, untracked files).
- ``session.py``: the session as a handoff point: its events with secrets masked, its task (the first user
  request), its source edits, the point at its last event (:func:`session_point`).
- ``compose.py``: :func:`compose_handoff`: the facts, the structured notes' deterministic fields and one
  view, built by the study's view builder (note writer, validation, retries, leak guard).
- ``printout.py``: :func:`handoff_markdown`, the printed form (Markdown).
- ``resume.py``: :func:`takeover.handoff.resume.resume_session`, a successor run on a copy of the
  repository. It is not imported here: it imports the agents (mini-swe-agent, litellm: seconds).

Rules: docs/protocol.md sections 3-5 (facts, repository state) and 7 (views, notes, leak guard); the
session-specific choices are in each module's docstring.
"""

from takeover.handoff.compose import Handoff, NotesFailure, SessionInfo, compose_handoff
from takeover.handoff.printout import handoff_markdown
from takeover.handoff.session import read_session, session_point, session_source_edits, session_task
from takeover.handoff.worktree import RepositoryState, repository_root, repository_state

__all__ = [
    "Handoff",
    "NotesFailure",
    "RepositoryState",
    "SessionInfo",
    "compose_handoff",
    "handoff_markdown",
    "read_session",
    "repository_root",
    "repository_state",
    "session_point",
    "session_source_edits",
    "session_task",
]
