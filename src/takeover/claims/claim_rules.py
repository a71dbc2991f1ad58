"""Each claim of a note checked against what the predecessor did up to the cut: ``supported``,
``unsupported`` or ``contradicted``, with the event that shows it (docs/protocol.md section 7.6, Extension).

Which views are checked is decided in one place, :func:`checks_claims`: every view a model writes. The check
takes the note's text and, for a structured note, its model-filled fields (:func:`check_note`), so any
model-written view, a user's included, is checked the same way.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from takeover.claims.extraction import CLAIM_KINDS, Claim, normalise_path, note_claims, unclaimed_clauses
from takeover.claims.trace_facts import CommandRun, TraceFacts
from takeover.commands import segments
from takeover.rediscovery.actions import normalised_verification
from takeover.views.view_registry import model_written

Verdict = Literal["supported", "unsupported", "contradicted"]
#: The verdicts, in the order reports list them.
VERDICTS: tuple[str, ...] = ("supported", "unsupported", "contradicted")


def checks_claims(view: str) -> bool:
    """Whether the claims of ``view``'s notes are checked: every view a model writes (the registry's
    ``model_written``, :func:`takeover.views.view_registry.model_written`: the paper's notes views, a model-written
    view file or plug-in). The one place that decides it."""
    return model_written(view)


@dataclass(frozen=True)
class CheckedClaim:
    """One claim with its ``verdict``, the ``event`` that shows it (``None`` when no single event does: a claim
    the task's text supports, or that the checkpoint alone contradicts) and the ``reason`` in words."""

    claim: Claim
    verdict: str
    event: int | None
    reason: str

    def to_json(self) -> dict:
        return {**self.claim.to_json(), "verdict": self.verdict, "event": self.event, "reason": self.reason}


@dataclass
class NoteCheck:
    """The check of one note: its ``claims`` and, per clause where no claim was found, the text
    (``unclaimed``: what the rules do not read)."""

    claims: list[CheckedClaim] = field(default_factory=list)
    unclaimed: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        """Claims per verdict (every verdict present, 0 included)."""
        found = Counter(c.verdict for c in self.claims)
        return {v: found.get(v, 0) for v in VERDICTS}

    def figures(self) -> dict:
        """``claims``, per verdict, the shares ``unsupported_share`` and ``contradicted_share`` (``None``
        without claims) and ``by_kind`` (verdict counts per kind of claim)."""
        n = len(self.claims)
        counts = self.counts
        by_kind = {k: {v: sum(1 for c in self.claims if c.claim.kind == k and c.verdict == v) for v in VERDICTS}
                   for k in CLAIM_KINDS if any(c.claim.kind == k for c in self.claims)}
        return {"claims": n, **counts,
                "unsupported_share": round(counts["unsupported"] / n, 4) if n else None,
                "contradicted_share": round(counts["contradicted"] / n, 4) if n else None,
                "by_kind": by_kind}

    def to_json(self) -> dict:
        return {"figures": self.figures(), "claims": [c.to_json() for c in self.claims], "unclaimed": self.unclaimed}


# --- matching subjects with the record ---------------------------------------------------------------------


def _matching_paths(subject: str, paths: set[str]) -> list[str]:
    """The record's paths a note's path names: the same path, a path it is the end of (``auth.py`` names
    ``requests/auth.py``) or, for a folder, the paths under it."""
    s = normalise_path(subject)
    if not s:
        return []
    return sorted(p for p in paths if p == s or p.endswith("/" + s) or p.startswith(s + "/"))


def _occurs(needle: str, haystack: str, *, word: bool) -> bool:
    if not needle:
        return False
    if not word:
        return needle in haystack
    return re.search(rf"(?<![\w]){re.escape(needle)}(?![\w])", haystack) is not None


def _first_text(facts: TraceFacts, needle: str, *, word: bool = True, outputs: bool = False) -> int | None:
    """The first event whose text (or output, with ``outputs``) holds ``needle``."""
    for event, text in facts.outputs if outputs else facts.texts:
        if _occurs(needle, text, word=word):
            return event
    return None


def _last_text(facts: TraceFacts, needle: str, *, outputs: bool = False) -> int | None:
    for event, text in reversed(facts.outputs if outputs else facts.texts):
        if _occurs(needle, text, word=True):
            return event
    return None


def _in_task(facts: TraceFacts, needle: str) -> bool:
    return _occurs(needle, facts.task, word=True)


def _normal_command(command: str) -> str:
    return " ".join(command.replace("\\\n", " ").split())


@lru_cache(maxsize=4096)
def _command_forms(command: str) -> frozenset[str]:
    """A command as it is compared: whitespace collapsed, and each verification segment in the form of
    docs/protocol.md section 9.1 (``python -m pytest`` is ``pytest``, output options left out). Cached: every
    claim of a note compares against every command of the run."""
    forms = {_normal_command(command)}
    for seg in segments(command):
        forms.add(_normal_command(seg.text))
        forms.add(normalised_verification(seg))
    forms.discard("")
    return frozenset(forms)


def _runs_of_command(facts: TraceFacts, command: str) -> list[CommandRun]:
    """The runs of the note's ``command``: the command is one of the run's segments (in either form of
    :func:`_command_forms`) or a part of the command, whitespace collapsed."""
    wanted = _normal_command(command)
    forms = _command_forms(command)
    out = []
    for run in facts.runs:
        have = _command_forms(run.command)
        if forms & have or (len(wanted) >= 6 and wanted in _normal_command(run.command)):
            out.append(run)
    return out


def _test_keys(subject: str) -> tuple[str, str, str | None]:
    """``(id, function name, file)`` of a test subject: ``a.py::C::test_x[p]`` -> (the id, ``test_x``, ``a.py``)."""
    name = re.sub(r"\[.*\]$", "", subject).split("::")[-1].split(".")[-1]
    file = subject.split("::")[0] if "::" in subject else None
    return subject, name, file


def _runs_of_test(facts: TraceFacts, subject: str) -> list[tuple[CommandRun, str | None]]:
    """``(run, the test's own result or None)`` for the runs that report or name the test."""
    ident, name, file = _test_keys(subject)
    out = []
    for run in facts.runs:
        own = None
        for tid, status in run.tests.items():
            tname = re.sub(r"\[.*\]$", "", tid).split("::")[-1].split(".")[-1]
            if tid == ident or tid.endswith(ident) or ident.endswith(tid) or ("::" not in ident and tname == name):
                own = status
        named = _occurs(name, run.command, word=True) or (file is not None and normalise_path(file) in run.command)
        if own is not None or named:
            out.append((run, own))
    return out


#: Kinds of script a note names, and the file names that fit each (``reproduction script``: ``repro``).
_SCRIPT_NAMES = {"reproduc": r"repro", "repro": r"repro", "verif": r"verif|check|valid", "check": r"check|verif",
                 "test": r"test"}


def _subject_runs(facts: TraceFacts, claim: Claim) -> list[tuple[CommandRun, str | None]]:
    """The runs an outcome or verification claim is about, each with its result (a test's own, else the
    run's)."""
    subject = claim.subject
    if not subject:
        runs = [r for r in facts.runs if r.verification]
        if claim.scope == "script":
            runs = [r for r in runs if re.search(r"\bpython\S*\s+\S+\.py\b|\./\S+|\bbash\s", r.command)] or runs
            # "the reproduction script": a script whose name says so (docs/protocol.md section 7.6)
            kind = next((p for word, p in _SCRIPT_NAMES.items() if word in claim.text.lower()), None)
            if kind is not None:
                runs = [r for r in runs if re.search(rf"\S*(?:{kind})\S*\.(?:py|sh)\b", r.command, re.IGNORECASE)]
        elif claim.scope == "tests":
            # "The tests" of an outcome may be the only check there was; a check said not to have run is
            # a test run.
            tests = [r for r in runs if not re.search(r"\bpython\S*\s+(?!-m)\S+\.py\b", r.command)
                     or "test" in r.command]
            runs = tests if tests or claim.kind == "verification" else runs
        return [(r, r.result) for r in runs]
    if "::" in subject or re.match(r"test_\w+$|Test[A-Z]\w*$", subject):
        return [(r, own or r.result) for r, own in _runs_of_test(facts, subject)]
    runs = _runs_of_command(facts, subject)
    if not runs and re.search(r"\.\w+$", subject):  # a file: the runs whose command names it
        path = normalise_path(subject)
        runs = [r for r in facts.runs if path and (path in r.command or path.rsplit("/", 1)[-1] in r.command.split())]
    return [(r, r.result) for r in runs]


# --- the rules, one per kind of claim ----------------------------------------------------------------------


def _covered(lines: tuple[int, int], seen: list[tuple[int, int | None, int]]) -> int | None:
    """The latest event among the reads ``seen`` that together print lines ``lines`` (a whole read prints
    all), else ``None``."""
    whole = [ev for s, e, ev in seen if s == 1 and e is None]
    start, end = lines
    alone = [ev for s, e, ev in seen if 0 < s <= start and (e is None or e >= end)]
    reach, used = start - 1, []
    for s, e, ev in sorted((s, 10**9 if e is None else e, ev) for s, e, ev in seen if s > 0):
        if s > reach + 1:
            break
        if e > reach:
            reach, used = e, [*used, ev]
    together = [max(used)] if used and reach >= end else []
    found = whole + alone + together
    return max(found) if found else None


def _file(claim: Claim, facts: TraceFacts) -> tuple[str, int | None, str]:
    paths = _matching_paths(claim.subject, facts.paths())
    failed = [facts.failed_reads[p] for p in _matching_paths(claim.subject, set(facts.failed_reads))]
    reads = [r for p in paths for r in facts.reads.get(p, [])]
    if claim.action == "run":
        ran = [e for p in paths for e in facts.ran.get(p, [])]
        if ran:
            return "supported", max(ran), f"event {max(ran)} ran it"
        return "unsupported", None, "no event ran it"
    if claim.lines is not None or claim.action == "read":
        if claim.lines is not None:
            ev = _covered(claim.lines, reads)
            if ev is not None:
                return "supported", ev, f"event {ev} showed lines {claim.lines[0]}-{claim.lines[1]}"
        elif reads:
            ev = max(r[2] for r in reads)
            return "supported", ev, f"event {ev} showed it"
        if failed and not reads:
            return "contradicted", max(failed), f"event {max(failed)} found no such file"
        if reads:
            shown = ", ".join(sorted({f"{s}-{e if e is not None else 'end'}" for s, e, _ in reads if s > 0}))[:120]
            return "unsupported", None, f"the lines read were {shown or 'not numbered'}"
        return "unsupported", None, "no event showed this file's content"
    events = [r[2] for r in reads] + [e for p in paths for e in facts.edits.get(p, []) + facts.ran.get(p, [])]
    if events:
        return "supported", min(events), f"event {min(events)} read, wrote or ran it"
    if failed:  # named only by reads that found no such file
        return "contradicted", max(failed), f"event {max(failed)} found no such file"
    named = normalise_path(claim.subject)
    ev = _first_text(facts, named)
    if ev is not None:
        return "supported", ev, f"event {ev} names it"
    if paths:  # a file only the checkpoint shows changed (a script changed it)
        return "supported", None, "the checkpoint changes it"
    if _in_task(facts, named):
        return "supported", None, "the task's text names it"
    return "unsupported", None, "no event names it"


def _written_script(claim: Claim, facts: TraceFacts) -> tuple[str, int] | None:
    """The first script the predecessor created whose name fits the kind of script a note names ("the
    reproduction script": a name with ``repro``; "a script": any)."""
    stem = next((pattern for word, pattern in _SCRIPT_NAMES.items() if word in claim.subject), r".")
    created = {p: e for p, e in facts.written.items()}
    for path in facts.created:
        created.setdefault(path, min(facts.edits.get(path, [facts.cut_event])))
    found = [(e, p) for p, e in created.items()
             if p.endswith((".py", ".sh")) and re.search(stem, p.rsplit("/", 1)[-1], re.IGNORECASE)]
    return (min(found)[1], min(found)[0]) if found else None


def _edit(claim: Claim, facts: TraceFacts) -> tuple[str, int | None, str]:
    if claim.scope == "script":  # a script written, or still to write
        found = _written_script(claim, facts)
        if claim.mood == "todo":
            return ("contradicted", found[1], f"event {found[1]} already wrote {found[0]}") if found else (
                "supported", None, "no such script yet")
        return ("supported", found[1], f"event {found[1]} wrote {found[0]}") if found else (
            "unsupported", None, "no event wrote such a script")
    known = facts.paths()
    paths = _matching_paths(claim.subject, known)
    own = sorted({e for p in paths for e in facts.edits.get(p, [])})
    # A command that may change any file (git checkout) counts for a file only after an edit of it: it may
    # have undone that edit; it shows no edit of a file nothing else touched.
    events = sorted(set(own) | {e for e in facts.edits.get("*", []) if own and e > own[0]})
    # The edit that made a change is the file's own last edit; the one that undid it may be any (git checkout).
    last = events[-1] if events else None
    made = own[-1] if own else last
    if facts.changed is None:
        changed = bool(events)
    else:
        changed = bool(_matching_paths(claim.subject, facts.changed))
    if claim.mood == "todo":
        if claim.action == "revert":
            if changed:
                return "supported", made, "the checkpoint changes it" + (f" (last edit: event {made})" if made else "")
            return "contradicted", last, "the checkpoint leaves it unchanged: there is nothing to undo"
        created = bool(_matching_paths(claim.subject, facts.created)) or any(
            facts.reads.get(p) for p in paths)
        if created:
            ev = last if last is not None else min((r[2] for p in paths for r in facts.reads.get(p, [])), default=None)
            return "contradicted", ev, "the file is already there"
        return "supported", None, "the checkpoint has no such file yet"
    if claim.action == "unchanged":
        if changed:
            return "contradicted", made, "the checkpoint changes it" + (f" (last edit: event {made})" if made else "")
        return "supported", last, "the checkpoint leaves it unchanged"
    if claim.action == "revert":
        if changed:
            return "contradicted", made, "the checkpoint still changes it"
        if events:
            return "supported", last, f"event {last} edited it last and the checkpoint leaves it unchanged"
        return "unsupported", None, "no event edited it"
    if changed:
        return "supported", made, (f"event {made} edited it and the checkpoint changes it" if made is not None
                                   else "the checkpoint changes it")
    if facts.changed is None:
        return "unsupported", None, "no event edited it"
    if events:
        return "contradicted", last, f"event {last} edited it last, and the checkpoint leaves it unchanged"
    return "contradicted", None, "no event edited it and the checkpoint leaves it unchanged"


def _command(claim: Claim, facts: TraceFacts) -> tuple[str, int | None, str]:
    if not claim.subject:  # "ran the reproduction script", "ran the tests"
        found = _subject_runs(facts, claim)
        if found:
            return "supported", found[-1][0].event, f"event {found[-1][0].event} ran {found[-1][0].command[:80]!r}"
        return "unsupported", None, "no event ran such a check"
    runs = _runs_of_command(facts, claim.subject)
    if runs:
        return "supported", runs[-1].event, f"event {runs[-1].event} ran it"
    if claim.action == "mention":  # named, not said to have run: an event or the task may show it
        ev = _first_text(facts, _normal_command(claim.subject), word=False)
        if ev is not None:
            return "supported", ev, f"event {ev} shows it"
        if _normal_command(claim.subject) in " ".join(facts.task.split()):
            return "supported", None, "the task's text names it"
    return "unsupported", None, "no event ran this command"


def _outcome(claim: Claim, facts: TraceFacts) -> tuple[str, int | None, str]:
    runs = _subject_runs(facts, claim)
    if claim.action == "no_failure":  # "no failures observed": no check failed up to the cut
        failed = [r for r, res in runs if res == "failed"]
        if failed:
            return "contradicted", failed[-1].at, f"event {failed[-1].at}: failed"
        return "supported", runs[-1][0].at if runs else None, "no check failed"
    if not runs:
        return "unsupported", None, "no event ran it"
    opposite = "passed" if claim.outcome == "failed" else "failed"
    if claim.tense == "past":
        same = [r for r, res in runs if res == claim.outcome]
        if same:
            return "supported", same[-1].at, f"event {same[-1].at}: {claim.outcome}"
        other = [r for r, res in runs if res == opposite]
        if other:
            return "contradicted", other[-1].at, f"event {other[-1].at}: {opposite}"
        return "unsupported", None, "its result is unknown"
    run, result = runs[-1]
    edits_after = [e for e in facts.edit_events if e > run.at]
    if result == claim.outcome and not edits_after:
        return "supported", run.at, f"event {run.at}: {result}, on the repository as it is at the cut"
    if result == opposite and not edits_after:
        return "contradicted", run.at, f"event {run.at}: {result}, on the repository as it is at the cut"
    if edits_after and result in (claim.outcome, opposite):
        return "unsupported", None, (f"its latest run (event {run.at}: {result}) came before the edit at event " \
                                    f"{edits_after[-1]}")
    return "unsupported", None, "its latest result is unknown"


def _verification(claim: Claim, facts: TraceFacts) -> tuple[str, int | None, str]:
    runs = _subject_runs(facts, claim)
    latest = facts.latest_edit()
    after = [r for r, _ in runs if latest is None or r.event > latest]
    if after:
        return "contradicted", after[0].at, f"event {after[0].at} ran it" + (
            f" after the latest edit (event {latest})" if latest is not None else "")
    if latest is not None:
        return "supported", latest, f"no run after the latest edit (event {latest})"
    return "supported", None, "no event ran it"


def _named(claim: Claim, facts: TraceFacts, *, outputs: bool = False) -> tuple[str, int | None, str]:
    """Tests, errors, functions and classes: an event that shows the name."""
    names = [claim.subject]
    if claim.kind == "test":
        names.append(_test_keys(claim.subject)[1])
    if claim.kind == "symbol" and "." in claim.subject:
        names.append(claim.subject.rsplit(".", 1)[-1])
    for name in names:
        ev = _last_text(facts, name, outputs=True) if outputs else _first_text(facts, name)
        if ev is not None:
            return "supported", ev, f"event {ev} shows it"
    if any(_in_task(facts, n) for n in names):
        return "supported", None, "the task's text names it"
    return "unsupported", None, "no event shows it"


def _quote(claim: Claim, facts: TraceFacts) -> tuple[str, int | None, str]:
    wanted = " ".join(claim.subject.split())
    for event, text in facts.texts:
        if wanted in " ".join(text.split()):
            return "supported", event, f"event {event} shows it"
    if wanted in " ".join(facts.task.split()):
        return "supported", None, "the task's text holds it"
    return "unsupported", None, "no event shows it"


_RULES = {
    "file": _file, "edit": _edit, "command": _command, "outcome": _outcome, "verification": _verification,
    "test": _named, "symbol": _named, "quote": _quote,
    "error": lambda claim, facts: _named(claim, facts, outputs=True),
}


def check_claim(claim: Claim, facts: TraceFacts) -> CheckedClaim:
    """The verdict of one claim against the predecessor's record (docs/protocol.md section 7.6)."""
    verdict, event, reason = _RULES[claim.kind](claim, facts)
    return CheckedClaim(claim, verdict, event, reason)


def check_note(text: str, facts: TraceFacts, *, fields: dict[str, str] | None = None) -> NoteCheck:
    """Extract the claims of a note and check each one.

    Args:
        text: the note as the successor reads it (a summary, or the rendered record of a structured note).
        facts: the predecessor's record at the cut (:func:`takeover.claims.trace_facts.trace_facts`).
        fields: a structured note's model-filled fields (``{name: value}``); when given, only they are read
            (the record's deterministic half is computed by code, not claimed by the writer).
    """
    claims = note_claims(text, fields)
    checked = [check_claim(c, facts) for c in claims]
    if fields:
        unclaimed = [f"{name}: {piece}" for name, value in fields.items() if isinstance(value, str)
                     for piece in unclaimed_clauses(value, claims, name)]
    else:
        unclaimed = unclaimed_clauses(text, claims)
    return NoteCheck(checked, unclaimed)


def summary_of(checks: list[dict]) -> dict:
    """Figures over several notes' checks (each :meth:`NoteCheck.to_json`'s ``figures``): ``notes``,
    ``claims``, ``claims_per_note`` (mean), per verdict, and the pooled shares."""
    n = sum(c["claims"] for c in checks)
    counts = {v: sum(c[v] for c in checks) for v in VERDICTS}
    return {"notes": len(checks), "claims": n, "claims_per_note": round(n / len(checks), 2) if checks else None,
            **counts, "unsupported_share": round(counts["unsupported"] / n, 4) if n else None,
            "contradicted_share": round(counts["contradicted"] / n, 4) if n else None}


__all__ = ["VERDICTS", "CheckedClaim", "NoteCheck", "check_claim", "check_note", "checks_claims", "summary_of"]
