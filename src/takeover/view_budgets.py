"""How large a view may be (docs/protocol.md section 7): one record, from the command line and the
experiment file to every view that is built.

:class:`ViewBudgets` is built once, by a command's option group (``--raw-trace-max-chars``,
``--raw-trace-max-tokens``, ``--note-max-tokens``) or from an experiment file's ``[view_budgets]`` table,
and given whole to :func:`takeover.views.build_view`, :func:`~takeover.views.write_views`,
:func:`takeover.handoff.compose_handoff` and :func:`~takeover.handoff.resume.resume_session`. Its defaults and
bounds are declared here only.

Each budget belongs to the views it limits (:data:`VIEW_BUDGETS`); what a view is built with, and what
enters its key (a view unit's ``view_options``, ``views.json``'s key), is :meth:`ViewBudgets.of_view`: that
view's own budgets, those at their default left out. So a view's key names the view and only the budgets it
uses, by the same names, however the budgets are declared: a view whose budgets move into an options record
of its own (one field per budget, the same names and defaults) keeps its key.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: Completion tokens per note-writing call, the protocol's (docs/protocol.md section 7.3).
NOTE_MAX_TOKENS = 1600

#: The budgets of each view that has some, by view name: the view's own options.
VIEW_BUDGETS: dict[str, tuple[str, ...]] = {
    "raw_trace": ("raw_trace_max_chars", "raw_trace_max_tokens"),
    "summary_notes": ("note_max_tokens",),
    "structured_notes": ("note_max_tokens",),
}


class ViewBudgets(BaseModel):
    """The budgets of the views (docs/protocol.md section 7; the budgets of ``raw_trace`` are an Extension).

    Attributes:
        raw_trace_max_chars: the ``raw_trace`` view's budget in characters over its event entries
            (``--raw-trace-max-chars``); None: no budget, as in the paper.
        raw_trace_max_tokens: the same in estimated tokens (``--raw-trace-max-tokens``); None: no budget.
            With a budget the newest events that fit are kept, the handoff event always.
        note_max_tokens: completion tokens per note-writing call of ``summary_notes`` and
            ``structured_notes`` (``--note-max-tokens``; the protocol's 1,600). Lower it only for small
            local models, and say so when reporting.

    Raises:
        pydantic.ValidationError: a value out of range.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    raw_trace_max_chars: int | None = Field(None, ge=1)
    raw_trace_max_tokens: int | None = Field(None, ge=1)
    note_max_tokens: int = Field(NOTE_MAX_TOKENS, ge=64)

    def of_view(self, view: str) -> dict[str, Any]:
        """The budgets of ``view`` (:data:`VIEW_BUDGETS`) that differ from their default, by name: what the
        view is built with beyond its defaults, and what its key carries (``{}`` for ``repo_only``)."""
        fields = type(self).model_fields
        return {name: getattr(self, name) for name in VIEW_BUDGETS.get(view, ())
                if getattr(self, name) != fields[name].default}
