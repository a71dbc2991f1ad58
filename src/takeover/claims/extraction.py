"""The claims a note makes, extracted deterministically, without a model (docs/protocol.md section 7.6,
Extension).

A note is cut into *clauses* (sentences, bullets, parts joined by ``;``). In each clause the words of
:mod:`takeover.claims.claim_patterns` are found, quoted pieces (backticks, and quotes that hold code) first:
paths with their lines, test identifiers, commands, functions and classes, error names, outcome words, the
verbs that say what was done to a file. Each becomes a :class:`Claim`:

- ``file``: a file or folder named (``action`` ``mention``), read (``read``, with ``lines`` when given) or
  run (``run``);
- ``edit``: a file said to have been edited or created (``edit``), undone (``revert``) or left alone
  (``unchanged``); in a plan, a file still to be undone (``revert``) or created (``create``);
- ``command``: a command said to have run;
- ``test``: a test identifier or test name named;
- ``outcome``: a test, command, script or "the tests" said to pass or fail (``outcome``, ``tense``);
- ``verification``: a check said not to have run (since the latest edit);
- ``error``: an exception or warning name said to have been seen;
- ``symbol``: a function, class, method or attribute named;
- ``quote``: any other quoted piece of code or output.

A clause's *mood* is ``done`` (a report), ``todo`` (a plan: "next", "should", an instruction) or
``hedged`` (a guess: "may", "whether"). Plans and guesses assert no outcome, edit, command or quote: only
the files, tests, functions and errors they name are claims. Structured notes give each model-filled
field its mood (:data:`FIELD_MOODS`); a command or test named in ``observed_failures`` without an outcome
word is said to have failed.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Literal

from takeover.claims.claim_patterns import (
    ERROR,
    FOLDER,
    GENERIC_SUBJECT,
    HEDGE,
    IMPERATIVES,
    LINES,
    NOT_SYMBOLS,
    NOT_VERIFIED,
    OUTCOME,
    PATH,
    SYMBOL,
    TEST_ID,
    TEST_NAME,
    TODO,
    UNCHANGED,
    VERBS,
    is_symbol,
    looks_like_command,
    outcome_of,
    symbol_name,
)
from takeover.commands import repo_path, segments

ClaimKind = Literal["file", "edit", "command", "test", "outcome", "verification", "error", "symbol", "quote"]
#: Every kind of claim, in the order reports list them.
CLAIM_KINDS: tuple[str, ...] = ("file", "edit", "command", "test", "outcome", "verification", "error", "symbol",
                                "quote")
Mood = Literal["done", "todo", "hedged"]
#: The mood of each model-filled field of ``structured_notes`` (docs/protocol.md section 7.4): a field of plans or
#: guesses makes every clause one; in a field of reports, a clause's own words may still make it a plan or a guess.
FIELD_MOODS: dict[str, Mood] = {
    "problem_understanding": "done", "work_completed": "done", "evidence_observed": "done",
    "observed_failures": "done", "remaining_uncertainty": "hedged", "rollback_notes": "todo",
    "recommended_next_action": "todo",
}
#: Field values that state nothing.
EMPTY_VALUES = frozenset({"UNKNOWN", "NONE OBSERVED", "NONE", "N/A"})
_BACKTICK = re.compile(r"`([^`\n]+)`")
_CODE_QUOTE = re.compile(r"(?<![\w])([\"'])([^\"'\n]{2,80}?)\1(?![\w])")
_CODE_CHARS = re.compile(r"[=()\[\]{}_/.:<>%$]")
_CLAUSE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(*•-])|;\s+|\n+")
_BULLET = re.compile(r"\s*(?:[-*•]|\d+[.)])\s+")
_PASSIVE = re.compile(r"^\W*(?:was|were|is|are|has been|have been|had been|got)\s+(?:\w+ly\s+)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Claim:
    """One claim of a note.

    Attributes:
        kind: see the module docstring; ``subject``: the path, command, test id, name, error or quoted text
            (``""`` for a generic subject, see ``scope``).
        text: the words of the note that make the claim; ``start``: their offset in the note (in the field's
            value for a structured note, ``field`` naming it).
        action: for ``file`` ``mention``/``read``/``run``; for ``edit`` ``edit``/``create``/``revert``/
            ``unchanged``.
        lines: ``(start, end)`` lines of a file, 1-based, inclusive.
        outcome: ``passed``/``failed`` (``outcome``), ``none`` (``verification``); tense: ``past`` or
            ``present`` (a present outcome is about the repository at the cut).
        scope: for a subject that names no test: ``tests`` (the tests), ``script`` (a script) or ``any``.
        mood: ``done``, ``todo`` or ``hedged`` (module docstring).
    """

    kind: str
    subject: str
    text: str
    start: int
    field: str | None = None
    action: str = "mention"
    lines: tuple[int, int] | None = None
    outcome: str | None = None
    tense: str = "present"
    scope: str | None = None
    mood: str = "done"

    def to_json(self) -> dict:
        """The claim as a JSON object (``lines`` a list or ``null``)."""
        out = asdict(self)
        out["lines"] = list(self.lines) if self.lines else None
        return out


@dataclass
class _Entity:
    kind: str  # file, folder, test, command, symbol, error, quote, generic
    subject: str
    start: int
    end: int
    lines: tuple[int, int] | None = None
    scope: str | None = None
    used: bool = False


def clauses(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each clause of ``text``: sentences, lines and ``;``-joined parts, never cut inside
    backticks; bullet markers are left out."""
    quoted = [m.span() for m in _BACKTICK.finditer(text)]
    cuts = [0]
    for m in _CLAUSE_BREAK.finditer(text):
        if not any(a < m.start() < b for a, b in quoted):
            cuts.extend([m.start(), m.end()])
    cuts.append(len(text))
    out = []
    for a, b in zip(cuts[::2], cuts[1::2]):
        bullet = _BULLET.match(text, a)
        a = bullet.end() if bullet else a
        while a < b and text[a].isspace():
            a += 1
        if b > a:
            out.append((a, b))
    return out


