"""Model-written notes: ``summary_notes`` and the model half of ``structured_notes`` (docs/protocol.md section 7).

The note writer sees only the predecessor's evidence: the problem statement and the evidence packet
(:func:`takeover.views.evidence.evidence_packet`: last 80 events up to the point, 1,200 characters each;
code and patches removed for structured notes) and, for structured notes, the deterministic fields.
Calls use temperature 0 and at most 1,600 completion tokens.

An answer is accepted only when it passes validation; otherwise the writer is told why (without
repeating any hidden text) and asked again, at most :data:`MAX_RETRIES` (2) times:

- summary notes: non-empty plain text (a single fenced block around the whole answer is unwrapped and
  counts as a repair), not only "fixed/done/solved", no unhedged success claim, denial of an observed
  failure or "no code changed" that the computed facts contradict
  (:func:`~takeover.views.structured.summary_problems`), no leak (:mod:`takeover.views.leak`);
- structured notes: a JSON object matching :class:`~takeover.views.structured.ModelNotes` (repaired when
  fenced or wrapped in text), no overconfidence or contradiction
  (:func:`~takeover.views.structured.content_problems`), no leak in the rendered view. The request asks
  the endpoint for JSON of the notes' schema (:func:`~takeover.views.structured.notes_json_schema`,
  constrained decoding where the endpoint supports it: **Extension**, docs/protocol.md section 7.4); each
  attempt records the ``response_format`` mode it was sent with. The validation is the same either way.

Thinking never enters a view: the answer is the reply's ``content`` with ``<think>``/``<thinking>``
blocks removed (:func:`takeover.llm.strip_thinking`) before it is validated or rendered. A reply cut at the
completion cap (``finish_reason: "length"``) is rejected as truncated while attempts remain; the last
attempt's truncated answer is accepted, labelled ``truncated``, when it passes every other check.

Validation outcome: ``valid`` (first answer accepted as is), ``repaired`` (first answer accepted after a
local repair), ``retried`` (accepted after one or two retries), ``truncated`` (the last attempt's answer,
cut at the completion cap). When every attempt is rejected, :class:`NotesFailed` is raised with
``outcome="rejected"``; when the endpoint fails for good (a reply with reasoning only included: see
:class:`takeover.llm.ReasoningOnlyReply`), with ``outcome="model_error"``. Either way it carries the
note-writing usage spent so far, which is reported separately from the successor's tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from takeover.errors import TakeoverError
from takeover.llm import CallAttempt, ModelCallError, ModelClient, ModelUsage, ResponseSchema
from takeover.points import HandoffPoint
from takeover.sources.tasks import SourceTask
from takeover.trajectories.events import Trajectory
from takeover.view_budgets import NOTE_MAX_TOKENS
from takeover.views.evidence import PACKET_CLIP, evidence_packet
from takeover.views.leak import LeakGuard
from takeover.views.prompt import render
from takeover.views.structured import (
    FIELD_DESCRIPTIONS,
    FIELD_LIMIT,
    MODEL_FIELDS,
    DeterministicFields,
    ModelNotes,
    answer_rules,
    compute_fields,
    content_problems,
    notes_json_schema,
    parse_model_notes,
    summary_problems,
)

NOTE_TEMPERATURE = 0.0
MAX_RETRIES = 2
Validation = Literal["valid", "repaired", "retried", "truncated"]
TRUNCATED = "truncated: the answer was cut at the completion token cap (finish_reason 'length')"


class NotesOutcome(BaseModel):
    """An accepted note-writing result.

    Attributes:
        block: the view block (summary text, or the rendered continuation record).
        prompt: the full takeover prompt built from ``block``.
        validation: ``valid`` / ``repaired`` / ``retried`` / ``truncated``.
        attempts: note-writing attempts (1..3); HTTP retries are counted in ``usage.calls``.
        rejections: why each rejected attempt was rejected (full detail, for the experimenter).
        usage: tokens and seconds of every call made to write these notes.
        notes / facts: the structured record's two halves (structured notes only).
        raw_answers: the model's reply (``content``, thinking included) of each attempt.
    """

    view: str
    block: str
    prompt: str
    validation: Validation
    attempts: int
    rejections: list[str] = Field(default_factory=list)
    usage: ModelUsage
    notes: ModelNotes | None = None
    facts: DeterministicFields | None = None
    raw_answers: list[str] = Field(default_factory=list)


class NotesFailed(TakeoverError):
    """No acceptable notes: every attempt rejected (``outcome="rejected"``) or the endpoint failed
    (``outcome="model_error"``). ``usage`` holds the note-writing tokens spent anyway."""

    def __init__(self, view: str, outcome: str, reasons: list[str], usage: ModelUsage, attempts: int):
        self.view = view
        self.outcome = outcome
        self.reasons = reasons
        self.usage = usage
        self.attempts = attempts
        last = reasons[-1] if reasons else "no answer"
        super().__init__(f"{view}: no acceptable notes after {attempts} attempt(s) ({outcome}): {last}")


def summary_shape(block: str) -> dict:
    """``{"bullets", "words"}`` of a summary-style note (recorded against the asked 5-10 bullets and
    200-500 words, never enforced: the protocol says "about")."""
    lines = block.splitlines()
    return {"bullets": sum(1 for ln in lines if ln.lstrip().startswith(("- ", "* ", "• "))), "words": len(block.split())}


def summary_words(max_tokens: int) -> tuple[int, int]:
    """The length summary notes are asked for (words): the protocol's 200 to 500, shortened so that the
    answer fits ``max_tokens`` (about 0.55 words per token of English prose, room left for the bullets), so
    that a smaller cap (docs/protocol.md section 7.3: 512 with the embedded model) does not cut the answer
    and cost a retry. Lengths are asked for, never enforced."""
    most = max(50, min(500, int(max_tokens * 0.55)))
    return min(200, most // 2), most


def field_chars(max_tokens: int) -> int:
    """The length each structured field is asked to stay under (characters): the seven fields and the JSON
    around them fit ``max_tokens`` (about 3.5 characters per token), at most 600 (the fields' limit of 1,500
    characters is checked whatever was asked)."""
    return max(80, min(600, FIELD_LIMIT, int(max_tokens * 3.5 / len(MODEL_FIELDS)) - 30))


def _unwrap_fence(text: str) -> tuple[str, bool]:
    m = re.fullmatch(r"\s*```[^\n]*\n(.*?)\n?```\s*", text, re.DOTALL)
    return (m.group(1).strip(), True) if m else (text.strip(), False)


def feedback_reason(kind: str, detail: str) -> str:
    """What the note writer is told about a rejected answer's leak of ``kind`` (never the hidden text)."""
    # Never echo hidden text back to the writer: that would hand it the very information we keep out.
    if kind == "grading_vocabulary":
        return f"it uses the term {detail!r}, which does not belong in the notes"
    if kind == "later_event":
        return "it states things that are not in the event log you were given"
    return "it contains information that is not in the evidence you were given"


