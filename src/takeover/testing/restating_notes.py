"""Notes that restate a trace exactly: what the predecessor ran (with the result of each verification),
viewed and edited up to the cut, in plain sentences, as a summary and as the seven fields of a structured
note, and a scripted note writer that answers with them (:func:`restating_writer`, for
:class:`takeover.testing.scripted_server.ScriptedServer`).

Every claim of such a note is true of the trace, so the claims check (docs/protocol.md section 7.6) must
find each one supported: the tests and ``benchmarks/claims_figures.py`` use them so. They are built from the
events and the shell grammar's reading of commands, never from the checker's record of the trace."""

from __future__ import annotations

import json

from takeover._util.patches import patch_files
from takeover.commands import file_reads, is_verification_command, repo_path, written_files
from takeover.points.verification import verification_result
from takeover.trajectories.events import Trajectory, answers_by_action

#: Commands longer than this are not restated (a note quotes commands, not scripts).
MAX_COMMAND = 160


def restated(trajectory: Trajectory, cut: int, checkpoint_patch: str | None) -> tuple[list[str], list[str], list[str]]:
    """``(what it ran and viewed, the files it edited, the verifications that failed)`` as sentences."""
    roots = [r for r in (trajectory.working_dir, "/testbed") if r]
    answers = answers_by_action(trajectory.events)
    done: list[str] = []
    failed: list[str] = []
    edited: list[str] = []
    for ev in trajectory.events[: cut + 1]:
        if ev.kind != "action" or ev.not_applied or ev.format_error:
            continue
        answer = answers.get(ev.index)
        answer = answer if answer is not None and answer.index <= cut else None
        if ev.type == "command" and ev.command and not ev.process_input and not ev.ipython:
            command = ev.command.strip()
            for path in written_files(command) or []:
                rel = repo_path(path, ev.cwd or trajectory.working_dir, roots)
                if rel and rel not in edited:
                    edited.append(rel)
            if "\n" in command or "`" in command or len(command) > MAX_COMMAND:
                continue
            result = verification_result(answer.text, answer.exit_code) if answer is not None else None
            if is_verification_command(command) and result in ("passed", "failed"):
                done.append(f"Ran `{command}`, which {result}.")
                if result == "failed":
                    failed.append(f"`{command}` failed.")
            else:
                done.append(f"Ran `{command}`.")
            for read in file_reads(command):
                rel = repo_path(read.path, ev.cwd or trajectory.working_dir, roots)
                if rel and read.start > 0 and read.end is not None and not read.selector:
                    done.append(f"Viewed lines {read.start}-{read.end} of {rel}.")
        elif ev.type == "file_view" and ev.path:
            rel = repo_path(ev.path, ev.cwd or trajectory.working_dir, roots)
            if rel and "." in rel.rsplit("/", 1)[-1]:
                rng = ev.view_range or []
                lines = f"lines {rng[0]}-{rng[1]} of " if len(rng) == 2 and rng[0] > 0 and rng[1] > 0 else ""
                done.append(f"Viewed {lines}{rel}.")
        elif ev.type == "file_edit" and ev.path and ev.edit != "not_applied":
            rel = repo_path(ev.path, ev.cwd or trajectory.working_dir, roots)
            if rel and rel not in edited:
                edited.append(rel)
    if checkpoint_patch is None:
        edits = [f"Edited {p}." for p in edited]
    else:
        changed = patch_files(checkpoint_patch)
        edits = [f"Edited {p}." for p in changed]
        edits += [f"Edited {p}, then reverted the edit." for p in edited if p not in changed]
    return done, edits, failed


def restated_summary(trajectory: Trajectory, cut: int, checkpoint_patch: str | None) -> str:
    """A summary note that restates the trace (one bullet per sentence)."""
    done, edits, _ = restated(trajectory, cut, checkpoint_patch)
    return "\n".join(f"- {s}" for s in [*done, *edits])


def restated_fields(trajectory: Trajectory, cut: int, checkpoint_patch: str | None) -> dict[str, str]:
    """The seven fields of a structured note that restates the trace."""
    done, edits, failed = restated(trajectory, cut, checkpoint_patch)
    ran = [s for s in done if s.startswith("Ran `") and ", which " in s]
    return {
        "problem_understanding": "UNKNOWN",
        "work_completed": " ".join(edits) or "NONE OBSERVED",
        "evidence_observed": " ".join(ran) or "NONE OBSERVED",
        "observed_failures": " ".join(failed) or "NONE OBSERVED",
        "remaining_uncertainty": "UNKNOWN",
        "rollback_notes": "NONE OBSERVED",
        "recommended_next_action": "Review the changes.",
    }


def restating_writer(trajectory: Trajectory, cut: int, checkpoint_patch: str | None):
    """A scripted server's script that answers the note writer with the restating notes (JSON for a structured
    request, the summary otherwise)."""
    summary = restated_summary(trajectory, cut, checkpoint_patch)
    fields = json.dumps(restated_fields(trajectory, cut, checkpoint_patch))

    def answer(body: dict, n: int) -> dict:
        return {"content": fields if "JSON object" in body["messages"][1]["content"] else summary}

    return answer
