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
  (:func:`content_problems`) for the protocol's rejection reasons; any problem triggers a retry. The same
  claim rules, where they apply to free text, check ``summary_notes`` (:func:`summary_problems`).
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from takeover._util.patches import patch_files
from takeover._util.redact import redact
from takeover.points import HandoffPoint
from takeover.vocabulary import ContinuationLabel, ValidationStatus

UNKNOWN = "UNKNOWN"
NONE_OBSERVED = "NONE OBSERVED"
EVIDENCE_LIMIT = 240
FIELD_LIMIT = 1500
#: The model-filled fields of 7.4 in prompt order, each with the description the note writer is given.
FIELD_DESCRIPTIONS: dict[str, str] = {
    "problem_understanding": "what the task requires, in one or two sentences",
    "work_completed": "what the agent changed or built so far, naming files",
    "evidence_observed": "results the agent actually saw (test output, reproduction output)",
    "observed_failures": "errors or failing checks seen in the log",
    "remaining_uncertainty": "what is not yet known or not yet checked",
    "rollback_notes": "which changes might need to be undone, and why",
    "recommended_next_action": "one concrete next step",
}
MODEL_FIELDS = tuple(FIELD_DESCRIPTIONS)


def notes_json_schema() -> dict:
    """The JSON schema of the model-filled fields, for constrained decoding (docs/protocol.md section 7.4,
    Extension): one object with the seven fields as strings, all required, no other key, in the subset of
    JSON Schema that OpenAI's strict mode and llama.cpp's grammars both accept. It limits the answer's
    shape only: :func:`parse_model_notes` and :func:`content_problems` validate the answer as any other
    (empty fields and the 1,500-character limit are checked there)."""
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}
                       for name, description in FIELD_DESCRIPTIONS.items()},
        "required": list(MODEL_FIELDS),
        "additionalProperties": False,
    }


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


_DONE_WORD = r"(?:fixed|done|solved|resolved|complete|completed|finished)"
_BARE_DONE = re.compile(
    r"^(?:it(?:'s| is)? |the (?:issue|bug|problem|task) (?:is |has been )?|all )?"
    rf"{_DONE_WORD}(?:,? (?:and|&) {_DONE_WORD})*[.!]*$",
    re.IGNORECASE,
)
_SUCCESS_CLAIM = re.compile(
    r"\b(?:all )?(?:the )?tests? (?:now |all )?pass(?:es|ed)?\b|\bpass(?:es|ed)? all (?:the )?tests\b|"
    r"\b(?:fix|change|solution|patch|issue) (?:is|was|has been) (?:verified|confirmed)\b|"
    r"\bverified (?:that|the fix|the change|success)\b|\bsuccessfully (?:fixed|resolved|solved|completed)\b|"
    r"\b(?:issue|bug|problem|task|error|failure) (?:is|was|has been|are|were|have been) (?:now )?"
    r"(?:fully |completely )?(?:fixed|resolved|solved|done|complete|completed|finished)\b|"
    r"\b(?:it|this|that|everything) (?:is|was|has been) (?:now )?(?:fully |completely )?(?:fixed|resolved|solved)\b|"
    r"\b(?:fixed|resolved|solved) (?:the|this|that) (?:issue|bug|problem|task|error|failure)\b|"
    r"\b(?:fix|change|changes|patch|code|solution|it|this|everything) (?:now )?works\b|"
    r"\bworks (?:now|correctly|as expected|fine|properly)\b|\bfixed and (?:done|working|verified)\b|"
    r"\bconfirmed (?:to work|working|the fix)\b",
    re.IGNORECASE,
)
# A claim is not made when it is negated or asked about; a denial of failures is not made when it is only a
# condition or an intention ("make sure no tests fail"), so denials are checked against _CONDITION alone.
_NEGATION = r"not|no|never|unverified|unconfirmed|untested|without|yet|n't"
_CONDITION = (
    r"whether|if|until|unless|should|would|to confirm|to verify|to check|confirm|verify|check|ensure|make sure|"
    r"expect\w*|claim\w*|assum\w*|believ\w*|seem\w*|appear\w*|attempt\w*|tried|try|tries|hope\w*|intend\w*|"
    r"might|may|could|likely|probably|possibly|perhaps|unclear|unknown|uncertain"
)
_HEDGE = re.compile(rf"\b(?:{_NEGATION}|{_CONDITION})\b|n't\b", re.IGNORECASE)
_CONDITIONAL = re.compile(rf"\b(?:{_CONDITION})\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.;!?:](?=\s)|\n")
_FAILURE_DENIAL = re.compile(
    r"\bno (?:tests? )?(?:failures?|errors?|failing tests?|failed tests?|exceptions?|tracebacks?|problems?)\b"
    r"(?: (?:were|was|have been|has been|are|is))?"
    r"(?: (?:observed|seen|found|reported|shown|detected|encountered|raised|occurred))?|"
    r"\b(?:nothing|no tests?|none of the tests?) (?:failed|fails|fail|broke|went wrong)\b|"
    r"\bwithout (?:any )?(?:errors?|failures?|exceptions?|problems?)\b",
    re.IGNORECASE,
)
_NOTHING = re.compile(r"(?:none(?: observed)?|no|nothing|n/?a)[.!]*", re.IGNORECASE)
_FAILURE_WORD = re.compile(r"\bfail\w*|\w*errors?\b|\btracebacks?\b|\bexceptions?\b|\bassert\w*", re.IGNORECASE)
_NO_CHANGE = re.compile(
    r"\bno (?:source |code )?(?:changes|modifications|edits)\b"
    r"(?!(?: (?:were|have been|was) made)? (?:to|in) (?:the )?(?:tests?|docs?|documentation|readme|config\w*|changelog))|"
    r"\bno (?:source )?files? (?:were|was|have been|has been) (?:changed|modified|edited)\b|"
    r"\b(?:has|had|did|have) not (?:yet )?(?:made|make|changed|change|modified|modify|edited|edit) any\b|"
    r"\bnothing (?:was|has been) (?:changed|modified)\b|\bcode (?:is|was|remains) unchanged\b",
    re.IGNORECASE,
)


