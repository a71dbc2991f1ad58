"""Build one handoff view for one handoff point (docs/protocol.md section 7).

:func:`build_view` takes explicit inputs (trajectory, :class:`~takeover.points.HandoffPoint`, source task,
checkpoint patch text) so it works for any point from any detector. Every view passes the leak guard
(:mod:`takeover.views.leak`) before it is returned; secrets are masked (:func:`takeover._util.redact.redact`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from takeover._util.redact import redact
from takeover.errors import TakeoverError
from takeover.llm import ModelClient, ModelSettings, ModelUsage, estimate_tokens, estimator_name
from takeover.points import HandoffPoint
from takeover.sources.tasks import SourceTask
from takeover.trajectories.events import Trajectory
from takeover.view_budgets import ViewBudgets
from takeover.views.handoff_view import Handoff, HandoffView, ValidationOutcome
from takeover.views.leak import LeakGuard, ViewLeakError
from takeover.views.notes import NotesFailed
from takeover.views.view_registry import view_named
from takeover.views.view_registry import view_options as view_options_of


class ModelRequired(TakeoverError):
    """A notes view was asked for without a model to write the notes."""

    def __init__(self, view: str):
        self.view = view
        super().__init__(f"{view}: a model is needed to write the notes (give --model, and --base-url for an "
                         "OpenAI-compatible endpoint)")


class ViewResult(BaseModel):
    """One built view.

    Attributes:
        view: the view name.
        instance_id, point_type, event_index: which handoff point it is for.
        block: the view block alone (empty for ``repo_only``).
        prompt: the full takeover prompt (preamble + block + original task prompt).
        characters: ``len(prompt)`` (Unicode characters); ``bytes``: its UTF-8 size.
        estimated_tokens: tokenizer estimate of ``prompt`` (``token_estimator`` names the method).
        note_usage: tokens/seconds spent writing notes (notes views only), kept apart from the successor's.
        note_model: public settings of the note writer (no secrets).
        validation: ``not_applicable`` (deterministic views), ``valid``, ``repaired``, ``retried`` or
            ``truncated`` (see :mod:`takeover.views.notes`).
        attempts: note-writing attempts (0 for deterministic views).
        rejections: reasons of rejected note attempts.
        dropped_events: events left out of ``raw_trace`` by a budget.
        structured: for ``structured_notes``: ``{"facts": ..., "notes": ...}``.
        summary_shape: for ``summary_notes``: ``{"bullets", "words"}`` against the asked 5-10 bullets and
            200-500 words (recorded, not enforced: the protocol's wording is "about").
    """

    view: str
    instance_id: str
    point_type: str
    event_index: int
    block: str
    prompt: str
    characters: int
    bytes: int
    estimated_tokens: int
    token_estimator: str
    note_usage: ModelUsage | None = None
    note_model: dict | None = None
    validation: ValidationOutcome = "not_applicable"
    attempts: int = 0
    rejections: list[str] = Field(default_factory=list)
    dropped_events: int = 0
    structured: dict | None = None
    summary_shape: dict | None = None


def _result(view, trajectory, point, task, block, prompt, **extra) -> ViewResult:
    return ViewResult(
        view=view,
        instance_id=task.instance_id or trajectory.instance_id or "",
        point_type=point.type,
        event_index=point.event_index,
        block=block,
        prompt=prompt,
        characters=len(prompt),
        bytes=len(prompt.encode("utf-8")),
        estimated_tokens=estimate_tokens(prompt),
        token_estimator=estimator_name(),
        **extra,
    )


def build_view(
    name: str | HandoffView,
    trajectory: Trajectory,
    point: HandoffPoint,
    task: SourceTask,
    checkpoint_patch: str = "",
    *,
    model: ModelSettings | ModelClient | None = None,
    template_dir: Path | str | None = None,
    view_budgets: ViewBudgets | None = None,
    view_options: Mapping[str, Any] | None = None,
    handoff_state: str | None = None,
    guard: LeakGuard | None = None,
) -> ViewResult:
    """Build view ``name`` of ``point`` in ``trajectory``.

    Args:
        name: a registered view's name (:data:`takeover.views.view_registry.HANDOFF_VIEWS`; the paper's
            ``repo_only``, ``raw_trace``, ``summary_notes``, ``structured_notes``, ``trace_digest``, a plug-in's),
            the path of a view file (``*.toml``), or a view.
        trajectory: the predecessor run (normalized events).
        point: the handoff point; events after ``point.event_index`` are never used.
        task: the source task (its problem statement is the original task prompt).
        checkpoint_patch: cumulative diff at the point (structured notes' change state; the leak guard
            treats it as visible).
        model: note writer for a model-written view (settings, or a client whose usage keeps accumulating).
        template_dir: folder of user templates overriding the packaged ones.
        view_budgets: the budgets (:class:`takeover.view_budgets.ViewBudgets`; default: none for
            ``raw_trace``, the protocol's 1,600 completion tokens per note-writing call); a view reads those its
            options name (:func:`takeover.views.view_registry.view_options`).
        view_options: the view's own options (its ``Options``' fields), over the budgets.
        handoff_state: the checkpoint's grading label when known, so the guard can keep it out.
        guard: a prebuilt :class:`LeakGuard` for this point (saves work when building several views).

    Raises:
        ValueError: an event index outside the trajectory.
        takeover.errors.InputError: an unknown view, a broken view file or user template, options the view
            refuses.
        ModelRequired: a model-written view without ``model``.
        NotesFailed: the note writer gave no acceptable answer (carries the usage spent).
        takeover.views.leak.ViewLeakError: the view would leak (a bug, bad input, or a view file that shows
            what the predecessor never saw: the error names the file).
    """
    view = name if isinstance(name, HandoffView) else view_named(name)
    if not 0 <= point.event_index < len(trajectory.events):
        raise ValueError(
            f"handoff event {point.event_index} is outside the trajectory's {len(trajectory.events)} events"
        )
    options = view.Options.model_validate(view_options_of(view, view_budgets, view_options))
    guard = guard or LeakGuard(trajectory, point.event_index, task, checkpoint_patch, handoff_state=handoff_state)
    handoff = Handoff(view.name, trajectory, point, task, checkpoint_patch, handoff_state, template_dir, guard)
    if view.model_written and model is None:
        raise ModelRequired(view.name)
    client = model if isinstance(model, ModelClient) or model is None else ModelClient(model)
    try:
        built = view.build(handoff, options, client if view.model_written else None)
    finally:
        if client is not None and not isinstance(model, ModelClient):
            client.close()
    prompt = built.prompt if built.prompt is not None else handoff.prompt(built.block)
    leaks = guard.find(prompt)
    if leaks:
        raise ViewLeakError(view.where if view.definition() is not None else view.name, leaks)
    return _result(
        view.name, trajectory, point, task, redact(built.block), prompt,
        note_usage=built.note_usage,
        note_model=client.settings.public() if view.model_written else None,
        **built.model_dump(include={"validation", "attempts", "rejections", "dropped_events", "structured",
                                    "summary_shape"}),
    )


def build_views(
    names: list[str] | tuple[str, ...],
    trajectory: Trajectory,
    point: HandoffPoint,
    task: SourceTask,
    checkpoint_patch: str = "",
    **kwargs,
) -> dict[str, ViewResult | TakeoverError]:
    """Build several views of one point with one leak guard. A view that cannot be built
    (:class:`ModelRequired`, :class:`NotesFailed`) maps to its error instead of stopping the others."""
    guard = kwargs.pop("guard", None) or LeakGuard(
        trajectory, point.event_index, task, checkpoint_patch, handoff_state=kwargs.get("handoff_state")
    )
    out: dict[str, ViewResult | TakeoverError] = {}
    for name in names:
        try:
            out[name] = build_view(name, trajectory, point, task, checkpoint_patch, guard=guard, **kwargs)
        except (ModelRequired, NotesFailed) as exc:
            out[name] = exc
    return out
