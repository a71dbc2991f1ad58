"""Verification commands, their results and restoring commands (docs/protocol.md section 4).

Which commands verify or restore is the shell grammar's (:mod:`takeover.commands`, imported here for the
points' rules); the results of a verification are read here. Pure functions over strings: no file system,
no git. Every rule here is written down in docs/protocol.md;
where the protocol is silent, the choice is documented on the function ("extension").
"""

from __future__ import annotations

import re

from takeover.commands.effects import BACKUP_SUFFIXES, is_git_restore_command, is_restore_command
from takeover.commands.grammar import strip_heredocs
from takeover.commands.runners import (
    RUNNER_PROGRAMS,
    RUNNER_SCRIPTS,
    RUNNER_SUBCOMMANDS,
    is_verification_command,
)
from takeover.points.runner_summaries import summaries
from takeover.vocabulary import VerificationResult

__all__ = [
    "BACKUP_SUFFIXES",
    "EVIDENCE_LIMIT",
    "FAILED_PATTERN",
    "PASSED_PATTERN",
    "RUNNER_PROGRAMS",
    "RUNNER_SCRIPTS",
    "RUNNER_SUBCOMMANDS",
    "failure_evidence",
    "is_git_restore_command",
    "is_restore_command",
    "is_verification_command",
    "strip_heredocs",
    "verification_result",
]

# --- verification results (docs/protocol.md section 4.2) --------------------------------------------------

FAILED_PATTERN = re.compile(
    r"assertionerror|traceback|(?<![a-z])failed|fail: true|pass: false|\d+ failed|error:|exception", re.IGNORECASE
)
PASSED_PATTERN = re.compile(
    r"all tests passed|tests? passed|pass: true|passed \d+|\d+ passed|\bok\b|successfully fixed|verified", re.IGNORECASE
)
EVIDENCE_LIMIT = 240  # characters, docs/protocol.md section 7 (structured notes: a failure line)


def verification_result(output: str | None, exit_code: int | None = None) -> VerificationResult:
    """Result of a verification command from its observation (docs/protocol.md section 4.2).

    Extension: when the output holds summary lines of a test runner, builder or linter
    (:func:`takeover.points.runner_summaries.summaries`), they decide: ``failed`` if one reports a failure
    or ``exit_code`` is positive; else ``passed`` if one reports a success; else ``unknown`` (nothing ran).
    Otherwise the paper's order: ``failed`` if the output matches the failure pattern (checked first;
    ``failed`` not inside a word such as ``xfailed``) or, extension, ``exit_code`` is non-zero; ``passed`` if
    it matches the pass pattern or ``exit_code`` is 0; otherwise ``unknown`` (no signal).
    """
    text = output or ""
    found = summaries(text)
    if found:
        if any(s.verdict == "failed" for s in found) or (exit_code is not None and exit_code > 0):
            return "failed"
        return "passed" if any(s.verdict == "passed" for s in found) else "unknown"
    if FAILED_PATTERN.search(text):
        return "failed"
    if exit_code is not None and exit_code != 0:
        return "failed"
    if PASSED_PATTERN.search(text) or exit_code == 0:
        return "passed"
    return "unknown"


def _clip(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."


def failure_evidence(output: str | None, limit: int = EVIDENCE_LIMIT) -> str | None:
    """A failure line from a verification observation, at most ``limit`` characters (section 7).

    The last summary line that reports a failure (extension: :func:`verification_result`), else the last
    line matching the failure pattern (for a traceback the exception line, for pytest the summary line),
    stripped; ``None`` when no line matches.
    """
    failing = [s.line for s in summaries(output) if s.verdict == "failed"]
    if failing:
        return _clip(failing[-1], limit)
    best = None
    for line in (output or "").splitlines():
        if FAILED_PATTERN.search(line) and line.strip():
            best = line.strip()
    return None if best is None else _clip(best, limit)
