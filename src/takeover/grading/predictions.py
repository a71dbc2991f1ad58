"""SWE-bench predictions: the records a grading reads (``instance_id``, ``model_name_or_path``, ``model_patch``)."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from takeover._util.io import iter_jsonl, read_text
from takeover.errors import InputError
from takeover.input_schemas import PredictionRow, checked, refuse_duplicates


class Prediction(BaseModel):
    """One row of a SWE-bench predictions file (``preds.json`` / ``.jsonl``); other fields are kept."""

    model_config = ConfigDict(extra="allow")

    instance_id: str
    model_name_or_path: str = "takeover"
    model_patch: str | None = ""


def _unique_keys(path: Path, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members, refusing a key given twice (``json`` would keep the last silently)."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise InputError(path, f"{key!r} is given twice in one object: one prediction each; remove one",
                             record=f"key {key!r}", field="instance_id")
        seen[key] = value
    return seen


def read_predictions(path: Path | str, instance_ids: Collection[str] | None = None) -> list[Prediction]:
    """Read SWE-bench predictions: ``preds.json`` (a list, or a dict keyed by ``instance_id``) or JSONL.

    Args:
        instance_ids: when given, the dataset's instance ids: a prediction for any other instance is bad input,
            found here before anything is graded.

    Every record is checked at the door (:class:`takeover.input_schemas.PredictionRow`): a prediction
    without ``model_patch`` is refused, never graded as the empty patch (``""`` and ``null`` are, as SWE-bench's
    harness reads them).

    Raises:
        InputError: an unreadable file, bad JSON or bytes that are not UTF-8, a record without
            ``instance_id`` or ``model_patch``, a field of the wrong type, a record outside ``instance_ids``,
            or two predictions for one model and instance (names both records); names file, record and field.
    """
    path = Path(path)
    rows: list[tuple[str, Any]] = []
    if path.suffix == ".jsonl":
        rows = [(f"line {n}", v) for n, v in iter_jsonl(path)]
    else:
        try:
            data = json.loads(read_text(path), object_pairs_hook=lambda pairs: _unique_keys(path, pairs))
        except json.JSONDecodeError as exc:
            raise InputError(path, f"not valid JSON ({exc.msg} at column {exc.colno})", record=f"line {exc.lineno}") from None
        if isinstance(data, dict):
            # The key is the instance; a record naming another instance_id is refused below, not overridden.
            rows = [(f"key {k!r}", {"instance_id": k, **v} if isinstance(v, dict) else v) for k, v in data.items()]
            for (where, row), key in zip(rows, data, strict=True):
                if isinstance(row, dict) and row["instance_id"] != key:
                    raise InputError(path, f"names instance {row['instance_id']!r} under the key of {key!r}",
                                     record=where, field="instance_id")
        elif isinstance(data, list):
            rows = [(f"index {i}", v) for i, v in enumerate(data)]
        else:
            raise InputError(path, "expected a list or an object of predictions")
    preds = []
    for where, row in rows:
        checked(PredictionRow, path, where, row)
        if instance_ids is not None and row["instance_id"] not in instance_ids:
            raise InputError(path, f"instance {row['instance_id']!r} is not in the dataset", record=where,
                             field="instance_id")
        try:
            preds.append((where, Prediction.model_validate(row)))
        except ValidationError as exc:
            raise InputError.from_validation(path, exc, record=where) from None
    # Two predictions for one model and instance would be graded into one folder, the second over the first.
    refuse_duplicates(path, preds, lambda p: {"model_name_or_path": p.model_name_or_path, "instance_id": p.instance_id})
    return [p for _, p in preds]
