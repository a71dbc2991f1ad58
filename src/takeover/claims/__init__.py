"""Notes checked against the trace: every claim a model-written note makes is ``supported``,
``unsupported`` or ``contradicted`` by what the predecessor did up to the cut (docs/protocol.md section
7.6, Extension).

Modules:

- ``claim_patterns.py``: the words claims are made of (paths, lines, tests, commands, names, outcomes, verbs).
- ``extraction.py``: the claims of a note, no model (:func:`note_claims`, :class:`Claim`).
- ``trace_facts.py``: the predecessor's record at the cut (:func:`trace_facts`, :class:`TraceFacts`).
- ``claim_rules.py``: one rule per kind of claim, the check of a note (:func:`check_note`,
  :class:`NoteCheck`) and which views are checked (:func:`checks_claims`).
- ``note_checks.py``: the note of a view's takeover prompt, checked (:func:`check_prompt`).
- ``unit_claims.py``: a study's checks, stored with each view unit (:func:`study_claims`).
- ``claims_judge.py``: an optional model judge of the claims the rules leave unsupported, recorded apart.
"""

from takeover.claims.claim_rules import (
    VERDICTS,
    CheckedClaim,
    NoteCheck,
    check_claim,
    check_note,
    checks_claims,
    summary_of,
)
from takeover.claims.extraction import CLAIM_KINDS, Claim, extract_claims, note_claims
from takeover.claims.note_checks import check_prompt, check_view_note, note_block, structured_fields
from takeover.claims.trace_facts import CommandRun, TraceFacts, trace_facts
from takeover.claims.unit_claims import CLAIMS_FILE, ViewClaims, study_claims

__all__ = [
    "CLAIMS_FILE",
    "CLAIM_KINDS",
    "VERDICTS",
    "CheckedClaim",
    "Claim",
    "CommandRun",
    "NoteCheck",
    "TraceFacts",
    "ViewClaims",
    "check_claim",
    "check_note",
    "check_prompt",
    "check_view_note",
    "checks_claims",
    "extract_claims",
    "note_block",
    "note_claims",
    "structured_fields",
    "study_claims",
    "summary_of",
    "trace_facts",
]