def mood_of(clause: str) -> Mood:
    """``todo`` for a plan (an instruction, "next", "should", ...), ``hedged`` for a guess ("may",
    "whether", ...), else ``done``."""
    first = re.match(r"\W*([A-Za-z][\w-]*)", clause)
    if (first and first.group(1).lower() in IMPERATIVES) or TODO.search(clause):
        return "todo"
    return "hedged" if HEDGE.search(clause) else "done"


def _overlaps(spans: list[tuple[int, int]], a: int, b: int) -> bool:
    return any(a < y and x < b for x, y in spans)


def _quoted_entity(content: str, start: int, end: int) -> _Entity | None:
    """What a quoted piece is: a test id, a path, a command, a symbol, an error name or other quoted text."""
    c = content.strip()
    if TEST_ID.fullmatch(c):
        return _Entity("test", c, start, end)
    path = PATH.fullmatch(c)
    if path:
        lines = (int(path["start"]), int(path["end"] or path["start"])) if path["start"] else None
        return _Entity("file", path["path"], start, end, lines)
    if FOLDER.fullmatch(c) or (c.endswith("/") and " " not in c):
        return _Entity("folder", c, start, end)
    if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?", c) and is_symbol(c):  # pytest.raises, os.path.join()
        return _Entity("symbol", symbol_name(c), start, end)
    if looks_like_command(c):
        return _Entity("command", c.removeprefix("$ ").strip(), start, end)
    if ERROR.fullmatch(c):
        return _Entity("error", c, start, end)
    if TEST_NAME.fullmatch(c):
        return _Entity("test", c, start, end)
    if is_symbol(c) or re.fullmatch(r"(?:def|class)\s+\w+|[\w.]+\(\)", c):
        return _Entity("symbol", symbol_name(c), start, end)
    return _Entity("quote", c, start, end) if len(c) >= 3 else None


