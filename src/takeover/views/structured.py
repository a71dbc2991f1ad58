"""The bounded continuation record of ``structured_notes`` (docs/protocol.md section 7).

Two halves:

- :class:`DeterministicFields`, computed by code from the handoff point (its file lists and verification
  context, computed from the event log by point detection) and the checkpoint patch. The continuation
  label comes only from what the predecessor observed, never from official grading:
  no changed source file -> ``no source change observed``; else validation after the latest source change
  ``failed`` -> ``source change with failing validation``; ``passed`` -> ``validated by predecessor``;
  otherwise (``unknown`` / ``none``) -> ``needs verification``.
- :class:`ModelNotes`, the seven fields the note writer fills, returned as one JSON object. Answers are
  parsed (:func:`parse_model_notes`, repairing a fenced or wrapped object) and checked
  (:func:`content_problems`) for the protocol's rejection reasons; any problem triggers a retry.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from takeover.patches import patch_files
from takeover.points import HandoffPoint
from takeover.vocabulary import ContinuationLabel, ValidationStatus

UNKNOWN = "UNKNOWN"
NONE_OBSERVED = "NONE OBSERVED"
EVIDENCE_LIMIT = 240
FIELD_LIMIT = 1500
MODEL_FIELDS = (
    "problem_understanding",
    "work_completed",
    "evidence_observed",
    "observed_failures",
    "remaining_uncertainty",
    "rollback_notes",
    "recommended_next_action",
)


class DeterministicFields(BaseModel):
    """Fields of the record computed by code (never by the model).

    Attributes:
        repository_change_state: one line on the checkpoint diff (files and added/removed lines).
        changed_source_files / changed_test_files / non_source_artifacts: sorted paths (docs/protocol.md section 3).
        validation_status: result of the latest verification after the latest source change
            (``passed``/``failed``/``unknown``/``none``).
        latest_validation_command: the latest verification command at or before the point, if any.
        latest_validation_evidence: a failure line of its output, at most 240 characters.
        continuation_label: see the module docstring.
    """

    repository_change_state: str
    changed_source_files: list[str]
    changed_test_files: list[str]
    non_source_artifacts: list[str]
    validation_status: ValidationStatus
    latest_validation_command: str | None = None
    latest_validation_evidence: str | None = None
    continuation_label: ContinuationLabel


def _line_counts(patch: str) -> tuple[int, int]:
    try:
        ps = PatchSet(patch)
        return sum(pf.added for pf in ps), sum(pf.removed for pf in ps)
    except UnidiffParseError:
        lines = patch.splitlines()
        added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
        removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
        return added, removed


def continuation_label(changed_source_files: list[str], validation_status: str) -> ContinuationLabel:
    """The continuation label from the predecessor's own observations (see module docstring)."""
    if not changed_source_files:
        return "no source change observed"
    if validation_status == "failed":
        return "source change with failing validation"
    if validation_status == "passed":
        return "validated by predecessor"
    return "needs verification"


def compute_fields(point: HandoffPoint, checkpoint_patch: str) -> DeterministicFields:
    """The deterministic half of the record from the point and the checkpoint diff."""
    files = patch_files(checkpoint_patch or "")
    if files:
        added, removed = _line_counts(checkpoint_patch)
        state = (
            f"{len(files)} file{'s' if len(files) != 1 else ''} changed against the base commit "
            f"(+{added}/-{removed} lines): {len(point.changed_source_files)} source, "
            f"{len(point.changed_test_files)} test, {len(point.non_source_artifacts)} other"
        )
    else:
        state = "no changes against the base commit"
    evidence = point.latest_verification_evidence
    if evidence:
        evidence = " ".join(evidence.split())[:EVIDENCE_LIMIT]
    command = point.latest_verification_command
    if command:
        command = " ".join(command.split())[:500]
    status = point.validation_after_latest_source_change
    return DeterministicFields(
        repository_change_state=state,
        changed_source_files=sorted(point.changed_source_files),
        changed_test_files=sorted(point.changed_test_files),
        non_source_artifacts=sorted(point.non_source_artifacts),
        validation_status=status,
        latest_validation_command=command,
        latest_validation_evidence=evidence,
        continuation_label=continuation_label(point.changed_source_files, status),
    )


class ModelNotes(BaseModel):
    """The model-filled fields. Lists of strings are accepted and joined with ``; ``; extra keys are ignored."""

    model_config = ConfigDict(extra="ignore")

    problem_understanding: str
    work_completed: str
    evidence_observed: str
    observed_failures: str
    remaining_uncertainty: str
    rollback_notes: str
    recommended_next_action: str

    @field_validator(*MODEL_FIELDS, mode="before")
    @classmethod
    def _text(cls, value):
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = "; ".join(v.strip() for v in value)
        if not isinstance(value, str):
            raise ValueError("must be a string")  # noqa: TRY004 -- pydantic reports ValueError per field
        value = " ".join(value.split())
        if not value:
            raise ValueError(f"must not be empty (write {UNKNOWN} or {NONE_OBSERVED})")
        if len(value) > FIELD_LIMIT:
            raise ValueError(f"longer than {FIELD_LIMIT} characters")
        return value


def _extract_object(text: str) -> str | None:
    fence = re.search(r"```(?:json)?\s*\n(.*?)```", text, re.DOTALL)
    if fence and fence.group(1).strip().startswith("{"):
        return fence.group(1).strip()
    start = text.find("{")
    if start < 0:
        return None
    try:
        obj, end = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError:
        return None
    return text[start : start + end] if isinstance(obj, dict) else None


