"""The shell-command grammar: how a command an agent ran is split and what it does to the repository's files.

Modules:

- ``grammar.py``: here-documents, segments (``&&``, ``||``, ``;``, ``|``, line breaks outside quotes),
  words, redirections, the program of a segment after assignments, wrappers and launchers, git's
  subcommand (:func:`segments`, :class:`Segment`).
- ``runners.py``: verification commands, the test runners, builders and linters (docs/protocol.md
  section 4.1, :func:`is_verification_command`).
- ``effects.py``: what a command reads, writes and restores, and whether it is read-only
  (:func:`file_reads`, :func:`written_files`, :func:`is_restore_command`).
- ``searches.py``: what a command searches, the idioms that hand a searcher its files included
  (:func:`searches`, :class:`Search`).
- ``repeats.py``: when a command run again is the same run: its normal form, what its output depends on
  besides the files, whether it installs packages (:func:`normal_form`, :func:`varying_output`).

Pure functions over strings: nothing here touches a file or runs a process.
"""

from takeover.commands.effects import (
    BACKUP_SUFFIXES,
    FileRead,
    file_reads,
    heredoc_targets,
    is_git_restore_command,
    is_read_only,
    is_restore_command,
    repo_path,
    rewrites_worktree,
    written_files,
)
from takeover.commands.grammar import Segment, git_subcommand, program_of, segments, strip_heredocs, words
from takeover.commands.repeats import (
    NormalForm,
    changes_environment,
    normal_form,
    scripts_run,
    varying_output,
)
from takeover.commands.runners import is_verification_command
from takeover.commands.searches import Search, searches

__all__ = [
    "BACKUP_SUFFIXES",
    "FileRead",
    "NormalForm",
    "Search",
    "Segment",
    "changes_environment",
    "file_reads",
    "git_subcommand",
    "heredoc_targets",
    "is_git_restore_command",
    "is_read_only",
    "is_restore_command",
    "is_verification_command",
    "normal_form",
    "program_of",
    "repo_path",
    "rewrites_worktree",
    "scripts_run",
    "searches",
    "segments",
    "strip_heredocs",
    "varying_output",
    "words",
    "written_files",
]