def _entities(clause: str) -> list[_Entity]:
    """The entities of one clause, quoted pieces first; a piece of the clause belongs to one entity."""
    found: list[_Entity] = []
    taken: list[tuple[int, int]] = []

    def add(entity: _Entity | None) -> None:
        if entity is not None and not _overlaps(taken, entity.start, entity.end):
            found.append(entity)
            taken.append((entity.start, entity.end))

    for m in _BACKTICK.finditer(clause):
        add(_quoted_entity(m.group(1), m.start(), m.end()))
    for m in _CODE_QUOTE.finditer(clause):
        # Quotes are also English: a quoted word is code only when it looks like code.
        entity = _quoted_entity(m.group(2), m.start(), m.end())
        if entity is not None and (entity.kind not in ("quote", "symbol") or _CODE_CHARS.search(m.group(2))
                                   or SYMBOL.fullmatch(m.group(2))):
            add(entity)
    for entity in _unquoted_commands(clause):
        add(entity)
    for m in TEST_ID.finditer(clause):
        add(_Entity("test", m.group(0), m.start(), m.end()))
    for m in PATH.finditer(clause):
        lines = (int(m["start"]), int(m["end"] or m["start"])) if m["start"] else None
        add(_Entity("file", m["path"], m.start(), m.end(), lines))
    for m in FOLDER.finditer(clause):
        add(_Entity("folder", m["path"], m.start(), m.end()))
    for m in ERROR.finditer(clause):
        add(_Entity("error", m.group(0), m.start(), m.end()))
    for m in TEST_NAME.finditer(clause):
        add(_Entity("test", m.group(0), m.start(), m.end()))
    for m in SYMBOL.finditer(clause):
        word = next(g for g in (m["defined"], m["call"], m["dotted"], m["snake"], m["camel"]) if g)
        if word not in NOT_SYMBOLS and not ERROR.fullmatch(word) and not word.isupper():
            add(_Entity("symbol", word, m.start(), m.end()))
    for m in GENERIC_SUBJECT.finditer(clause):
        add(_Entity("generic", "", m.start(), m.end(), scope="tests" if m["tests"] else "script"))
    found.sort(key=lambda e: e.start)
    # Line ranges written apart ("lines 130-160 of requests/auth.py") go to the nearest file of the clause.
    files = [e for e in found if e.kind == "file"]
    for m in LINES.finditer(clause):
        if not files:
            break
        nearest = min(files, key=lambda e: min(abs(e.start - m.end()), abs(m.start() - e.end)))
        if nearest.lines is None:
            first = int(m["start"] or m["lstart"])
            nearest.lines = (first, int(m["end"] or m["lend"] or first))
    return found


_RUN_COMMAND = re.compile(
    r"\b(?:ran|runs?|running|re-?ran|re-?run|executed|executes|executing|invoked)\s+(?:the\s+command\s+|command\s+)?"
    r"(?P<cmd>(?:python3?(?:\.\d+)?|pytest|py\.test|tox|nox|bash|sh|make|git|grep|sed|cat|pip|\./[\w./-]+|"
    r"bin/test|tests/runtests\.py)\b[^,;\n]*)",
    re.IGNORECASE,
)
_COMMAND_END = re.compile(r"\s+(?:and|which|that|to|but|with|again|before|after|successfully|on|against|from|"
                          r"while|because|so|it|this|then|showing|confirming|to check)\b|[.:](?:\s|$)", re.IGNORECASE)


def _unquoted_commands(clause: str) -> list[_Entity]:
    """Commands written without quotes after a verb that runs: ``ran python3 reproduce.py and ...``."""
    out = []
    for m in _RUN_COMMAND.finditer(clause):
        cmd = m.group("cmd")
        stop = _COMMAND_END.search(cmd)
        cmd = (cmd[: stop.start()] if stop else cmd).strip().rstrip(".")
        if cmd:
            out.append(_Entity("command", cmd, m.start("cmd"), m.start("cmd") + len(cmd)))
    return out


def _verbs(clause: str, name: str, start: int, end: int, taken: list[tuple[int, int]]) -> list[re.Match[str]]:
    """Matches of the verbs of class ``name`` in ``clause[start:end]`` outside the entities (``taken``)."""
    return [m for m in VERBS[name].finditer(clause, start, end) if not _overlaps(taken, m.start(), m.end())]


def _verb_class(clause: str, entity: _Entity, since: int, taken: list[tuple[int, int]]) -> str | None:
    """The class of the verb that says what was done to the file ``entity``: a revert or a creation between
    the previous file (``since``) and it (``revert the change in a.py`` is a revert), else the nearest verb
    before it, else a passive verb right after it ("auth.py was edited")."""
    for name in ("revert", "create"):
        if _verbs(clause, name, since, entity.start, taken):
            return name
    best: tuple[int, str] | None = None
    for name in VERBS:
        for m in _verbs(clause, name, 0, entity.start, taken):
            if best is None or m.start() > best[0]:
                best = (m.start(), name)
    if best is not None:
        return best[1]
    for name in VERBS:
        found = _verbs(clause, name, entity.end, len(clause), taken)
        if found and _PASSIVE.match(clause[entity.end:found[0].start()]):
            return name
    return None