def parse_model_notes(text: str) -> tuple[ModelNotes | None, bool, str | None]:
    """Parse an answer: ``(notes, repaired, problem)``.

    ``repaired`` is true when the object had to be cut out of a code fence or surrounding text.
    ``problem`` says why nothing usable was found (then ``notes`` is ``None``).
    """
    stripped = text.strip()
    repaired = False
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError:
        inner = _extract_object(stripped)
        if inner is None:
            return None, False, "the answer is not a JSON object"
        try:
            data = json.loads(inner)
        except json.JSONDecodeError as exc:
            return None, False, f"the answer is not valid JSON ({exc.msg})"
        repaired = True
    if not isinstance(data, dict):
        return None, repaired, "the answer is JSON but not an object"
    try:
        return ModelNotes.model_validate(data), repaired, None
    except ValidationError as exc:
        problems = ", ".join(f"{'.'.join(map(str, e['loc'])) or 'object'}: {e['msg']}" for e in exc.errors()[:4])
        return None, repaired, f"the JSON object does not match the schema ({problems})"


_BARE_DONE = re.compile(
    r"^(?:it(?:'s| is)? |the (?:issue|bug|problem|task) (?:is |has been )?|all )?"
    r"(?:fixed|done|solved|resolved|complete|completed|finished)[.!]*$",
    re.IGNORECASE,
)
_SUCCESS_CLAIM = re.compile(
    r"\b(?:all )?(?:the )?tests? (?:now |all )?pass(?:es|ed)?\b|\bpass(?:es|ed)? all (?:the )?tests\b|"
    r"\b(?:fix|change|solution|patch|issue) (?:is|was|has been) (?:verified|confirmed)\b|"
    r"\bverified (?:that|the fix|the change|success)\b|\bsuccessfully (?:fixed|resolved|solved)\b|"
    r"\b(?:issue|bug|problem|task) (?:is|was|has been) (?:now )?(?:fixed|resolved|solved)\b|"
    r"\bworks (?:correctly|as expected)\b|\bconfirmed (?:to work|working|the fix)\b",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(?:not|no|never|unverified|without|yet|whether|if|until|unless|should|would|to confirm|to verify|"
    r"to check|confirm|verify|check|ensure|make sure|expect\w*|claim\w*|assum\w*|might|may|could)\b|n't\b",
    re.IGNORECASE,
)
_NO_CHANGE = re.compile(
    r"\bno (?:source |code )?(?:changes|modifications|edits)\b"
    r"(?!(?: (?:were|have been|was) made)? (?:to|in) (?:the )?(?:tests?|docs?|documentation|readme|config\w*|changelog))|"
    r"\bno (?:source )?files? (?:were|was|have been|has been) (?:changed|modified|edited)\b|"
    r"\b(?:has|had|did|have) not (?:yet )?(?:made|make|changed|change|modified|modify|edited|edit) any\b|"
    r"\bnothing (?:was|has been) (?:changed|modified)\b|\bcode (?:is|was|remains) unchanged\b",
    re.IGNORECASE,
)
_CLAIM_FIELDS = ("problem_understanding", "work_completed", "evidence_observed", "observed_failures")


def bare_done(text: str) -> bool:
    """True when ``text`` is only a "fixed/done/solved" style claim."""
    return bool(_BARE_DONE.match(" ".join(text.split()).strip(" -*")))


def unhedged_success_claims(text: str) -> list[str]:
    """Claims of verified success in ``text`` that are not negated or hedged in the preceding words."""
    claims = []
    for m in _SUCCESS_CLAIM.finditer(text):
        sentence_start = max(text.rfind(".", 0, m.start()), text.rfind(";", 0, m.start()), 0)
        before = text[max(sentence_start, m.start() - 60) : m.start()]
        after = text[m.end() : m.end() + 25]
        if _HEDGE.search(before) or re.match(r"\s*(?:\?|is (?:not|un)|has not|was not|remains? (?:to|un))", after, re.IGNORECASE):
            continue
        claims.append(m.group(0))
    return claims


def content_problems(notes: ModelNotes, facts: DeterministicFields) -> list[str]:
    """Protocol rejection reasons other than leaks (docs/protocol.md section 7); empty when acceptable.

    - overconfident: a field that is only "fixed/done/solved"; or a claim of verified success in the
      descriptive fields when the predecessor saw no passing validation after its latest source change;
    - contradiction: claims that no code changed (or ``NONE OBSERVED``/``UNKNOWN`` work) while source
      files changed;
    - no next action: ``recommended_next_action`` is ``UNKNOWN``/``NONE OBSERVED`` (the protocol asks for
      one concrete next action).
    """
    problems: list[str] = []
    values = notes.model_dump()
    for name, value in values.items():
        if bare_done(value):
            problems.append(f"overconfident: field {name} only says {value!r}; describe what was observed")
    if facts.validation_status != "passed":
        for name in _CLAIM_FIELDS:
            claims = unhedged_success_claims(values[name])
            if claims:
                problems.append(
                    f"overconfident: field {name} claims {claims[0]!r} but no passing validation was observed "
                    f"after the latest source change (status: {facts.validation_status})"
                )
    if values["recommended_next_action"].upper().strip(". ") in (UNKNOWN, NONE_OBSERVED):
        problems.append("recommended_next_action must name one concrete next step")
    if facts.changed_source_files:
        for name, value in values.items():
            m = _NO_CHANGE.search(value)
            if m:
                problems.append(
                    f"contradiction: field {name} says {m.group(0)!r} but source files changed: "
                    + ", ".join(facts.changed_source_files)
                )
        if values["work_completed"].upper().strip(". ") in (UNKNOWN, NONE_OBSERVED):
            problems.append(
                "contradiction: work_completed is empty but source files changed: " + ", ".join(facts.changed_source_files)
            )
    return problems