def write_notes(
    view: str,
    client: ModelClient,
    trajectory: Trajectory,
    point: HandoffPoint,
    task: SourceTask,
    checkpoint_patch: str,
    guard: LeakGuard,
    make_prompt: Callable[[str], str],
    *,
    template_dir: Path | str | None = None,
    max_tokens: int = NOTE_MAX_TOKENS,
    max_retries: int = MAX_RETRIES,
) -> NotesOutcome:
    """Ask the model for notes and validate them (see module docstring).

    Args:
        make_prompt: builds the full takeover prompt from a view block (the leak guard checks the result).

    Raises:
        NotesFailed: every attempt rejected, or :class:`ModelCallError` from the endpoint.
    """
    structured = view == "structured_notes"
    # Summary notes are checked against the same computed facts; only structured notes carry them.
    checked = compute_fields(point, checkpoint_patch)
    facts = checked if structured else None
    entries, earlier = evidence_packet(trajectory, point.event_index, remove_code=structured)
    min_words, max_words = summary_words(max_tokens)
    request = render(
        "notes_structured.md.j2" if structured else "notes_summary.md.j2",
        template_dir,
        problem_statement=task.problem_statement.strip(),
        events=entries,
        earlier=earlier,
        clip=PACKET_CLIP,
        facts=facts,
        fields=FIELD_DESCRIPTIONS,
        rules=answer_rules(checked, point.latest_verification_result, structured=structured),
        field_chars=field_chars(max_tokens),
        min_words=min_words,
        max_words=max_words,
    )
    messages = [
        {"role": "system", "content": render("notes_system.md.j2", template_dir)},
        {"role": "user", "content": request},
    ]
    return ask_for_notes(view, client, messages, checked, guard, make_prompt, facts=facts,
                         template_dir=template_dir, max_tokens=max_tokens, max_retries=max_retries)