def _clause_claims(clause: str, base: int, mood: Mood, field: str | None) -> list[Claim]:
    entities = _entities(clause)
    claims: list[Claim] = []

    def claim(kind: str, entity: _Entity, **extra) -> None:
        a, b = entity.start, entity.end
        claims.append(Claim(kind=kind, subject=entity.subject, text=clause[a:b], start=base + a, field=field,
                            mood=mood, **extra))

    asserted = mood == "done"
    taken = [(e.start, e.end) for e in entities if e.kind != "generic"]
    # Outcomes: each outcome word (outside the quoted and named pieces) goes to the nearest subject before it,
    # else after it.
    subjects = [e for e in entities if e.kind in ("test", "command", "file", "generic")]
    if asserted:
        for m in OUTCOME.finditer(clause):
            if _overlaps(taken, m.start(), m.end()):
                continue
            said = outcome_of(m, clause, m.start())
            if not subjects:
                if said[2]:  # "no failures observed": about every check
                    no = re.search(r"\b(?:no|without(?: any)?|zero|0)\s+$", clause[: m.start()], re.IGNORECASE)
                    a = no.start() if no else m.start()
                    claims.append(Claim(kind="outcome", subject="", text=clause[a:m.end()], start=base + a,
                                        field=field, action="no_failure", outcome="passed", tense="past",
                                        scope="any", mood=mood))
                continue
            before = [e for e in subjects if e.end <= m.start()]
            target = before[-1] if before else min(subjects, key=lambda e: e.start - m.end())
            if target.used:
                continue
            target.used = True
            a, b = min(target.start, m.start()), max(target.end, m.end())
            claims.append(Claim(kind="outcome", subject=target.subject, text=clause[a:b], start=base + a,
                                field=field, outcome=said[0], tense=said[1], scope=target.scope, mood=mood))
        if field == "observed_failures":
            for e in subjects:
                if not e.used and e.kind in ("test", "command"):
                    e.used = True
                    claim("outcome", e, outcome="failed", tense="past", scope=e.scope)
    nv = next((m for m in NOT_VERIFIED.finditer(clause) if not _overlaps(taken, m.start(), m.end())), None)
    if mood != "todo" and nv is not None:
        near = [e for e in subjects if not e.used]
        target = min(near, key=lambda e: abs(e.start - nv.start())) if near else None
        if target is not None:
            target.used = True
        a = min(nv.start(), target.start) if target else nv.start()
        b = max(nv.end(), target.end) if target else nv.end()
        claims.append(Claim(kind="verification", subject=target.subject if target else "", text=clause[a:b],
                            start=base + a, field=field, outcome="none", scope=target.scope if target else "any",
                            mood=mood))
    unchanged = any(not _overlaps(taken, m.start(), m.end()) for m in UNCHANGED.finditer(clause))
    since = 0
    for e in entities:
        if e.kind in ("file", "folder", "generic"):
            verb = _verb_class(clause, e, since, taken)
            since = e.end if e.kind != "generic" else since
        if e.kind == "generic" and not e.used:
            claims.extend(_generic_claims(clause, base, e, verb, mood, field))
            continue
        if e.used or e.kind == "generic":
            continue
        if e.kind in ("file", "folder"):
            if verb in ("edit", "create") and _verbs(clause, "revert", e.end, len(clause), taken):
                verb = "revert"  # "edited a.py, then reverted it"
            if unchanged and asserted:
                claim("edit", e, action="unchanged")
            elif verb in ("edit", "create", "revert") and asserted:
                claim("edit", e, action="edit" if verb == "create" else verb)
            elif verb in ("create", "revert") and mood == "todo":
                claim("edit", e, action=verb)
            else:
                action = verb if verb in ("read", "run") and asserted else "mention"
                claim("file", e, action=action, lines=e.lines if action != "run" else None)
        elif e.kind == "command":
            if asserted:  # said to have run (a verb that runs before it), else only named
                claim("command", e, action="run" if _verb_class(clause, e, 0, taken) == "run" else "mention")
            else:  # a command still to run names files; the command itself is no claim about the past
                for seg in segments(e.subject):
                    for word in seg.args:
                        kind = "test" if TEST_ID.fullmatch(word) else "file" if PATH.fullmatch(word) else None
                        if kind:
                            claims.append(Claim(kind=kind, subject=word if kind == "test" else PATH.fullmatch(word)["path"],
                                                text=word, start=base + e.start + max(0, clause[e.start:e.end].find(word)),
                                                field=field, mood=mood))
        elif e.kind == "test":
            claim("test", e)
        elif e.kind == "error" and mood != "hedged":
            claim("error", e)
        elif e.kind == "symbol":
            claim("symbol", e)
        elif e.kind == "quote" and asserted:
            claim("quote", e)
    return sorted(claims, key=lambda c: c.start)


