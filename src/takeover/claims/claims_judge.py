"""An optional model judge of the claims the rules leave ``unsupported`` (docs/protocol.md section 7.6,
Extension). Off by default; its verdicts are recorded apart (``judge`` beside the rules' ``claims``) and never
change the rules' figures.

The judge gets what the note writer got (the task and the evidence packet of the cut, docs/protocol.md
section 7.3, code kept), the claims with the sentence each comes from, and answers one JSON object: per
claim ``supported``/``unsupported``/``contradicted``, the step of the event that shows it and a reason. One
call per note, temperature 0. A claim it gives no valid verdict for is ``no_answer``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from takeover.claims.extraction import clauses
from takeover.llm import ModelCallError, ModelClient, ModelUsage, ResponseSchema
from takeover.trajectories.events import Trajectory
from takeover.views.evidence import PACKET_CLIP, evidence_packet
from takeover.views.prompt import render

TEMPLATES = Path(__file__).with_name("templates")
JUDGE_MAX_TOKENS = 1600
_VERDICTS = ("supported", "unsupported", "contradicted")
#: The JSON the judge is asked for (constrained decoding where the endpoint supports it).
JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"verdicts": {"type": "array", "items": {
        "type": "object",
        "properties": {"claim": {"type": "integer"}, "verdict": {"type": "string", "enum": list(_VERDICTS)},
                       "step": {"type": ["integer", "null"]}, "reason": {"type": "string"}},
        "required": ["claim", "verdict", "step", "reason"], "additionalProperties": False}}},
    "required": ["verdicts"],
    "additionalProperties": False,
}


def _sentence(check: dict[str, Any], claim: dict[str, Any]) -> str:
    text = (check.get("fields") or {}).get(claim.get("field")) if claim.get("field") else check.get("note")
    text = text or ""
    for a, b in clauses(text):
        if a <= claim["start"] < b:
            return " ".join(text[a:b].split())
    return claim["text"]


def _verdicts(answer: str, count: int) -> dict[int, dict[str, Any]]:
    try:
        data = json.loads(answer)
    except json.JSONDecodeError:
        m = re.search(r"\{.*\}", answer, re.DOTALL)
        try:
            data = json.loads(m.group(0)) if m else {}
        except json.JSONDecodeError:
            data = {}
    out: dict[int, dict[str, Any]] = {}
    for v in (data.get("verdicts") if isinstance(data, dict) else None) or []:
        if isinstance(v, dict) and isinstance(v.get("claim"), int) and 0 <= v["claim"] < count \
                and v.get("verdict") in _VERDICTS:
            step = v.get("step")
            out[v["claim"]] = {"verdict": v["verdict"], "event": step - 1 if isinstance(step, int) and step > 0 else None,
                               "reason": str(v.get("reason") or "")[:300]}
    return out


def judge_unsupported(check: dict[str, Any], trajectory: Trajectory, problem_statement: str,
                      client: ModelClient) -> dict[str, Any]:
    """Ask the judge about the claims of ``check`` (a note's check as JSON, :func:`takeover.claims.check_prompt`)
    that the rules left ``unsupported``.

    Returns:
        ``{"model", "verdicts": [{"claim": index in check["claims"], "verdict", "event", "reason"}],
        "usage"}``; ``verdict`` is ``no_answer`` for a claim the judge gave no valid verdict for, and every
        claim is ``no_answer`` (with ``error``) when the endpoint fails.
    """
    claims = check.get("claims") or []
    asked = [i for i, c in enumerate(claims) if c.get("verdict") == "unsupported"]
    record: dict[str, Any] = {"model": client.settings.model, "verdicts": [], "usage": None}
    if not asked:
        return record
    entries, earlier = evidence_packet(trajectory, int(check["cut_event"]), remove_code=False)
    request = render("claims_judge.md.j2", TEMPLATES, problem_statement=problem_statement.strip(), events=entries,
                     earlier=earlier, clip=PACKET_CLIP,
                     claims=[{"text": claims[i]["text"], "sentence": _sentence(check, claims[i])} for i in asked])
    try:
        completion = client.complete([{"role": "user", "content": request}], temperature=0.0,
                                     max_tokens=JUDGE_MAX_TOKENS,
                                     response_schema=ResponseSchema("claims_judge", JUDGE_SCHEMA))
        found, error, attempts = _verdicts(completion.answer, len(asked)), None, completion.attempts
    except ModelCallError as exc:
        found, error, attempts = {}, str(exc), exc.attempts
    record["verdicts"] = [{"claim": i, **found.get(n, {"verdict": "no_answer", "event": None, "reason": ""})}
                          for n, i in enumerate(asked)]
    usage = ModelUsage.of(attempts)
    record["usage"] = {"calls": usage.calls, "prompt_tokens": usage.prompt_tokens,
                       "completion_tokens": usage.completion_tokens}
    if error:
        record["error"] = error
    return record
