"""The views folder of one handoff point: ``<view>.md`` and ``views.json`` (written by ``takeover views``).

Output folder:

- ``<view>.md``: the full takeover prompt of each view that could be built (exactly ``ViewResult.prompt``).
- ``views.json``: per view ``file``, ``characters`` (of that file's text), ``bytes`` (its UTF-8 size),
  ``estimated_tokens`` (``token_estimator`` names the method), ``note_tokens`` (note-writing usage: prompt,
  completion and cached tokens, calls, seconds; ``null`` for deterministic views), ``validation``
  (``not_applicable``, ``valid``, ``repaired``, ``retried``, or, for a view that was not built,
  ``model_required``, ``rejected``, ``model_error``), ``attempts``, ``rejections``, ``sha256`` and ``key``.

A re-run reuses a view whose ``key`` (:func:`view_key`: the point, the checkpoint patch, the view, its note
writer, the templates and the view's own budgets) and file hash match, so note-writing tokens are not spent
twice; each write is atomic.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from takeover._util.io import atomic_write_json, atomic_write_text, sha256_text, stable_hash
from takeover.llm import ModelClient, ModelSettings, ModelUsage, estimator_name
from takeover.view_budgets import ViewBudgets
from takeover.views.handoff_view import HandoffView
from takeover.views.inputs import ViewInputs
from takeover.views.leak import LeakGuard
from takeover.views.notes import NotesFailed
from takeover.views.view import ModelRequired, build_view
from takeover.views.view_registry import view_named, view_order
from takeover.views.view_registry import view_options as view_options_of


def _templates_hash(template_dir: Path | str | None) -> str | None:
    if template_dir is None:
        return None
    files = sorted(p for p in Path(template_dir).glob("*") if p.is_file())
    return stable_hash({p.name: sha256_text(p.read_text(encoding="utf-8")) for p in files})


def view_key(inputs: ViewInputs, view: HandoffView, model: ModelSettings | None, templates: str | None,
             options: dict[str, Any]) -> str:
    """The key of ``view`` of ``inputs.point`` in ``views.json``: the instance, the point, the
    checkpoint patch's sha256, the view's name, and what is set of its note writer's name (a model-written
    view; the model's name, not its address: the same model behind another port is the same writer), the
    templates' hash, the view's options beyond their defaults (``view_options``,
    :func:`takeover.views.view_registry.view_options`) and a view file's content (``definition``), as a unit's key
    has them."""
    parts = {"instance_id": inputs.task.instance_id, "point": inputs.point.model_dump(mode="json"),
             "patch": sha256_text(inputs.checkpoint_patch), "view": view.name,
             "model": model.model if model is not None and view.model_written else None,
             "templates": templates, "view_options": options, "definition": view.definition()}
    return stable_hash({k: v for k, v in parts.items() if v not in (None, {})})


def write_views(
    inputs: ViewInputs,
    names: list[str],
    out: Path | str,
    *,
    model: ModelSettings | None = None,
    template_dir: Path | str | None = None,
    view_budgets: ViewBudgets | None = None,
    view_options: Mapping[str, Mapping[str, Any]] | None = None,
    handoff_state: str | None = None,
) -> dict[str, Any]:
    """Build ``names`` (registered views, or view files' paths) for ``inputs.point`` and write
    ``out/<view>.md`` and ``out/views.json`` (``view_budgets``: the views' budgets,
    :class:`takeover.view_budgets.ViewBudgets`; default: none for ``raw_trace``, 1,600 completion tokens per
    note-writing call, docs/protocol.md section 7; ``view_options``: each view's own options by view name).

    Returns:
        the ``views.json`` content (see module docstring).

    Raises:
        ValueError: ``inputs`` has no point (``inputs.missing_reason`` says why).
    """
    if inputs.point is None:
        raise ValueError(f"no {inputs.point_type} point: {inputs.missing_reason}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    index_path = out / "views.json"
    previous: dict[str, Any] = {}
    if index_path.exists():
        try:
            previous = json.loads(index_path.read_text(encoding="utf-8")).get("views", {})
        except (json.JSONDecodeError, AttributeError):
            previous = {}
    point, task, trajectory = inputs.point, inputs.task, inputs.trajectory
    handoff_state = handoff_state or inputs.handoff_state
    guard = LeakGuard(trajectory, point.event_index, task, inputs.checkpoint_patch, handoff_state=handoff_state)
    client = ModelClient(model) if model is not None else None
    templates = _templates_hash(template_dir)
    budgets = view_budgets or ViewBudgets()
    rows: dict[str, Any] = {}
    try:
        for ref in names:
            view = view_named(ref)
            name = view.name
            options = view_options_of(view, budgets, (view_options or {}).get(name))
            key = view_key(inputs, view, model, templates, options)
            old = previous.get(name) or {}
            path = out / f"{name}.md"
            if old.get("key") == key and old.get("file") and path.exists() and \
                    sha256_text(path.read_text(encoding="utf-8")) == old.get("sha256"):
                rows[name] = {**old, "reused": True}
                continue
            try:
                result = build_view(
                    view, trajectory, point, task, inputs.checkpoint_patch, model=client, template_dir=template_dir,
                    view_options=options, guard=guard,
                )
            except ModelRequired as exc:
                rows[name] = {"file": None, "validation": "model_required", "error": str(exc), "key": key}
                continue
            except NotesFailed as exc:
                rows[name] = {
                    "file": None, "validation": exc.outcome, "error": str(exc), "attempts": exc.attempts,
                    "rejections": exc.reasons, "note_tokens": exc.usage.model_dump(), "key": key,
                }
                continue
            atomic_write_text(path, result.prompt)
            rows[name] = {
                "file": path.name,
                "characters": result.characters,
                "bytes": result.bytes,
                "estimated_tokens": result.estimated_tokens,
                "note_tokens": result.note_usage.model_dump() if result.note_usage else None,
                "validation": result.validation,
                "attempts": result.attempts,
                "rejections": result.rejections,
                "dropped_events": result.dropped_events,
                "structured": result.structured,
                "summary_shape": result.summary_shape,
                "sha256": sha256_text(result.prompt),
                "key": key,
            }
    finally:
        if client is not None:
            client.close()
    views = {**{k: v for k, v in previous.items() if k not in rows}, **rows}
    total = ModelUsage()
    for row in views.values():
        if row.get("note_tokens"):
            total.merge(ModelUsage.model_validate(row["note_tokens"]))
    summary = {
        "instance_id": task.instance_id,
        "trajectory": trajectory.source_path,
        "trajectory_record": trajectory.record,
        "format": trajectory.format,
        "point": point.model_dump(mode="json"),
        "checkpoint_patch_sha256": sha256_text(inputs.checkpoint_patch),
        "note_model": model.public() if model is not None else None,
        "token_estimator": estimator_name(),
        "note_tokens_total": total.model_dump(),
        "notes": inputs.notes,
        "views": views,
    }
    atomic_write_json(index_path, summary)
    return summary


def built_views(checkpoint_dir: Path | str) -> list[str]:
    """The views built for the checkpoint folder ``checkpoint_dir`` (its ``views/<view>.md``), in table order
    (:func:`takeover.views.view_registry.view_order`)."""
    return view_order(p.stem for p in (Path(checkpoint_dir) / "views").glob("*.md"))
