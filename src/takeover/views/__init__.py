"""Handoff views, the takeover prompt and model-written notes (docs/protocol.md section 7).

Files:

- ``handoff_view.py``: the view seam: :class:`HandoffView` (name, inputs, ``model_written``, ``Options``,
  :meth:`~HandoffView.build`), the :class:`Handoff` it is given and the :class:`ViewBlock` it returns.
- ``view_registry.py``: :data:`HANDOFF_VIEWS` by name (the paper's four, ``trace_digest``, the ``takeover.views``
  entry point group, view files), :func:`view_named`, :func:`view_options`.
- ``paper_views.py``: the paper's four views; ``trace_digest.py``: the model-free digest (Extension).
- ``condensed.py``: OpenHands' own condenser's compaction of the history at the cut (Extension), run by the
  script ``oh_condense.py`` in OpenHands' environment; ``self_notes.py``: the predecessor's own handoff note,
  from its own message history up to the cut (Extension).
- ``view_files.py``: a user's view in a TOML file (templates over the handoff inputs, optional writer).
- ``view.py``: :func:`build_view` / :func:`build_views` and the :class:`ViewResult` record.
- ``prompt.py``: Jinja templates (``templates/``, overridable): :func:`takeover_prompt`, :func:`task_prompt`.
- ``evidence.py``: event rendering ``[step N | source | type]`` and the note writer's evidence packet.
- ``raw_trace.py``: the ``raw_trace`` block (optional budget keeping the newest events).
- ``structured.py``: the bounded continuation record (deterministic fields + model fields, validation).
- ``notes.py``: the note writer (temperature 0, 1,600 tokens, at most two retries).
- ``leak.py``: the leak guard every view passes before it is returned.
- ``inputs.py``: the inputs of one point's views (:func:`load_inputs`: trajectory, task, point, patch).
- ``folder.py``: the views folder of one point (:func:`write_views`: ``<view>.md`` and ``views.json``).

The paper's view names are :data:`takeover.vocabulary.VIEWS` (a study's default set). The model client and the token estimator are
:mod:`takeover.llm`'s (re-exported here for callers).
"""

from takeover.llm import CallAttempt, Completion, ModelCallError, ModelClient, ModelUsage
from takeover.views.folder import built_views, refuse_other_views, write_views
from takeover.views.handoff_view import HANDOFF_INPUTS, Handoff, HandoffView, ViewBlock
from takeover.views.inputs import ViewInputs, load_inputs
from takeover.views.leak import Leak, LeakGuard, ViewLeakError
from takeover.views.notes import NotesFailed
from takeover.views.prompt import takeover_prompt, task_prompt
from takeover.views.structured import DeterministicFields, ModelNotes, compute_fields
from takeover.views.view import ModelRequired, ViewResult, build_view, build_views
from takeover.views.view_registry import (
    HANDOFF_VIEWS,
    model_written,
    view_named,
    view_of,
    view_options,
    view_order,
)

__all__ = [
    "HANDOFF_INPUTS",
    "HANDOFF_VIEWS",
    "CallAttempt",
    "Completion",
    "DeterministicFields",
    "Handoff",
    "HandoffView",
    "Leak",
    "LeakGuard",
    "ModelCallError",
    "ModelClient",
    "ModelNotes",
    "ModelRequired",
    "ModelUsage",
    "NotesFailed",
    "ViewBlock",
    "ViewInputs",
    "ViewLeakError",
    "ViewResult",
    "build_view",
    "build_views",
    "built_views",
    "compute_fields",
    "load_inputs",
    "model_written",
    "refuse_other_views",
    "takeover_prompt",
    "task_prompt",
    "view_named",
    "view_of",
    "view_options",
    "view_order",
    "write_views",
]
