"""The view seam: what every handoff view declares, what it is given, and what it returns
(docs/protocol.md section 7).

A view is an object registered by name in :data:`takeover.views.view_registry.HANDOFF_VIEWS` (the paper's four,
``trace_digest``, a user's view file, a plug-in from the ``takeover.views`` entry point group). It declares:

- ``name``: the name a study, a flag, a unit and a report give it;
- ``inputs``: the handoff inputs it reads (:data:`HANDOFF_INPUTS`);
- ``model_written``: whether a model writes its block (the study's note writer, given as ``writer``); a
  model-written view's claims are checked (:func:`takeover.claims.claim_rules.checks_claims`) and its
  tokens are note-writing tokens, reported apart from the successor's;
- ``Options``: a pydantic model of its own options (budgets, the writer's settings), whose fields and defaults
  are the keys of ``[view_options.NAME]`` in an experiment file and of ``--view-option NAME.KEY=VALUE``; a
  field named like a budget of :class:`takeover.view_budgets.ViewBudgets` is also filled from
  ``[view_budgets]`` and the budget flags (``--note-max-tokens``...). What a unit's key carries is these
  options beyond their defaults (``view_options``);

and renders one point's block with :meth:`HandoffView.build`, from a :class:`Handoff` (the inputs of one
point). Whatever it returns, :func:`takeover.views.build_view` passes the full prompt through the leak guard
before anyone sees it: a view never has to be trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from takeover._util.redact import redact
from takeover._util.registries import NoOptions
from takeover.llm import ModelClient, ModelUsage
from takeover.points import HandoffPoint
from takeover.sources.tasks import SourceTask
from takeover.trajectories.events import Event, Trajectory
from takeover.views.leak import LeakGuard
from takeover.views.prompt import takeover_prompt

#: The inputs a view may read (docs/protocol.md section 7, "Handoff inputs"): the task (its problem
#: statement), the predecessor's events up to and including the handoff event, the checkpoint (its diff and
#: the point's file lists and verification context) and the handoff state (the checkpoint's grading label:
#: never shown to a successor, read only by the leak guard that keeps it out).
HandoffInput = Literal["task", "events", "checkpoint", "handoff_state"]
HANDOFF_INPUTS: tuple[HandoffInput, ...] = ("task", "events", "checkpoint", "handoff_state")

#: How a view's block was accepted: ``not_applicable`` (nothing written by a model), else the note writer's.
ValidationOutcome = Literal["not_applicable", "valid", "repaired", "retried", "truncated"]


@dataclass(frozen=True)
class Handoff:
    """The inputs of one handoff point, as every view gets them.

    Attributes:
        view: the name of the view being built (the prompt's ``<previous_agent view=...>``).
        trajectory: the predecessor run; a view reads :attr:`events` (up to the cut), never beyond.
        point: the handoff point (``event_index``; the file lists and verification context of section 4).
        task: the source task (its problem statement is the original task prompt).
        checkpoint_patch: the cumulative diff at the point (the successor's repository holds it).
        handoff_state: the checkpoint's grading label when known (for the leak guard only).
        template_dir: the user's template folder overriding the packaged templates, or ``None``.
        guard: the leak guard of this point.
    """

    view: str
    trajectory: Trajectory
    point: HandoffPoint
    task: SourceTask
    checkpoint_patch: str
    handoff_state: str | None
    template_dir: Path | str | None
    guard: LeakGuard

    @property
    def events(self) -> list[Event]:
        """The predecessor's events ``0..point.event_index`` (what it had seen and done at the cut)."""
        return self.trajectory.events[: self.point.event_index + 1]

    def prompt(self, block: str) -> str:
        """The full takeover prompt around ``block`` (preamble, ``<previous_agent>`` unless ``block`` is
        empty, the original task), secrets masked."""
        return redact(takeover_prompt(self.view, block, self.task, template_dir=self.template_dir))


class ViewBlock(BaseModel):
    """What a view built for one point.

    Attributes:
        block: the view block (empty: no ``<previous_agent>`` section, as ``repo_only``).
        prompt: the full takeover prompt when the view composed and checked it itself (the note writer does,
            to retry a leaking answer); ``None``: :meth:`Handoff.prompt` of ``block``.
        note_usage: tokens and seconds of the model calls that wrote it (a model-written view).
        validation, attempts, rejections: how a model's answer was accepted.
        dropped_events: events a budget left out.
        structured: a structured view's record (``{"facts": ..., "notes": ...}`` for ``structured_notes``).
        summary_shape: ``summary_notes``' ``{"bullets", "words"}``.
    """

    block: str
    prompt: str | None = None
    note_usage: ModelUsage | None = None
    validation: ValidationOutcome = "not_applicable"
    attempts: int = 0
    rejections: list[str] = Field(default_factory=list)
    dropped_events: int = 0
    structured: dict | None = None
    summary_shape: dict | None = None


class HandoffView:
    """A handoff view (see the module docstring). Subclasses set the class attributes and :meth:`build`.

    Attributes:
        name: the registered name.
        description: one line for ``takeover views --list`` and the docs.
        inputs: the handoff inputs the view reads (:data:`HANDOFF_INPUTS`).
        model_written: whether a model (the study's note writer) writes the block.
        Options: the view's own options (:class:`~takeover._util.registries.NoOptions` when it has none).
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    inputs: ClassVar[tuple[HandoffInput, ...]] = ()
    model_written: ClassVar[bool] = False
    Options: ClassVar[type[BaseModel]] = NoOptions

    def build(self, handoff: Handoff, options: Any, writer: ModelClient | None) -> ViewBlock:
        """The view's block for ``handoff``.

        Args:
            handoff: the point's inputs.
            options: an instance of :attr:`Options`.
            writer: the note writer (a client whose usage accumulates) for a model-written view; ``None`` for
                the others (a model-written view is never called without one: :func:`build_view` raises
                :class:`~takeover.views.view.ModelRequired` first).

        Raises:
            takeover.views.notes.NotesFailed: the writer gave no acceptable answer (carries the usage spent).
            takeover.errors.InputError: a broken template.
        """
        raise NotImplementedError

    def written_part(self, block: str) -> str:
        """The part of a built ``block`` that a model wrote: what the claims check reads
        (:mod:`takeover.claims`). The whole block, unless the view shows more than its writer's text (the
        ``condensed`` view's kept events are the trace itself, not claims)."""
        return block

    def definition(self) -> dict[str, Any] | None:
        """What defines the view beyond its name, for a unit's key and for a worker process to rebuild it: a
        view file's content (:class:`takeover.views.view_files.FileView`); ``None`` for a view in code (its
        name and options are its identity)."""
        return None

    @property
    def where(self) -> str:
        """Where the view comes from, for error messages: its file, or ``view NAME``."""
        return f"view {self.name}"
