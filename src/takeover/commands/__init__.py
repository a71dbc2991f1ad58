"""The shell-command grammar: how a command an agent ran is split and what it does to the repository's files.

Modules:

- ``grammar.py``: here-documents, segments (``&&``, ``||``, ``;``, ``|``, line breaks outside quotes),
  words, redirections, the program of a segment after assignments, wrappers and launchers, git's
  subcommand (:func:`segments`, :class:`Segment`).
- ``runners.py``: verification commands, the test runners, builders and linters (docs/protocol.md
  section 4.1, :func:`is_verification_command`).
- ``effects.py``: what a command reads, searches, writes and restores, and whether it is read-only
  (:func:`file_reads`, :func:`searches`, :func:`written_files`, :func:`is_restore_command`).

Pure functions over strings: nothing here touches a file or runs a process.
"""

from takeover.commands.effects import (
    BACKUP_SUFFIXES,
    FileRead,
    Search,
    file_reads,
    heredoc_targets,
    is_git_restore_command,
    is_read_only,
    is_restore_command,
    repo_path,
    rewrites_worktree,
    searches,
    written_files,
)
from takeover.commands.grammar import Segment, git_subcommand, program_of, segments, strip_heredocs, words
from takeover.commands.runners import is_verification_command

__all__ = [
    "BACKUP_SUFFIXES",
    "FileRead",
    "Search",
    "Segment",
    "file_reads",
    "git_subcommand",
    "heredoc_targets",
    "is_git_restore_command",
    "is_read_only",
    "is_restore_command",
    "is_verification_command",
    "program_of",
    "repo_path",
    "rewrites_worktree",
    "searches",
    "segments",
    "strip_heredocs",
    "words",
    "written_files",
]