def bare_done(text: str) -> bool:
    """True when ``text`` is only a "fixed/done/solved" style claim (also two joined: "fixed and done")."""
    return bool(_BARE_DONE.match(" ".join(text.split()).strip(" -*")))


def _clause_before(text: str, position: int, window: int = 60) -> str:
    """At most ``window`` characters before ``position``, back to the start of its clause."""
    start = max((m.end() for m in _CLAUSE_END.finditer(text, 0, position)), default=0)
    return text[max(start, position - window) : position]


def unhedged_success_claims(text: str) -> list[str]:
    """Claims of success ("tests pass", "the issue is fixed", "the fix works", ...) in ``text`` that are not
    negated or hedged in the preceding words of their clause (docs/protocol.md section 7.4)."""
    claims = []
    for m in _SUCCESS_CLAIM.finditer(text):
        after = text[m.end() : m.end() + 25]
        if _HEDGE.search(_clause_before(text, m.start())) or re.match(
            r"\s*(?:\?|is (?:not|un)|has not|was not|remains? (?:to|un))", after, re.IGNORECASE
        ):
            continue
        claims.append(m.group(0))
    return claims


def failure_denials(text: str, *, whole_field: bool = False) -> list[str]:
    """Statements in ``text`` that no failure was seen ("no failures observed", "without errors"), when
    ``text`` reports no failure besides them; empty when it does ("ran without errors, but test_x failed").

    A denial inside a condition or an intention ("make sure no tests fail") does not count. With
    ``whole_field``, a text that is only ``NONE OBSERVED``/"none"/"N/A" is a denial too (the failure field).
    """
    text = " ".join(text.split())
    if whole_field and _NOTHING.fullmatch(text):
        return [text]
    found = [m for m in _FAILURE_DENIAL.finditer(text) if not _CONDITIONAL.search(_clause_before(text, m.start()))]
    if not found:
        return []
    rest = _FAILURE_DENIAL.sub(" ", text)
    return [] if _FAILURE_WORD.search(rest) else [m.group(0) for m in found]


def observed_failure(facts: DeterministicFields) -> str | None:
    """The failure the predecessor saw at the point, as a phrase for a rejection reason, else ``None``:
    validation after the latest source change ``failed``, or a failure line as the latest validation
    evidence (a failed run before the latest edit). The evidence line is visible to the writer, so it may be
    repeated to it; secrets in it are masked, as the reason is also recorded
    (:func:`takeover._util.redact.redact`)."""
    line = facts.latest_validation_evidence
    evidence = f" (latest validation evidence: {redact(line)!r})" if line else ""
    if facts.validation_status == "failed":
        return "the predecessor saw validation fail after the latest source change" + evidence
    if facts.latest_validation_evidence:
        return "the predecessor's latest validation failed" + evidence
    return None


