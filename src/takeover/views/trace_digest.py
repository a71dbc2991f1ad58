"""The ``trace_digest`` view: a handoff no model writes (docs/protocol.md section 7.7, Extension).

What it holds, all computed by code from the predecessor's events up to the cut and the checkpoint:

- the checkpoint's diff (the changes the successor's repository holds, shown instead of discovered);
- the repository files the predecessor read (a file view, or a command that prints a file: ``cat``,
  ``sed -n``, ``head``..., :func:`takeover.commands.file_reads`) and edited (an edit, or a command that writes a
  file it names, :func:`takeover.commands.written_files`), in the order it first touched them;
- its last verification command with its result and a failure line of its output (section 4's
  ``latest_verification_*`` of the point).

It costs no note-writing token, so it is the floor the note views must beat on tokens and solved rate.
"""

from __future__ import annotations

from pydantic import BaseModel

from takeover.commands import file_reads, repo_path, written_files
from takeover.llm import ModelClient
from takeover.trajectories.events import Event
from takeover.views.handoff_view import Handoff, HandoffView, ViewBlock
from takeover.views.prompt import render

#: Folders that stand for the repository's top folder in SWE-bench runs, after the run's own.
DEFAULT_ROOTS = ("/testbed",)


def _touched(events: list[Event], roots: list[str], working_dir: str | None) -> tuple[list[str], list[str]]:
    """``(read, edited)``: repository-relative paths, each once, in the order first touched."""
    read: dict[str, None] = {}
    edited: dict[str, None] = {}

    def add(into: dict[str, None], path: str | None, cwd: str | None) -> None:
        rel = repo_path(path, cwd, roots) if path else None
        if rel:
            into.setdefault(rel, None)

    for event in events:
        if event.kind != "action" or event.not_applied or event.format_error:
            continue
        cwd = event.cwd or working_dir
        if event.type == "file_view":
            add(read, event.path, cwd)
        elif event.type == "file_edit" and event.edit != "not_applied":
            add(edited, event.path, cwd)
        elif event.type == "command" and event.command and not event.process_input and not event.ipython:
            for found in file_reads(event.command):
                add(read, found.path, cwd)
            for path in written_files(event.command) or []:
                add(edited, path, cwd)
    return list(read), list(edited)


class TraceDigest(HandoffView):
    """The checkpoint's diff, the files read and edited, the last verification and its result; no model."""

    name = "trace_digest"
    description = "computed digest: the diff, files read and edited, the last verification and its result"
    inputs = ("events", "checkpoint")

    def build(self, handoff: Handoff, options: BaseModel, writer: ModelClient | None) -> ViewBlock:
        trajectory, point = handoff.trajectory, handoff.point
        roots = [r for r in (trajectory.working_dir, *DEFAULT_ROOTS) if r]
        read, edited = _touched(handoff.events, roots, trajectory.working_dir)
        block = render(
            "view_trace_digest.md.j2", handoff.template_dir,
            read=read, edited=edited, diff=handoff.checkpoint_patch.strip(),
            command=point.latest_verification_command, result=point.latest_verification_result,
            evidence=point.latest_verification_evidence, events=point.event_index + 1,
        )
        return ViewBlock(block=block)
