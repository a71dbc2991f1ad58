"""How large a view may be (docs/protocol.md section 7): one record, from the command line and the
experiment file to every view that is built.

:class:`ViewBudgets` is built once, by a command's option group (``--raw-trace-max-chars``,
``--raw-trace-max-tokens``, ``--note-max-tokens``) or from an experiment file's ``[view_budgets]`` table,
and given whole to :func:`takeover.views.build_view`, :func:`~takeover.views.write_views`,
:func:`takeover.handoff.compose_handoff` and :func:`~takeover.handoff.resume.resume_session`. Its defaults and
bounds are declared here only.

A budget belongs to every view whose own options (its ``Options`` model,
:mod:`takeover.views.handoff_view`) have a field of that name: ``raw_trace`` has ``raw_trace_max_chars`` and
``raw_trace_max_tokens``, the model-written views ``note_max_tokens``. What a view is built with, and what
enters its key (a view unit's ``view_options``, ``views.json``'s key), is those budgets beyond their
defaults (:meth:`ViewBudgets.within`), with the view's own options on top
(:func:`takeover.views.view_registry.view_options`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: Completion tokens per note-writing call, the protocol's (docs/protocol.md section 7.3).
NOTE_MAX_TOKENS = 1600


class ViewBudgets(BaseModel):
    """The budgets of the views (docs/protocol.md section 7; the budgets of ``raw_trace`` are an Extension).

    Attributes:
        raw_trace_max_chars: the ``raw_trace`` view's budget in characters over its event entries
            (``--raw-trace-max-chars``); None: no budget, as in the paper.
        raw_trace_max_tokens: the same in estimated tokens (``--raw-trace-max-tokens``); None: no budget.
            With a budget the newest events that fit are kept, the handoff event always.
        note_max_tokens: completion tokens per note-writing call of ``summary_notes``,
            ``structured_notes`` and every model-written view (``--note-max-tokens``; the protocol's 1,600). Lower it only for small
            local models, and say so when reporting.

    Raises:
        pydantic.ValidationError: a value out of range.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    raw_trace_max_chars: int | None = Field(None, ge=1)
    raw_trace_max_tokens: int | None = Field(None, ge=1)
    note_max_tokens: int = Field(NOTE_MAX_TOKENS, ge=64)

    def within(self, names: Iterable[str]) -> dict[str, Any]:
        """The budgets among ``names`` (a view's option names) that differ from their default, by name:
        what the view is built with beyond its defaults (``{}`` for a view with no budget)."""
        fields = type(self).model_fields
        return {name: getattr(self, name) for name in names
                if name in fields and getattr(self, name) != fields[name].default}
