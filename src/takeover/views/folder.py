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

from takeover._util.folders import own_output
from takeover._util.io import atomic_write_json, atomic_write_text, read_json, sha256_text, stable_hash
from takeover.checkpoints import Checkpoint
from takeover.errors import InputError, json_type
from takeover.input_schemas import Cut, refuse_other
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


def _held_views(folder: Path) -> dict[str, Any] | None:
    """``views.json`` of ``folder`` when it is one ``takeover views`` wrote (an object naming its instance and
    point), else ``None``."""
    try:
        doc = json.loads((folder / "views.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and isinstance(doc.get("instance_id"), str) and isinstance(doc.get("point"), dict) \
        and isinstance(doc.get("views"), dict)
    return doc if ok else None


def refuse_other_views(out: Path | str, inputs: ViewInputs | None = None, names: list[str] = ()) -> dict[str, Any] | None:
    """The ``views.json`` of ``out`` when ``out`` is this point's views folder (the same instance, point and
    checkpoint patch; with ``inputs`` ``None``, any views folder: the check before the point is known), or
    ``None`` for a new or empty folder (:func:`takeover._util.folders.own_output`, the rule every command's
    output follows). A ``<view>.md`` of ``names`` (registered views, or view files' paths) that is in the folder
    but not in its ``views.json`` is the user's, and refused too.

    Raises:
        InputError: ``out`` holds files but no ``views.json``, the views of another point, or a ``<view>.md``
            that ``views.json`` does not list; nothing has been written.
    """
    out = Path(out)
    point = inputs.point if inputs is not None else None
    wanted = {} if inputs is None or point is None else {
        "instance_id": inputs.task.instance_id, "point_type": point.type, "event_index": point.event_index,
        "patch_sha256": sha256_text(inputs.checkpoint_patch)}
    what = "the views of this point" if not wanted else (
        f"the views of {wanted['instance_id']} {wanted['point_type']} (event {wanted['event_index']}, checkpoint "
        f"patch {wanted['patch_sha256'][:12]})")
    held = own_output(
        out, read=_held_views, record="views.json", wanted=wanted, what=what,
        identity=lambda d: {"instance_id": d.get("instance_id"), "point_type": d["point"].get("type"),
                            "event_index": d["point"].get("event_index"), "patch_sha256": d.get("checkpoint_patch_sha256")},
        describe=lambda d: f"the views of {d.get('instance_id')} {d['point'].get('type')} (event "
                           f"{d['point'].get('event_index')}, checkpoint patch "
                           f"{str(d.get('checkpoint_patch_sha256'))[:12]})")
    if held is not None:
        listed = {row.get("file") for row in held["views"].values() if isinstance(row, dict)}
        for name in (view_named(ref).name for ref in names):
            if (out / f"{name}.md").exists() and f"{name}.md" not in listed:
                raise InputError(out / f"{name}.md", "is not a view takeover wrote here (views.json does not list it); "
                                 "nothing was written: give another --out-dir, or remove it")
    return held


def refuse_other_checkpoint_views(folder: Path | str, checkpoint: Checkpoint) -> None:
    """Refuse the views of the checkpoint folder ``folder`` (``views/``) when their ``views.json`` names another
    task, point or checkpoint patch than ``checkpoint`` (docs/protocol.md section 5.5): their prompts are another
    checkpoint's. A ``views/`` without ``views.json`` (a study's, written by its view units in the checkpoint's
    own folder) is taken as it is.

    Raises:
        InputError: names ``views.json``, the field that differs and both values.
    """
    folder = Path(folder)
    index = folder / "views" / "views.json"
    if not index.exists():
        return
    doc = read_json(index)
    if not isinstance(doc, dict) or not isinstance(doc.get("point"), dict):
        raise InputError(index, f"not a views record (takeover views): expected an object with a point, got "
                         f"{json_type(doc)}")
    point = doc["point"]
    refuse_other(index, Cut(instance_id=doc.get("instance_id"), point_type=point.get("type"),
                            event_index=point.get("event_index"), patch_sha256=doc.get("checkpoint_patch_sha256")),
                 Cut(instance_id=checkpoint.instance_id, point_type=checkpoint.point.type,
                     event_index=checkpoint.point.event_index, patch_sha256=checkpoint.patch_sha256),
                 kind="views folder", way_out=f"build this checkpoint's views with takeover views RUN --checkpoint-dir "
                                              f"{folder}",
                 field_names={"point_type": "point.type", "event_index": "point.event_index",
                              "patch_sha256": "checkpoint_patch_sha256"})


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

    ``out`` is new, or this point's views folder (:func:`refuse_other_views`): a folder of another point, or
    of the user's own files, is refused before anything is built.

    Raises:
        ValueError: ``inputs`` has no point (``inputs.missing_reason`` says why).
        InputError: ``out`` is not this point's views folder (nothing was written).
    """
    if inputs.point is None:
        raise ValueError(f"no {inputs.point_type} point: {inputs.missing_reason}")
    out = Path(out)
    held = refuse_other_views(out, inputs, names)
    out.mkdir(parents=True, exist_ok=True)
    index_path = out / "views.json"
    previous: dict[str, Any] = held["views"] if held is not None else {}
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