def ask_for_notes(
    view: str,
    client: ModelClient,
    messages: list[dict],
    checked: DeterministicFields,
    guard: LeakGuard,
    make_prompt: Callable[[str], str],
    *,
    facts: DeterministicFields | None = None,
    template_dir: Path | str | None = None,
    max_tokens: int = NOTE_MAX_TOKENS,
    max_retries: int = MAX_RETRIES,
) -> NotesOutcome:
    """Send ``messages`` (the writer's request) and validate the answer, retrying with the reasons (see the
    module docstring): structured notes when ``view`` is ``structured_notes``, else summary-style notes
    checked against ``checked``.

    Raises:
        NotesFailed: every attempt rejected, or :class:`ModelCallError` from the endpoint.
    """
    structured = view == "structured_notes"
    calls: list[CallAttempt] = []
    rejections: list[str] = []
    answers: list[str] = []

    def spent() -> ModelUsage:
        return ModelUsage.of(calls)

    # Structured notes ask for JSON of their schema where the endpoint can decode under one (Extension,
    # docs/protocol.md section 7.4); the answer is validated below all the same.
    schema = ResponseSchema("structured_notes", notes_json_schema()) if structured else None
    for attempt in range(1, max_retries + 2):
        try:
            completion = client.complete(messages, temperature=NOTE_TEMPERATURE, max_tokens=max_tokens,
                                         response_schema=schema)
        except ModelCallError as exc:
            calls.extend(exc.attempts)
            raise NotesFailed(view, "model_error", [*rejections, str(exc)], spent(), attempt) from None
        calls.extend(completion.attempts)
        answer = completion.answer
        answers.append(completion.content)
        last = attempt == max_retries + 1
        reasons: list[str] = []
        feedback: list[str] = []
        notes: ModelNotes | None = None
        repaired = False
        block = ""
        if structured:
            notes, repaired, problem = parse_model_notes(answer)
            if problem:
                reasons.append(problem)
            else:
                reasons.extend(content_problems(notes, facts))
                block = render("view_structured_notes.md.j2", template_dir, facts=facts, notes=notes)
            feedback.extend(reasons)
        else:
            block, repaired = _unwrap_fence(answer)
            if not block:
                reasons.append("the answer is empty")
            else:
                reasons.extend(summary_problems(block, checked))
            feedback.extend(reasons)
        prompt = ""
        if not reasons:
            prompt = make_prompt(block)
            for leak in guard.find(prompt):
                reasons.append(f"leak ({leak.kind}): {leak.detail}")
                feedback.append(feedback_reason(leak.kind, leak.detail))
        if completion.truncated and (reasons or not last):
            reasons.insert(0, TRUNCATED)
            feedback.append("it was cut off at the length limit, so write a shorter answer")
        if not reasons:
            validation: Validation = "valid" if attempt == 1 and not repaired else (
                "repaired" if attempt == 1 else "retried")
            return NotesOutcome(
                view=view,
                block=block,
                prompt=prompt,
                validation="truncated" if completion.truncated else validation,
                attempts=attempt,
                rejections=rejections,
                usage=spent(),
                notes=notes,
                facts=facts,
                raw_answers=answers,
            )
        rejections.append(f"attempt {attempt}: " + "; ".join(reasons))
        messages = [
            *messages,
            {"role": "assistant", "content": answer},  # without thinking, as chat templates replay history
            {"role": "user", "content": render("notes_retry.md.j2", template_dir, reasons=sorted(set(feedback)),
                                              structured=structured, fields=MODEL_FIELDS)},
        ]
    raise NotesFailed(view, "rejected", rejections, spent(), max_retries + 1)
