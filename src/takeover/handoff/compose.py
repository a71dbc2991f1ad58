"""The handoff of an interrupted session: facts, view and takeover prompt (docs/protocol.md sections 4, 5 and 7).

:func:`compose_handoff` reads the session (:mod:`takeover.handoff.session`, secrets masked), the
repository's state (:mod:`takeover.handoff.worktree`, read-only), computes the point's facts and the
structured notes' deterministic fields exactly as the study does (:func:`takeover.points.point_at`,
:func:`takeover.views.compute_fields`), and builds one view with the study's view builder
(:func:`takeover.views.build_view`: the same note writer, validation, retries and leak guard). The task
prompt is this package's ``templates/task_prompt.md.j2``, which says that the task is the session's first
user request; every other template is the study's.

Without a model the view is ``raw_trace``; with one, ``structured_notes``. A notes view whose every attempt
is rejected is not replaced by another view (docs/protocol.md section 7.3): the handoff then carries the
failure and no prompt.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from takeover._util.patches import split_patch
from takeover.errors import InputError
from takeover.handoff.event_state import patch_at_event
from takeover.handoff.session import read_session, session_point, session_task
from takeover.handoff.worktree import RepositoryState, repository_state
from takeover.llm import ModelClient, ModelSettings, ModelUsage
from takeover.points import HandoffPoint
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.snapshots import patch_sha256
from takeover.trajectories import CUT_LAST_LINE
from takeover.view_budgets import ViewBudgets
from takeover.views import (
    DeterministicFields,
    NotesFailed,
    ViewResult,
    build_view,
    compute_fields,
    view_named,
)
from takeover.vocabulary import ViewName

#: The task prompt template for sessions (overrides the study's SWE-bench one).
TEMPLATES = Path(__file__).with_name("templates")
TASK_SOURCE = "the session's first user request (there is no separate problem statement)"

#: Estimated tokens above which a view is said to be too large when the model's context is not known
#: (no model, or an endpoint that does not report it): more than the context window of most models.
LARGE_VIEW_TOKENS = 1_000_000


def size_warning(view: ViewResult, context_tokens: int | None) -> str | None:
    """The warning for a view larger than the model's context (``context_tokens``, from the endpoint), or,
    when that is unknown, than :data:`LARGE_VIEW_TOKENS`; ``None`` when it fits. Names the way out."""
    limit = context_tokens or LARGE_VIEW_TOKENS
    if view.estimated_tokens <= limit:
        return None
    against = (f"the model's context of {context_tokens:,} tokens (as its endpoint reports it)" if context_tokens
               else f"{LARGE_VIEW_TOKENS:,} tokens, beyond the context of most models")
    way_out = ("--raw-trace-max-tokens N keeps the newest events that fit (the handoff event always)"
               if view.view == "raw_trace"
               else "a smaller view (--view) or a model with a larger context")
    return (f"the {view.view} prompt is {view.estimated_tokens:,} estimated tokens ({len(view.prompt):,} "
            f"characters), more than {against}; {way_out}")


class SessionInfo(BaseModel):
    """What the session was: file, format, agent, size.

    Attributes:
        path: the session file as given; ``format`` / ``format_version``: reader name and the agent's version.
        session_id: the agent's own id of the session, when recorded; ``model``: the agent's model.
        working_dir: the folder the agent worked in.
        agent_events: actions + observations; ``llm_calls``: model calls; ``prompt_tokens`` /
            ``completion_tokens``: sums over the calls (tokens; docs/protocol.md section 1), ``None`` when the
            session records no usage at all.
        start_commit: the commit the session says it started from, when it records one.
    """

    path: str
    format: str
    format_version: str | None = None
    session_id: str | None = None
    model: str | None = None
    working_dir: str | None = None
    agent_events: int
    llm_calls: int
    prompt_tokens: int | None
    completion_tokens: int | None
    start_commit: str | None = None


class NotesFailure(BaseModel):
    """Why no notes view was built: ``rejected`` (every attempt) or ``model_error``; the reasons, the
    attempts and the note-writing usage spent anyway."""

    outcome: str
    reasons: list[str]
    attempts: int
    usage: ModelUsage


class Handoff(BaseModel):
    """The handoff of one session.

    Attributes:
        session: what the session was.
        repository: the repository's state (its ``patch`` is left out of JSON output).
        task_source: where the task came from (always the session's first user request).
        point: the handoff point (``session_end``, the last event) with what section 4.4 records.
        source_edits: indices (0-based) of the events counted as source edits.
        facts: the structured notes' deterministic fields (docs/protocol.md section 7.4).
        view_name: the view asked for; ``view``: the built view (prompt, note usage, validation), or
            ``None`` when its notes failed (``failure``).
        notes: remarks for the user.
        size_warning: the prompt is larger than the model's context (:func:`size_warning`), or ``None``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    session: SessionInfo
    repository: RepositoryState
    task_source: str = TASK_SOURCE
    point: HandoffPoint
    source_edits: list[int] = Field(default_factory=list)
    facts: DeterministicFields
    view_name: ViewName
    view: ViewResult | None = None
    failure: NotesFailure | None = None
    notes: list[str] = Field(default_factory=list)
    size_warning: str | None = None

    @property
    def prompt(self) -> str | None:
        """The takeover prompt for the next agent (``None`` when the notes failed)."""
        return self.view.prompt if self.view else None

    def public(self) -> dict:
        """This record as JSON data without the repository's diff (the user has it in the repository)."""
        return self.model_dump(mode="json", exclude={"repository": {"patch"}})


def compose_handoff(
    session: Path | str,
    repo: Path | str | None = None,
    *,
    model: ModelSettings | ModelClient | None = None,
    view: ViewName | None = None,
    record: int | None = None,
    view_budgets: ViewBudgets | None = None,
    event: int | None = None,
    replay: ReplaySettings | None = None,
) -> Handoff:
    """The handoff of ``session`` on the repository ``repo`` (see module docstring).

    Neither the session file nor the repository is modified.

    Args:
        session: the session file (any supported format, detected by content).
        repo: the repository (or a folder in it); default: the session's working folder.
        model: the note writer (settings, or a client whose usage keeps accumulating).
        view: ``structured_notes``, ``summary_notes``, ``raw_trace`` or ``repo_only``; default
            ``structured_notes`` with a model, ``raw_trace`` without.
        record: which run, for a file holding several (0-based).
        view_budgets: the view's budgets (:class:`takeover.view_budgets.ViewBudgets`: the ``raw_trace``
            budget, the completion cap per note-writing call; docs/protocol.md section 7.3).
        event: hand over after this event (0-based) instead of the last one: the repository's state then
            is rebuilt by replaying the session in a scratch copy, verified against the repository now
            (:func:`takeover.handoff.event_state.patch_at_event`, with ``replay``:
            :class:`takeover.replay_settings.ReplaySettings`).

    Raises:
        InputError: an unreadable session, no repository to read, an unknown view, an ``event`` the session
            does not have or whose state cannot be rebuilt exactly (the reason).
        takeover.views.ModelRequired: a notes view without ``model``.
        takeover.views.ViewLeakError: a deterministic view leaks (a bug or bad input).
    """
    if view is not None:
        view = view_named(view, where="--view").name
    trajectory = read_session(session, record=record)
    meta = trajectory.metadata
    start = meta.get("git_commit") or meta.get("base_commit")
    if repo is None:
        if not (trajectory.working_dir and Path(trajectory.working_dir).is_dir()):
            raise InputError(session, f"the session's folder {trajectory.working_dir or '(not recorded)'} is not "
                             "on this machine; give --repo DIR, the repository the session worked in")
        repo = trajectory.working_dir
    state = repository_state(repo, str(start) if start else None)
    task = session_task(trajectory, Path(state.root).name, state.base_commit)
    notes = list(state.notes)
    if event is not None:
        patch, how = patch_at_event(trajectory, state, event, replay=replay)
        if patch is None:
            raise InputError("--event", how)
        files = set(split_patch(patch))
        state = state.model_copy(update={"patch": patch, "patch_sha256": patch_sha256(patch),
                                         "untracked": [f for f in state.untracked if f in files]})
        notes.append(f"handoff after event {event}: {how}")
    point, edits = session_point(trajectory, state.root, state.patch, event)
    if meta.get(CUT_LAST_LINE):  # a session killed mid-write is handed over from its complete lines
        notes.append(meta[CUT_LAST_LINE])
    name: ViewName = view or ("structured_notes" if model is not None else "raw_trace")
    if model is None and view is None:
        notes.append("no model given: the view is raw_trace (--model and --base-url write structured notes)")
    built = failure = None
    try:
        built = build_view(
            name, trajectory, point, task, state.patch, model=model, template_dir=TEMPLATES, view_budgets=view_budgets,
        )
    except NotesFailed as exc:
        failure = NotesFailure(outcome=exc.outcome, reasons=exc.reasons, attempts=exc.attempts, usage=exc.usage)
    warning = None
    if built is not None:
        context = None
        if isinstance(model, ModelClient):
            context = model.context_tokens()
        elif model is not None:
            with ModelClient(model) as client:
                context = client.context_tokens()
        warning = size_warning(built, context)
        if warning:
            notes.append(warning)
    info = SessionInfo(
        path=str(session), format=trajectory.format, format_version=trajectory.format_version,
        session_id=meta.get("session_id"), model=trajectory.model, working_dir=trajectory.working_dir,
        agent_events=trajectory.agent_events, llm_calls=len(trajectory.llm_calls),
        prompt_tokens=trajectory.prompt_tokens if trajectory.usage_reported else None,
        completion_tokens=trajectory.completion_tokens if trajectory.usage_reported else None,
        start_commit=str(start) if start else None,
    )
    return Handoff(
        session=info, repository=state, point=point, source_edits=edits, facts=compute_fields(point, state.patch),
        view_name=name, view=built, failure=failure, notes=notes, size_warning=warning,
    )
