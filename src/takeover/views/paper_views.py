"""The paper's four views as registered views (docs/protocol.md section 7): ``repo_only``, ``raw_trace``,
``summary_notes`` and ``structured_notes``.

Their options are the budgets of :class:`takeover.view_budgets.ViewBudgets` that limit them, under the same
names and defaults, so a unit's ``view_options`` (the options beyond their defaults) is what it was before
views were a registry, and so is every key.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from takeover.llm import ModelClient
from takeover.view_budgets import NOTE_MAX_TOKENS
from takeover.views.handoff_view import Handoff, HandoffView, ViewBlock
from takeover.views.notes import summary_shape, write_notes
from takeover.views.raw_trace import raw_trace_block


class RepoOnly(HandoffView):
    """No record of the previous agent: the repository as it was left, and the task."""

    name = "repo_only"
    description = "the frozen repository and the task, no record of the previous agent"
    inputs = ("task",)

    def build(self, handoff: Handoff, options: BaseModel, writer: ModelClient | None) -> ViewBlock:
        return ViewBlock(block="")


class RawTraceOptions(BaseModel):
    """``raw_trace``'s budgets (an Extension): the newest events that fit, the handoff event always."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    raw_trace_max_chars: int | None = Field(None, ge=1)
    raw_trace_max_tokens: int | None = Field(None, ge=1)


class RawTrace(HandoffView):
    """Every predecessor event up to the cut, rendered ``[step N | source | type]``."""

    name = "raw_trace"
    description = "the predecessor's events up to the cut, verbatim"
    inputs = ("task", "events")
    Options = RawTraceOptions

    def build(self, handoff: Handoff, options: RawTraceOptions, writer: ModelClient | None) -> ViewBlock:
        trace = raw_trace_block(handoff.trajectory, handoff.point.event_index, template_dir=handoff.template_dir,
                                **options.model_dump(exclude_defaults=True))
        return ViewBlock(block=trace.block, dropped_events=trace.dropped)


class NoteOptions(BaseModel):
    """A note writer's options: completion tokens per note-writing call (the protocol's 1,600)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    note_max_tokens: int = Field(NOTE_MAX_TOKENS, ge=64)


class _PaperNotes(HandoffView):
    inputs = ("task", "events", "checkpoint")
    model_written = True
    Options = NoteOptions

    def build(self, handoff: Handoff, options: NoteOptions, writer: ModelClient | None) -> ViewBlock:
        outcome = write_notes(
            self.name, writer, handoff.trajectory, handoff.point, handoff.task, handoff.checkpoint_patch,
            handoff.guard, handoff.prompt, template_dir=handoff.template_dir, max_tokens=options.note_max_tokens,
        )
        structured = shape = None
        if outcome.notes is not None:
            structured = {"facts": outcome.facts.model_dump(), "notes": outcome.notes.model_dump()}
        else:
            shape = summary_shape(outcome.block)
        return ViewBlock(block=outcome.block, prompt=outcome.prompt, note_usage=outcome.usage,
                         validation=outcome.validation, attempts=outcome.attempts, rejections=outcome.rejections,
                         structured=structured, summary_shape=shape)


class SummaryNotes(_PaperNotes):
    """A separate writer's 5-10 bullet summary of the rendered trace."""

    name = "summary_notes"
    description = "a note writer's bullet summary of the trace up to the cut"


class StructuredNotes(_PaperNotes):
    """The bounded continuation record: fields computed by code plus seven a note writer fills."""

    name = "structured_notes"
    description = "computed facts plus seven fields a note writer fills"


#: The paper's views, in the protocol's order.
PAPER_VIEWS: tuple[HandoffView, ...] = (RepoOnly(), RawTrace(), SummaryNotes(), StructuredNotes())
