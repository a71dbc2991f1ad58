"""SWE-bench predictions: the records a grading reads (``instance_id``, ``model_name_or_path``, ``model_patch``)."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from takeover._util.io import iter_jsonl, read_text
from takeover.errors import InputError


class Prediction(BaseModel):
    """One row of a SWE-bench predictions file (``preds.json`` / ``.jsonl``); other fields are kept."""

    model_config = ConfigDict(extra="allow")

    instance_id: str
    model_name_or_path: str = "takeover"
    model_patch: str | None = ""


def read_predictions(path: Path | str, instance_ids: Collection[str] | None = None) -> list[Prediction]:
    """Read SWE-bench predictions: ``preds.json`` (a list, or a dict keyed by ``instance_id``) or JSONL.

    Args:
        instance_ids: when given, the dataset's instance ids: a prediction for any other instance is bad input,
            found here before anything is graded.

    Raises:
        InputError: an unreadable file, bad JSON or bytes that are not UTF-8, a record without
            ``instance_id``, a field of the wrong type, or a record outside ``instance_ids`` (names file, record
            and field).
    """
    path = Path(path)
    rows: list[tuple[str, Any]] = []
    if path.suffix == ".jsonl":
        rows = [(f"line {n}", v) for n, v in iter_jsonl(path)]
    else:
        try:
            data = json.loads(read_text(path))
        except json.JSONDecodeError as exc:
            raise InputError(path, f"not valid JSON ({exc.msg} at column {exc.colno})", record=f"line {exc.lineno}") from None
        if isinstance(data, dict):
            rows = [(f"key {k!r}", {"instance_id": k, **v} if isinstance(v, dict) else v) for k, v in data.items()]
        elif isinstance(data, list):
            rows = [(f"index {i}", v) for i, v in enumerate(data)]
        else:
            raise InputError(path, "expected a list or an object of predictions")
    preds = []
    for where, row in rows:
        if not isinstance(row, dict):
            raise InputError(path, "a prediction must be an object", record=where)
        if not isinstance(row.get("instance_id"), str):
            raise InputError(path, "missing or non-string instance_id", record=where, field="instance_id")
        if instance_ids is not None and row["instance_id"] not in instance_ids:
            raise InputError(path, f"instance {row['instance_id']!r} is not in the dataset", record=where,
                             field="instance_id")
        if row.get("model_patch") is not None and not isinstance(row.get("model_patch"), str):
            raise InputError(path, "model_patch must be a string", record=where, field="model_patch")
        try:
            preds.append(Prediction.model_validate(row))
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError(path, err["msg"], record=where, field=".".join(map(str, err["loc"])) or None) from None
    return preds