def answer_rules(facts: DeterministicFields, latest_result: str | None = None, *, structured: bool = True) -> list[str]:
    """What the validation of 7.4 will require of the answer, stated from the same facts, for the note
    writer's request (docs/protocol.md section 7.4, Extension: a small writer, told only the facts, was seen
    to deny a failure it was shown; told what the facts rule out, it answers right). Every sentence restates
    a fact or a rejection rule; none adds a rule, and the validation is unchanged.

    Args:
        facts: the deterministic fields.
        latest_result: the result of the latest verification at or before the point (``passed``,
            ``failed``, ``unknown``, ``None``: none), which may come before the latest source change.
        structured: phrase the sentences for the seven fields (else for free-form notes).
    """
    rules: list[str] = []
    failure = observed_failure(facts)
    if failure:
        seen = f"`{facts.latest_validation_command}`" if facts.latest_validation_command else "a check"
        line = (facts.latest_validation_evidence or "").strip("=-*# ")  # pytest's ===== banners say nothing
        rules.append(f"The agent saw {seen} fail" + (f" ({line})" if line else "") + ". "
                     + ("observed_failures must describe this failure (not NONE OBSERVED), and no field may say that "
                        "no failure was seen." if structured else
                        "Say that this check failed; never say that no failure or error was seen."))
    if facts.validation_status != "passed":
        rules.append("No check passed after the latest source change, so "
                     + ("no field may" if structured else "the notes must not") + " say that tests pass, that the "
                     "change works or that the issue is fixed; say what is still to be checked.")
        if latest_result == "passed" and facts.changed_source_files:
            rules.append("The latest passing check ran before the latest source change: it does not show that the "
                         "current code works.")
    if facts.changed_source_files:
        files = ", ".join(facts.changed_source_files)
        rules.append(f"Source files changed ({files}): " + ("work_completed must say what changed in them; "
                     if structured else "say what changed in them; ") + "never say that no code changed.")
    if structured:
        rules.append("recommended_next_action names one concrete command to run or edit to make.")
    return rules


def _no_success(facts: DeterministicFields) -> str:
    return f"no passing validation was observed after the latest source change (status: {facts.validation_status})"


def summary_problems(text: str, facts: DeterministicFields) -> list[str]:
    """The rejection reasons of 7.4 that apply to free-form ``summary_notes`` (docs/protocol.md section 7.3):
    only "fixed/done/solved"; an unhedged success claim while validation is not ``passed``; a denial of
    failures when the predecessor saw one (:func:`observed_failure`); a claim that no code changed when
    source files changed. Empty when acceptable; leaks are checked separately."""
    if bare_done(text):
        return [f"overconfident: the notes only say {text!r}"]
    problems: list[str] = []
    if facts.validation_status != "passed":
        problems += [f"overconfident: the notes claim {claim!r} but {_no_success(facts)}"
                     for claim in unhedged_success_claims(text)[:1]]
    failure = observed_failure(facts)
    if failure:
        problems += [f"contradiction: the notes say {denial!r} but {failure}" for denial in failure_denials(text)[:1]]
    if facts.changed_source_files and (m := _NO_CHANGE.search(text)):
        problems.append(f"contradiction: the notes say {m.group(0)!r} but source files changed: "
                        + ", ".join(facts.changed_source_files))
    return problems


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def content_problems(notes: ModelNotes, facts: DeterministicFields) -> list[str]:
    """Protocol rejection reasons other than leaks (docs/protocol.md section 7.4); empty when acceptable.

    - overconfident: a field that is only "fixed/done/solved"; or an unhedged success claim
      (:func:`unhedged_success_claims`) in any field when the predecessor saw no passing validation after
      its latest source change;
    - a field that repeats its description (:data:`FIELD_DESCRIPTIONS`) instead of filling it in;
    - contradiction: a field denies failures (:func:`failure_denials`; ``NONE OBSERVED`` in
      ``observed_failures``) while the predecessor saw one
      (:func:`observed_failure`); claims that no code changed (or ``NONE OBSERVED``/``UNKNOWN`` work)
      while source files changed;
    - no next action: ``recommended_next_action`` is ``UNKNOWN``/``NONE OBSERVED`` (the protocol asks for
      one concrete next action).
    """
    problems: list[str] = []
    values = notes.model_dump()
    for name, value in values.items():
        if bare_done(value):
            problems.append(f"overconfident: field {name} only says {value!r}; describe what was observed")
        elif _words(value) == _words(FIELD_DESCRIPTIONS[name]):
            problems.append(f"field {name} repeats its description from the instructions instead of filling it in")
    if facts.validation_status != "passed":
        for name in MODEL_FIELDS:
            claims = unhedged_success_claims(values[name])
            if claims:
                problems.append(f"overconfident: field {name} claims {claims[0]!r} but {_no_success(facts)}")
    failure = observed_failure(facts)
    if failure:
        # Every field: a small writer puts "no failures observed" under remaining_uncertainty as well.
        for name in MODEL_FIELDS:
            denials = failure_denials(values[name], whole_field=name == "observed_failures")
            if denials:
                problems.append(f"contradiction: field {name} says {denials[0]!r} but {failure}")
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