_WRITE = re.compile(r"\b(?:writ(?:e|es|ing)|wrote|written|add(?:s|ed|ing)?)\b", re.IGNORECASE)


def _generic_claims(clause: str, base: int, e: _Entity, verb: str | None, mood: Mood,
                    field: str | None) -> list[Claim]:
    """Claims about "the script" or "the tests" without an outcome: said to have run (a report), or a script
    said to have been written (a report) or still to write (a plan)."""
    start = max((m.start() for name in VERBS for m in VERBS[name].finditer(clause, 0, e.start)), default=e.start)
    text, at = clause[start:e.end], base + start
    wrote = verb == "create" or (verb == "edit" and _WRITE.search(clause, start, e.start))
    if e.scope == "script" and wrote and mood in ("done", "todo"):
        return [Claim(kind="edit", subject=clause[e.start:e.end].lower(), text=text, start=at, field=field,
                      action="create", scope="script", mood=mood)]
    if verb == "run" and mood == "done":
        return [Claim(kind="command", subject="", text=text, start=at, field=field, scope=e.scope, mood=mood)]
    return []


def extract_claims(text: str, *, field: str | None = None, mood: Mood | None = None) -> list[Claim]:
    """Every claim of ``text`` (a free-text note, or one field's value), in the order of the text.

    Args:
        field: the structured field ``text`` is the value of (``None`` for free text).
        mood: the mood of every clause (a field's, :data:`FIELD_MOODS`); ``None``: each clause's own
            (:func:`mood_of`).
    """
    if text.strip().upper().strip(". ") in EMPTY_VALUES:
        return []
    out: list[Claim] = []
    for a, b in clauses(text):
        clause = text[a:b]
        # A field of reports may still hold a plan or a guess ("I need to create ..."); plans stay plans.
        own = mood_of(clause)
        out.extend(_clause_claims(clause, a, mood if mood in ("todo", "hedged") else own, field))
    return out


def note_claims(text: str, fields: dict[str, str] | None = None) -> list[Claim]:
    """The claims of one note: of each model-filled field of a structured note (``fields``, each under its
    mood of :data:`FIELD_MOODS`), else of the free ``text``."""
    if fields:
        return [c for name, value in fields.items() if isinstance(value, str)
                for c in extract_claims(value, field=name, mood=FIELD_MOODS.get(name))]
    return extract_claims(text)


def unclaimed_clauses(text: str, claims: list[Claim], field: str | None = None) -> list[str]:
    """The clauses of ``text`` in which no claim was found (what the rules do not read), whitespace-collapsed."""
    starts = [c.start for c in claims if c.field == field]
    out = []
    for a, b in clauses(text):
        piece = " ".join(text[a:b].split())
        if piece.upper().strip(". ") in EMPTY_VALUES or not re.search(r"[A-Za-z]{3}", piece) or \
                re.fullmatch(r"[#*_ ]*[\w ]{1,40}:?[*_ ]*:?", piece):  # a heading ("**Facts:**")
            continue
        if not any(a <= s < b for s in starts):
            out.append(piece)
    return out


def normalise_path(path: str, roots: tuple[str, ...] = ("/testbed",)) -> str:
    """A path as a note wrote it, repository-relative where it names a root: ``./a.py`` -> ``a.py``,
    ``/testbed/a.py`` -> ``a.py``; a trailing ``/`` is dropped."""
    rel = repo_path(path.rstrip("/") or path, None, roots) if path.startswith("/") else None
    return (rel if rel else path).removeprefix("./").rstrip("/")
