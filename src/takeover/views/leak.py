"""Leak guard: no view may tell the successor what the predecessor could not have seen
(docs/protocol.md sections 5 and 7).

*Visible evidence* at a handoff point = the text of events ``0..event_index`` (all fields), the problem
statement, the task prompt the predecessor was given, and the checkpoint patch (the successor's
repository holds it anyway). A view leaks when it contains any of:

- ``later_event``: a line (at least :data:`MIN_LINE` characters, whitespace-normalized) of an event after
  the point that does not also occur in the visible evidence, or any run of :data:`SHINGLE_WORDS` (20)
  consecutive words of such an event that occurs nowhere in the visible evidence (catches fragments of
  later output cut mid-line);
- ``handoff_state``: the handoff state (official grading label of the checkpoint, e.g. ``needs_completion``)
  or the words "handoff state";
- ``hidden_test``: a FAIL_TO_PASS / PASS_TO_PASS test name (full id, or its function name when that has
  at least 8 characters) that appears in neither the problem statement nor the visible events; also a
  line added by the task's ``test_patch`` that the predecessor never saw;
- ``gold_patch``: a line added by the gold patch (at least :data:`MIN_GOLD_LINE` characters) that the
  predecessor never wrote or saw;
- ``grading_vocabulary``: words about checkpoint internals or official grading (checkpoint, handoff point,
  FAIL_TO_PASS, PASS_TO_PASS, official grading, gold patch, hidden tests) that are not in the visible
  evidence.

Matching is exact on whitespace-normalized text: it catches copying (a bug in the view code, a template
that names the state, a note writer that was fed later events), not paraphrase.

Policy (decided here, used by :func:`takeover.views.build_view`): a deterministic view (``repo_only``,
``raw_trace``) that leaks raises :class:`ViewLeakError`: that is a bug or bad input, never something to
hide. A model-written view that leaks is rejected like any other invalid answer and the note writer is
asked again (at most two retries); if every attempt leaks, :class:`takeover.views.notes.NotesFailed` is
raised.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from takeover.errors import TakeoverError
from takeover.sources.tasks import SourceTask
from takeover.trajectories.events import Event, Trajectory
from takeover.vocabulary import HANDOFF_STATES

MIN_LINE = 32
MIN_GOLD_LINE = 16
MIN_TEST_NAME = 8
SHINGLE_WORDS = 20
#: Handoff state labels a view must not contain; ``invalid`` is an ordinary word (checked only when it is
#: the checkpoint's own state).
STATE_LABELS = tuple(s for s in HANDOFF_STATES if s != "invalid")
LeakKind = Literal["later_event", "handoff_state", "hidden_test", "gold_patch", "grading_vocabulary"]

_VOCABULARY = re.compile(
    r"\bcheck-?points?\b|\bhandoff[ _-]?points?\b|fail_to_pass|pass_to_pass|"
    r"\bofficial(?:ly)? (?:grad\w*|evaluat\w*|test results?)\b|\bgold(?:en)? (?:patch|solution)\b|\bhidden tests?\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+")


class Leak(BaseModel):
    """One piece of information the predecessor could not have seen, found in a view."""

    kind: LeakKind
    detail: str


class ViewLeakError(TakeoverError):
    """A view contains information from after the handoff point or from grading (see module docstring)."""

    def __init__(self, view: str, leaks: list[Leak]):
        self.view = view
        self.leaks = leaks
        shown = "; ".join(f"{leak.kind}: {leak.detail}" for leak in leaks[:3])
        more = f" (+{len(leaks) - 3} more)" if len(leaks) > 3 else ""
        super().__init__(f"view {view!r} leaks information the predecessor could not have seen: {shown}{more}")


def _norm(text: str) -> str:
    return " ".join(text.split())


def _event_texts(event: Event) -> list[str]:
    return [
        v
        for v in (event.text, event.thought, event.command, event.path, event.old_text, event.new_text, event.file_text,
                  event.state_diff)
        if v
    ]


def _shingles(text: str) -> set[int]:
    words = text.split()
    return {hash(" ".join(words[i : i + SHINGLE_WORDS])) for i in range(len(words) - SHINGLE_WORDS + 1)}


def _shingle_texts(text: str, wanted: set[int]) -> list[str]:
    words = text.split()
    found = []
    for i in range(len(words) - SHINGLE_WORDS + 1):
        piece = " ".join(words[i : i + SHINGLE_WORDS])
        if hash(piece) in wanted:
            found.append(piece)
    return found


def _added_lines(patch: str) -> list[str]:
    return [line[1:] for line in (patch or "").splitlines() if line.startswith("+") and not line.startswith("+++")]


def test_short_name(name: str) -> str | None:
    """The function part of a test id: ``a.py::C::test_x[p]``, ``test_x (m.C)``, ``m.C.test_x`` -> ``test_x``."""
    short = re.sub(r"\[.*\]$", "", name.strip())
    short = short.split("::")[-1].split(" (")[0].strip().split(".")[-1]
    if len(short) >= MIN_TEST_NAME and "test" in short.lower() and re.fullmatch(r"\w+", short):
        return short
    return None


test_short_name.__test__ = False  # a helper, not a pytest test


class LeakGuard:
    """Precomputed hidden material for one (trajectory, handoff point, task); :meth:`find` scans a text.

    Args:
        trajectory: the predecessor run.
        event_index: the handoff event (0-based); events after it are hidden.
        task: the source task (problem statement visible; tests, gold patch, test patch hidden).
        checkpoint_patch: the cumulative diff at the point (visible: it is in the successor's repository).
        handoff_state: the checkpoint's grading label when known (hidden).
    """

    def __init__(
        self,
        trajectory: Trajectory,
        event_index: int,
        task: SourceTask,
        checkpoint_patch: str = "",
        *,
        handoff_state: str | None = None,
    ):
        visible_parts = [task.problem_statement or "", trajectory.task_prompt or "", checkpoint_patch or ""]
        for event in trajectory.events[: event_index + 1]:
            visible_parts.extend(_event_texts(event))
        raw = "\n".join(visible_parts)
        self._visible_raw_lower = raw.lower()
        self._visible = _norm(raw)
        self._visible_words = set(_WORD.findall(raw))
        visible_lines = {_norm(line) for line in raw.splitlines()}

        def hidden(line: str, minimum: int) -> str | None:
            n = _norm(line)
            if len(n) < minimum or not re.search(r"[A-Za-z0-9]", n) or n in visible_lines or n in self._visible:
                return None
            return n

        visible_shingles: set[int] = set()
        for part in visible_parts:
            visible_shingles |= _shingles(part)
        self.later_lines: set[str] = set()
        self.later_shingles: set[int] = set()
        for event in trajectory.events[event_index + 1 :]:
            for value in _event_texts(event):
                self.later_shingles |= _shingles(value) - visible_shingles
                for line in value.splitlines():
                    if (n := hidden(line, MIN_LINE)) is not None:
                        self.later_lines.add(n)
        self.gold_lines = {n for line in _added_lines(task.patch) if (n := hidden(line, MIN_GOLD_LINE))}
        self.test_patch_lines = {n for line in _added_lines(task.test_patch) if (n := hidden(line, MIN_LINE))}
        self.hidden_test_ids: set[str] = set()
        self.hidden_test_names: set[str] = set()
        for name in [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]:
            if name and name not in raw:
                self.hidden_test_ids.add(name)
            short = test_short_name(name)
            if short and short not in self._visible_words:
                self.hidden_test_names.add(short)
        self.state_words = {s for s in {*STATE_LABELS, *( [handoff_state] if handoff_state else [])}
                            if s.lower() not in self._visible_raw_lower}

    def find(self, text: str) -> list[Leak]:
        """Every leak in ``text`` (empty list when clean), at most a few per kind, in a stable order."""
        leaks: list[Leak] = []
        norm = _norm(text)
        lower = text.lower()
        words = set(_WORD.findall(text))

        def add(kind: LeakKind, items) -> None:
            for item in sorted(items)[:5]:
                leaks.append(Leak(kind=kind, detail=item[:160]))

        later = [line for line in self.later_lines if line in norm]
        if not later and self.later_shingles:
            later = _shingle_texts(text, self.later_shingles)[:1]
        add("later_event", later)
        add("handoff_state", (s for s in self.state_words if s.lower() in lower))
        if re.search(r"\bhandoff[ _-]?state\b", text, re.IGNORECASE) and "handoff state" not in self._visible_raw_lower:
            leaks.append(Leak(kind="handoff_state", detail="mentions the handoff state"))
        add("hidden_test", [t for t in self.hidden_test_ids if t in text]
            + [t for t in self.hidden_test_names if t in words]
            + [line for line in self.test_patch_lines if line in norm])
        add("gold_patch", (line for line in self.gold_lines if line in norm))
        vocab = {m.group(0).lower() for m in _VOCABULARY.finditer(text)}
        add("grading_vocabulary", (v for v in vocab if v not in self._visible_raw_lower))
        return leaks

    def check(self, text: str, *, view: str) -> None:
        """Raise :class:`ViewLeakError` when :meth:`find` reports anything."""
        leaks = self.find(text)
        if leaks:
            raise ViewLeakError(view, leaks)
