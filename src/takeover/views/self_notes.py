"""The ``self_notes`` view: the predecessor's own handoff note, written from its own message history at the
cut (**Extension**, docs/protocol.md section 7.10).

``summary_notes`` has a separate writer read a rendered trace; here the agent is asked, at the moment it
stops, to write its handoff: the request is the predecessor's chat exactly as its model was sent it up to
the cut (:func:`takeover.trajectories.histories.message_history`: system message, task, every turn and
reply whose events lie at or before the cut, nothing later), then one user message, the handoff question
(``notes_self.md.j2``). Tool calls and tool results are sent as text (``tool`` replies as ``user``
messages), so that any chat endpoint takes the history without the predecessor's tool definitions.

Who writes: the view's writer (the study's note writer), fed the predecessor's own history. An imported
run's model is seldom reachable, so the predecessor's own model writes only when the note writer is that
model; the record says which model wrote the note and whether it is the predecessor's own
(:func:`writer_record`). The answer is validated as summary notes are (:func:`takeover.views.notes.ask_for_notes`:
no unhedged success claim, no denial of a failure or of changes the computed facts show, no leak), with
the same retries, temperature 0 and completion cap.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from takeover.llm import ModelClient
from takeover.points import HandoffPoint
from takeover.trajectories.events import Trajectory
from takeover.trajectories.histories import message_history
from takeover.view_budgets import NOTE_MAX_TOKENS
from takeover.views.handoff_view import Handoff, HandoffView, ViewBlock
from takeover.views.leak import LeakGuard
from takeover.views.notes import NotesOutcome, ask_for_notes, summary_shape, summary_words
from takeover.views.paper_views import NoteOptions
from takeover.views.prompt import render
from takeover.views.structured import compute_fields

VIEW = "self_notes"


def _text(content) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def plain_message(message: dict) -> dict:
    """A chat message of the history as plain text: an assistant's tool calls appended to its text as
    ``<tool_call NAME>ARGUMENTS</tool_call>``, a ``tool`` result as a ``user`` message."""
    role = message.get("role")
    text = _text(message.get("content"))
    if role == "assistant":
        calls = message.get("tool_calls") or []
        shown = [f"<tool_call {(c.get('function') or {}).get('name', '')}>"
                 f"{(c.get('function') or {}).get('arguments', '')}</tool_call>" for c in calls if isinstance(c, dict)]
        return {"role": "assistant", "content": "\n".join(filter(None, [text, *shown])) or "(no text)"}
    if role in ("system", "user"):
        return {"role": role, "content": text}
    return {"role": "user", "content": text}


def self_note_messages(trajectory: Trajectory, event_index: int, *, max_tokens: int = NOTE_MAX_TOKENS,
                       template_dir: Path | str | None = None) -> list[dict]:
    """The writer's request: the predecessor's history up to the cut (plain text), then the handoff question.

    Raises:
        takeover.errors.InputError: the run's format keeps no message history (names the format).
    """
    history = [plain_message(m) for m in message_history(trajectory, event_index)]
    min_words, max_words = summary_words(max_tokens)
    question = render("notes_self.md.j2", template_dir, min_words=min_words, max_words=max_words)
    return [*history, {"role": "user", "content": question}]


def _model_name(model: str | None) -> str:
    """A model name without litellm's provider prefix (``openai/gpt-4o`` -> ``gpt-4o``), lower-cased."""
    return (model or "").rsplit("/", 1)[-1].strip().lower()


def writer_record(trajectory: Trajectory, client: ModelClient) -> dict:
    """Who wrote the note: ``writer`` (the note writer's model), ``predecessor_model`` (as the run recorded
    it, ``None`` when it did not), ``predecessor_wrote`` (the two name the same model, provider prefixes
    aside)."""
    writer = client.settings.model
    return {"writer": writer, "predecessor_model": trajectory.model,
            "predecessor_wrote": bool(trajectory.model) and _model_name(writer) == _model_name(trajectory.model)}


def write_self_notes(
    client: ModelClient,
    trajectory: Trajectory,
    point: HandoffPoint,
    checkpoint_patch: str,
    guard: LeakGuard,
    make_prompt: Callable[[str], str],
    *,
    template_dir: Path | str | None = None,
    max_tokens: int = NOTE_MAX_TOKENS,
) -> NotesOutcome:
    """Ask ``client`` for the predecessor's handoff note from its own history at ``point`` and validate it.

    Raises:
        takeover.errors.InputError: the run keeps no message history, or the cut splits a message.
        takeover.views.notes.NotesFailed: no acceptable note (carries the tokens spent).
    """
    messages = self_note_messages(trajectory, point.event_index, max_tokens=max_tokens, template_dir=template_dir)
    return ask_for_notes(VIEW, client, messages, compute_fields(point, checkpoint_patch), guard, make_prompt,
                         template_dir=template_dir, max_tokens=max_tokens)



class SelfNotes(HandoffView):
    """The predecessor's own handoff note, from its own message history at the cut."""

    name = VIEW
    description = "the predecessor's own handoff note, written from its own message history at the cut"
    inputs = ("task", "events", "checkpoint")
    model_written = True
    Options = NoteOptions

    def build(self, handoff: Handoff, options: NoteOptions, writer: ModelClient | None) -> ViewBlock:
        """The note as the view block; the record (``structured``) says who wrote it (:func:`writer_record`).

        Raises:
            takeover.errors.InputError: the run's format keeps no message history (names the format).
            takeover.views.notes.NotesFailed: no acceptable note.
        """
        outcome = write_self_notes(writer, handoff.trajectory, handoff.point, handoff.checkpoint_patch,
                                   handoff.guard, handoff.prompt, template_dir=handoff.template_dir,
                                   max_tokens=options.note_max_tokens)
        return ViewBlock(block=outcome.block, prompt=outcome.prompt, note_usage=outcome.usage,
                         validation=outcome.validation, attempts=outcome.attempts, rejections=outcome.rejections,
                         structured={"writer": writer_record(handoff.trajectory, writer)},
                         summary_shape=summary_shape(outcome.block))
