"""Emulation of agents' editors for replay (docs/protocol.md section 5): what an action the recorded run
made through a file editor, one of SWE-agent's own commands or an OpenHands IPython cell did to the
repository, applied in Python, never through a shell.

- :mod:`.file_editor`: the workspace's files (recorded paths mapped into it, text read the way Python
  editors read it, an undo history per file);
- :mod:`.editor_tools`: ``file_edit`` actions with the recording tool's own rules, decided by its recorded
  answer (:func:`apply_edit`; the rules are the reader's
  :attr:`~takeover.trajectories.ReplayNeeds.editor_flavor`);
- :mod:`.swe_agent_tools`: SWE-agent's ``create``/``open``/``edit``/``insert`` commands and
  ``str_replace_editor`` command lines (:func:`swe_agent_command`, :func:`editor_command`);
- :mod:`.agent_skills`: OpenHands 0.x IPython cells calling its file-editing agent skills
  (:func:`replay_cell`).

Each returns an :data:`EditOutcome`: what the replay did (``edit``, ``noop``, ``skipped`` or
``unreplayable``) and a one-line detail.
"""

from takeover.repository_states.editors.agent_skills import replay_cell
from takeover.repository_states.editors.editor_tools import apply_edit, recorded_outcome
from takeover.repository_states.editors.file_editor import EditOutcome, FileEditor
from takeover.repository_states.editors.swe_agent_tools import (
    displayed_window,
    editor_command,
    swe_agent_command,
)

__all__ = [
    "EditOutcome",
    "FileEditor",
    "apply_edit",
    "displayed_window",
    "editor_command",
    "recorded_outcome",
    "replay_cell",
    "swe_agent_command",
]
