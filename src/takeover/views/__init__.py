"""Handoff views, the takeover prompt and model-written notes (docs/protocol.md section 7).

Files:

- ``view.py``: :func:`build_view` / :func:`build_views` and the :class:`ViewResult` record.
- ``prompt.py``: Jinja templates (``templates/``, overridable): :func:`takeover_prompt`, :func:`task_prompt`.
- ``evidence.py``: event rendering ``[step N | source | type]`` and the note writer's evidence packet.
- ``raw_trace.py``: the ``raw_trace`` block (optional budget keeping the newest events).
- ``structured.py``: the bounded continuation record (deterministic fields + model fields, validation).
- ``notes.py``: the note writer (temperature 0, 1,600 tokens, at most two retries).
- ``leak.py``: the leak guard every view passes before it is returned.
- ``inputs.py``: the inputs of one point's views (:func:`load_inputs`: trajectory, task, point, patch).
- ``folder.py``: the views folder of one point (:func:`write_views`: ``<view>.md`` and ``views.json``).

The view names are :data:`takeover.vocabulary.VIEWS`. The model client and the token estimator are
:mod:`takeover.llm`'s (re-exported here for callers).
"""

from takeover.llm import CallAttempt, Completion, ModelCallError, ModelClient, ModelUsage
from takeover.views.folder import refuse_other_views, write_views
from takeover.views.inputs import ViewInputs, load_inputs
from takeover.views.leak import Leak, LeakGuard, ViewLeakError
from takeover.views.notes import NotesFailed
from takeover.views.prompt import takeover_prompt, task_prompt
from takeover.views.structured import DeterministicFields, ModelNotes, compute_fields
from takeover.views.view import ModelRequired, ViewResult, build_view, build_views

__all__ = [
    "CallAttempt",
    "Completion",
    "DeterministicFields",
    "Leak",
    "LeakGuard",
    "ModelCallError",
    "ModelClient",
    "ModelNotes",
    "ModelRequired",
    "ModelUsage",
    "NotesFailed",
    "ViewInputs",
    "ViewLeakError",
    "ViewResult",
    "build_view",
    "build_views",
    "compute_fields",
    "load_inputs",
    "refuse_other_views",
    "takeover_prompt",
    "task_prompt",
    "write_views",
]
