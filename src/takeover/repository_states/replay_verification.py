"""Whether a replay reproduces the run's own submission (docs/protocol.md section 5.4).

Two rules, tried in this order; the verdict names the one that verified the run:

- ``whole_tree``: the replayed final state, every non-ignored file (untracked ones included), equals the
  submission. Submissions made with ``git add -A && git diff --cached`` (mini-swe-agent 1.x, OpenHands,
  SWE-agent) cover the whole tree this way.
- ``submitted_files``: the submission covers only some of the changed files. mini-swe-agent 2.x has the
  agent write ``git diff -- <files> > patch.txt`` and submit by printing that file, so scratch scripts and
  ``patch.txt`` itself stay out of it. Such a run verifies when both hold: the replayed output of its
  submitting command equals the submission, and the replayed state restricted to the submission's files
  equals it: the state after the event that last wrote the file the submitting command prints
  (``patch.txt``), since a file may be reverted after the patch was written (extension), else the final
  state. The files outside the submission stay in the states as the replay left them.

Generated output (docs/protocol.md section 3.3) that a command or the environment's install created is
left out of both sides before comparing (a ``git add -A`` submission made in an image where the install
left ``build/`` or ``*.egg-info/`` behind contains it); the verdict's notes name what was left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from takeover._util.patches import first_difference, split_patch
from takeover.repository_states.snapshots import join_diffs, without_generated

#: The rules of docs/protocol.md section 5.4, in the order they are tried.
VerificationRule = Literal["whole_tree", "submitted_files"]
#: First line of mini-swe-agent's submitting command's output (its ``echo``); the rest is the submission.
SUBMIT_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")


class SubmissionCheck(BaseModel):
    """The outcome of comparing a replay with the run's submission.

    Attributes:
        verified: the replay reproduces the submission under ``rule``.
        rule: the rule that verified it (``None`` when none did).
        first_mismatch: the first file (sorted) where the replay and the submission differ.
        reason: one sentence saying why the run does not verify (``None`` when it does).
        notes: generated output left out of the comparison, one line per side.
    """

    verified: bool
    rule: VerificationRule | None = None
    first_mismatch: str | None = None
    reason: str | None = None
    notes: list[str] = Field(default_factory=list)


def submitted_patch(output: str) -> str:
    """The submission a submitting command's output carries: the output after its first line when that line
    is mini-swe-agent's marker (its own rule: leading whitespace skipped), else the whole output."""
    lines = output.lstrip().splitlines(keepends=True)
    if lines and lines[0].strip() in SUBMIT_MARKERS:
        return "".join(lines[1:])
    return output


_PRINTED = re.compile(r"(?:^|[;&|]\s*|\s)cat\s+(?P<path>\"[^\"]+\"|'[^']+'|[^\s;&|<>]+)\s*$")


def printed_file(command: str, root: str | None = None) -> str | None:
    """The repository path of the file a submitting command prints (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT
    && cat patch.txt`` gives ``patch.txt``; under ``root``, ``/testbed/patch.txt`` too), or ``None`` when it
    prints no file (``git add -A && git diff --cached``)."""
    m = _PRINTED.search(command.strip())
    if not m:
        return None
    path = m.group("path").strip("'\"")
    if root and path.startswith(root.rstrip("/") + "/"):
        path = path[len(root.rstrip("/")) + 1:]
    return path if not path.startswith("/") else None


def last_write(diffs: Sequence[Mapping[str, str]], path: str | None, before: int) -> int | None:
    """The last event before ``before`` after which ``path``'s diff changed (the event that last wrote the
    file the submitting command prints), or ``None``."""
    if path is None:
        return None
    for i in range(min(before, len(diffs)) - 1, -1, -1):
        if diffs[i].get(path) != (diffs[i - 1].get(path) if i else None):
            return i
    return None


_GIT_COMMIT = re.compile(r"(?:^|&&|\|\||[;|\n])\s*git(?:\s+-\S+(?:\s+\S+)?)*\s+commit\b")


def commit_hint(commands: Mapping[int, str]) -> str:
    """For the reason of a replay that does not verify: when one of ``commands`` (``{event: command}`` that
    ran and succeeded) is a ``git commit``, a note that a submission made after it is a diff against the
    agent's own commit; else ``""``."""
    event = next((i for i, c in sorted(commands.items()) if _GIT_COMMIT.search(c)), None)
    if event is None:
        return ""
    return (f" (the run committed at event {event}: a submission made after that is a diff against the agent's "
            "own commit, not the starting state)")


def _summary(paths: list[str], limit: int = 3) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def check_submission(
    final: Mapping[str, str], submission: str, *, submit_output: str | None = None, submit_event: int | None = None,
    written: Mapping[str, str] | None = None, written_event: int | None = None,
) -> SubmissionCheck:
    """Compare the replayed final state with the run's submission (docs/protocol.md section 5.4).

    Args:
        final: ``{path: diff}`` of the replayed final state, against the same commit the agent's diff was
            taken against (``base_commit``, or the starting state when the image committed the environment's
            edits).
        submission: the run's submitted patch.
        submit_output: the replayed output of the run's submitting command (``None`` when none was replayed).
        submit_event: that command's event index, for the reason.
        written: the replayed state (same base as ``final``) after the event that last wrote the file the
            submitting command prints (:func:`printed_file`), ``written_event``; ``None`` when there is none.

    Returns:
        A :class:`SubmissionCheck`.
    """
    mine, left_mine = without_generated(final)
    theirs, left_theirs = without_generated(split_patch(submission))
    notes = []
    if left_theirs:
        notes.append(f"generated output left out of the submission: {_summary(left_theirs)}")
    if left_mine:
        notes.append(f"generated output left out of the replayed state: {_summary(left_mine)}")
    mismatch = first_difference(join_diffs(mine), join_diffs(theirs))
    if mismatch is None:
        return SubmissionCheck(verified=True, rule="whole_tree", notes=notes)
    scope, when = (without_generated(written)[0], f"the state after event {written_event}") if written is not None \
        else (mine, "replayed final state")
    if not theirs or not set(theirs) < set(scope):
        return SubmissionCheck(verified=False, first_mismatch=mismatch, notes=notes,
                               reason=f"replayed final state differs from the run's final patch, first at {mismatch}")
    restricted = {p: scope[p] for p in theirs}
    inside = first_difference(join_diffs(restricted), join_diffs(theirs))
    if inside is not None:
        return SubmissionCheck(
            verified=False, first_mismatch=inside, notes=notes,
            reason=f"{when} differs from the run's final patch inside the submitted files, first at {inside}",
        )
    if submit_output is None:
        return SubmissionCheck(
            verified=False, first_mismatch=mismatch, notes=notes,
            reason=f"the final patch covers {len(theirs)} of the {len(mine)} changed files and no submitting "
                   f"command was replayed to check it against (first file outside it: {mismatch})",
        )
    printed, _ = without_generated(split_patch(submitted_patch(submit_output)))
    printed_mismatch = first_difference(join_diffs(printed), join_diffs(theirs))
    if printed_mismatch is not None:
        return SubmissionCheck(
            verified=False, first_mismatch=printed_mismatch, notes=notes,
            reason=f"the replayed output of the submitting command (event {submit_event}) differs from the run's "
                   f"final patch, first at {printed_mismatch}",
        )
    return SubmissionCheck(verified=True, rule="submitted_files", notes=notes)
