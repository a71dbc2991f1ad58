"""What takeover reads, checked at the door: one schema per input kind, beside the settings records.

A malformed input never becomes a verdict, an export or an overwrite: every reader checks its records here
before using them, and a failure is one :class:`~takeover.errors.InputError` line naming the file, the record
and the field (exit status 2).

- :class:`DatasetRow`: a SWE-bench row in either format (swebench 4.x: ``swebench_verified.jsonl``; 5.x rows
  also carry ``image``, ``eval_script``, ``log_parser``, ``eval_type``): the task's identity, its problem
  statement and both test lists are required and typed (docs/protocol.md section 2). A row without
  ``FAIL_TO_PASS`` is refused: read as an empty list, it made the empty patch "resolved".
- :class:`PredictionRow`: a SWE-bench prediction: ``instance_id`` and ``model_patch`` required (a prediction
  without the field is refused, never graded as the empty patch; ``""`` and ``null`` are the empty patch, said
  explicitly, as SWE-bench's harness reads them).
- :func:`refuse_duplicates`: two records of one identity (two rows with one ``instance_id``, two predictions
  for one model and instance) are refused, naming both records: the last no longer wins silently.
- :class:`Cut` and :func:`refuse_other`: what a points file, a checkpoint folder and a views folder say they
  were made for (the task, the predecessor run and the cut), compared with what they are used for: one made
  for another task, run or point is refused (docs/protocol.md section 5.5).

The schemas import nothing of the readers that use them (layer 0, like the settings records).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from takeover.errors import InputError, json_type

T = TypeVar("T")


def test_names(value: Any) -> list[str]:
    """``FAIL_TO_PASS`` / ``PASS_TO_PASS`` as a list: a JSON list of strings, or a JSON-encoded list of strings
    (Hugging Face and swebench 5.x rows store them so).

    Raises:
        ValueError: anything else (``null``, a bare string, a list holding something other than strings).
    """
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else None
        except json.JSONDecodeError:
            raise ValueError("expected a list of test names or a JSON-encoded list of strings, got a string that is "
                             "not JSON") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a list of test names or a JSON-encoded list of strings, got {json_type(value)}")
    return list(value)


class DatasetRow(BaseModel):
    """One SWE-bench dataset row, either format, as read from a file (docs/protocol.md section 2).

    Required: ``instance_id``, ``repo``, ``base_commit``, ``problem_statement`` (strings, not empty), and
    ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (lists of test names, or JSON-encoded lists: a 5.x row's form).
    Typed when present: ``patch``, ``test_patch``, ``version`` (a number is read as its text),
    ``environment_setup_commit``, ``difficulty`` and the 5.x grading fields ``image``, ``eval_script``,
    ``log_parser`` (strings) and ``eval_type`` (``pass_and_fail`` or ``fail_only``). Other fields are kept
    and not checked.

    Raises:
        pydantic.ValidationError: a required field is missing or a field has another type.
    """

    model_config = ConfigDict(extra="allow", strict=True)

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    patch: str | None = None
    test_patch: str | None = None
    version: str | None = None
    environment_setup_commit: str | None = None
    difficulty: str | None = None
    image: str | None = None
    eval_script: str | None = None
    log_parser: str | None = None
    eval_type: Literal["pass_and_fail", "fail_only"] | None = None

    @field_validator("instance_id", "repo", "base_commit", "problem_statement")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _tests(cls, value: Any) -> list[str]:
        return test_names(value)

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        # Some dumps store versions as numbers (1.1); the text is what SWE-bench's tables are keyed by.
        return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


class PredictionRow(BaseModel):
    """One SWE-bench prediction as read from a file: ``instance_id`` and ``model_patch`` required;
    ``model_patch`` is a string or ``null`` (``""`` and ``null`` are the empty patch: SWE-bench's harness counts
    both as an empty-patch instance, ``run_evaluation.get_dataset_from_preds``); ``model_name_or_path`` a
    string when present. Other fields are kept.

    Raises:
        pydantic.ValidationError: a required field is missing, ``instance_id`` is ``null``, or a field has
            another type.
    """

    model_config = ConfigDict(extra="allow", strict=True)

    instance_id: str
    model_patch: str | None  # required all the same: a record without the field is refused
    model_name_or_path: str | None = None


#: Why a required field is required, said when it is missing: the field, then what it is for.
MISSING_HINTS = {
    "FAIL_TO_PASS": "the tests a fix must make pass; without them any patch, even the empty one, would be graded "
                    "resolved",
    "PASS_TO_PASS": "the tests that must keep passing; [] when there are none",
    "model_patch": 'the patch to grade; "" (or null, as SWE-bench reads it) is the empty patch, said explicitly',
}


def checked(schema: type[BaseModel], path: object, record: str | None, row: Any) -> None:
    """Check ``row`` (record ``record`` of the file ``path``) against ``schema``.

    Raises:
        InputError: ``row`` is not a JSON object, or fails the schema: one line naming the file, the record and
            the first failing field (a missing required field says what it is for, :data:`MISSING_HINTS`).
    """
    if not isinstance(row, dict):
        raise InputError(path, f"expected a JSON object, got {json_type(row)}", record=record)
    try:
        schema.model_validate(row)
    except ValidationError as exc:
        error = InputError.from_validation(path, exc, record=record)
        hint = MISSING_HINTS.get(error.field or "")
        if error.reason.startswith("missing") and hint:
            error = InputError(path, f"missing: {hint}{error.reason.removeprefix('missing')}", record=record,
                               field=error.field)
        raise error from None


def refuse_duplicates(path: object, rows: Iterable[tuple[str, T]], key: Callable[[T], Mapping[str, Any]]) -> None:
    """Refuse two records of one identity: ``rows`` are ``(record, item)`` in file order, ``key`` an item's
    identity by field (``{"instance_id": ...}``; the last field is the one the message names).

    Raises:
        InputError: names the file, the second record, the field, and the first record.
    """
    first: dict[tuple, str] = {}
    for record, item in rows:
        identity = dict(key(item))
        k = tuple(identity.values())
        if k in first:
            field, value = identity.popitem()
            also = f" (with {', '.join(f'{name} {other!r}' for name, other in identity.items())})" if identity else ""
            raise InputError(path, f"{value!r}{also} repeats {first[k]}: one record each; remove one of them",
                             record=record, field=field)
        first[k] = record


class Cut(BaseModel):
    """What a points file, a checkpoint folder or a views folder was made for (docs/protocol.md section 5.5):
    the task, the predecessor run, and the point. A field that is ``None`` is not known (or not recorded) and
    not compared.

    Attributes:
        instance_id: the source task.
        trajectory_record: the run within its file (a file of many runs).
        format: the predecessor's trajectory format.
        events: the number of the predecessor's events.
        point_type, event_index: the handoff point.
        patch_sha256: the checkpoint patch's sha256.
    """

    model_config = ConfigDict(frozen=True)

    instance_id: str | None = None
    trajectory_record: str | None = None
    format: str | None = None
    events: int | None = None
    point_type: str | None = None
    event_index: int | None = None
    patch_sha256: str | None = None

    def differences(self, other: Cut) -> list[str]:
        """The fields both know and that differ, in field order."""
        return [name for name in type(self).model_fields
                if getattr(self, name) is not None and getattr(other, name) is not None
                and getattr(self, name) != getattr(other, name)]


def refuse_other(path: object, held: Cut, wanted: Cut, *, kind: str, way_out: str,
                 field_names: Mapping[str, str] | None = None) -> None:
    """Refuse ``path`` (a ``kind``: ``"points file"``, ``"views folder"``) made for another cut than the one
    it is used for.

    Args:
        held: what the file or folder says it was made for.
        wanted: what it is used for here.
        way_out: what to do instead, for the message.
        field_names: the file's own name of a :class:`Cut` field when it differs (``{"point_type":
            "point.type"}``), for the message.

    Raises:
        InputError: names the file, the first field that differs with both values, and every other field
            that differs.
    """
    differ = held.differences(wanted)
    if not differ:
        return
    first = differ[0]
    more = f" (and {', '.join(differ[1:])} differ)" if len(differ) > 1 else ""
    raise InputError(path, f"this {kind} was made for another {_what(first)}: {getattr(held, first)!r}, not "
                     f"{getattr(wanted, first)!r}{more}; {way_out}", field=(field_names or {}).get(first, first))


def _what(field: str) -> str:
    return {"instance_id": "task", "trajectory_record": "run", "format": "run", "events": "run",
            "point_type": "point", "event_index": "point", "patch_sha256": "checkpoint"}[field]
