"""Which of a successor's actions rediscover what the predecessor knew at the cut, and the run's figures
(docs/protocol.md section 9.1).

The predecessor's knowledge at the cut (its events ``0..cut_event``): the files it read or wrote whole, with
the content it saw and the lines; the searches it ran over the content of their scope; the verification
commands it ran on the repository's state; the edits in the checkpoint. Each successor action gets one label:
``reread``, ``research``, ``rerun``, ``redo_edit`` or ``new``.

A file's content is known by a *content key*: from per-event repository states when both runs have them
(:mod:`takeover.points.event_states`: the file's diff against the starting state), otherwise from the
events (the edits applied to the file since the starting state, in order; a git command that rewrites the
working tree changes every key).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from takeover.commands import Search
from takeover.errors import InputError
from takeover.rediscovery.actions import ActionEffects, Read, event_effects
from takeover.trajectories.events import Event, Trajectory

Label = Literal["reread", "research", "rerun", "redo_edit", "new"]
#: Every label, rediscovery first (docs/protocol.md section 9.1).
LABELS: tuple[str, ...] = ("reread", "research", "rerun", "redo_edit", "new")
#: The labels that count as rediscovery.
REDISCOVERY_LABELS: tuple[str, ...] = ("reread", "research", "rerun", "redo_edit")
#: Where a successor starts: the checkpoint (a takeover), or the starting state (a run compared with itself).
Start = Literal["checkpoint", "base"]
#: A folder the agents of SWE-bench runs work in, tried after a run's own working folder.
_DEFAULT_ROOTS = ("/testbed",)


@dataclass(frozen=True)
class LabelledAction:
    """One successor action: its ``event`` index, ``label``, the predecessor event it ``repeats`` (``None`` for
    ``new``) and its ``kind`` (``read``, ``search``, ``verification``, ``edit`` or ``other``)."""

    event: int
    label: str
    repeats: int | None
    kind: str


@dataclass(frozen=True)
class RediscoveryFigures:
    """Per-run figures (docs/protocol.md section 9.1).

    Attributes:
        actions: the successor's actions; ``rediscovery_actions``: those labelled rediscovery;
            ``by_label``: actions per label.
        agent_events: the successor's events (actions + observations); ``rediscovery_events``: the
            rediscovery actions and the observations that answer them; ``rediscovery_share``: their ratio
            (``None`` for a run without events).
        prompt_tokens: the run's cumulative prompt tokens; ``rediscovery_prompt_tokens``: the prompt tokens of
            the calls that produced rediscovery actions (a call that produced several actions counts in
            proportion; ``None`` when no call records usage).
        events_until_first_new: the events before the first ``new`` action that reads, searches, runs or
            edits something (``None``: there is none); ``events_until_first_edit``: the events before the
            first edit (``None``: no edit).
        events_by_label: where the run's events went: per label, its actions and the observations that
            answer them (events that answer no action count as ``new``); the values add up to
            ``agent_events``.
    """

    actions: int
    rediscovery_actions: int
    by_label: dict[str, int]
    agent_events: int
    rediscovery_events: int
    rediscovery_share: float | None
    prompt_tokens: int | None
    rediscovery_prompt_tokens: int | None
    events_until_first_new: int | None
    events_until_first_edit: int | None
    events_by_label: dict[str, int] = field(default_factory=dict)


@dataclass
class Rediscovery:
    """The labels of one successor run against one predecessor cut: ``cut_event``, ``figures``, ``labels``
    (one per successor action) and ``unrecognised`` (command parts of the successor no rule reads)."""

    cut_event: int
    figures: RediscoveryFigures
    labels: list[LabelledAction]
    unrecognised: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The record ``takeover rediscovery --json`` prints."""
        return {"cut_event": self.cut_event, "figures": asdict(self.figures),
                "labels": [{"event": a.event, "label": a.label, "repeats": a.repeats, "kind": a.kind}
                           for a in self.labels],
                "unrecognised": self.unrecognised}


# --- content keys ------------------------------------------------------------------------------------------


class _Contents:
    """The content key of every file while a run's events are walked (module docstring)."""

    def __init__(self, keys: dict[str, tuple] | None = None, epoch: tuple = (),
                 states: Sequence[dict[str, str]] | None = None, current: dict[str, str] | None = None,
                 names: tuple = ()):
        self.keys = dict(keys or {})
        self.epoch = epoch
        self.states = states
        self.current = dict(current or {})
        self.names = names  # (created|removed, path) in order: what a listing would show differently

    def copy(self, states: Sequence[dict[str, str]] | None = None) -> _Contents:
        return _Contents(self.keys, self.epoch, states, self.current, self.names)

    def key(self, path: str) -> Any:
        if self.states is not None:
            return ("state", self.current.get(path))
        return (self.epoch, self.keys.get(path, ()))

    def _items(self) -> list[tuple[str, Any]]:
        if self.states is not None:
            return sorted(self.current.items())
        return sorted((p, k) for p, k in self.keys.items() if k)

    def scope_key(self, scope: Sequence[str], kind: str = "content") -> Any:
        """What a search over ``scope`` depends on: the content of the files in it, or for a listing or a name
        search (``kind`` ``list``/``names``) the files created or removed in it."""
        roots = [s for s in scope if not s.startswith("filter:")] or ["."]
        if kind in ("list", "names"):
            if self.states is not None:
                changed = tuple(p for p, d in sorted(self.current.items())
                                if "new file mode" in d or "deleted file mode" in d or "/dev/null" in d)
                return tuple(p for p in changed if any(_under(p, r) for r in roots))
            return (self.epoch, tuple(n for n in self.names if any(_under(n[1], r) for r in roots)))
        inside = tuple((p, k) for p, k in self._items() if any(_under(p, r) for r in roots))
        return (self.epoch, inside) if self.states is None else inside

    def state(self) -> Any:
        return (self.epoch, tuple(self._items())) if self.states is None else tuple(self._items())

    def advance(self, event: Event, fx: ActionEffects, signature: str) -> None:
        """Apply ``event``'s edits (``fx``), or move to the recorded state after it."""
        if self.states is not None:
            if event.index < len(self.states):
                self.current = dict(self.states[event.index])
            return
        # A file first written by this action may be new; a removal always changes the names.
        self.names = self.names + tuple(("created", p) for p in fx.created if not self.keys.get(p)) + tuple(
            ("removed", p) for p in fx.removed)
        for path in fx.edits:
            if path == "*":
                self.epoch = self.epoch + (signature,)
            else:
                self.keys[path] = self.keys.get(path, ()) + (signature,)


def _under(path: str, scope: str) -> bool:
    return scope in (".", "") or path == scope or path.startswith(scope.rstrip("/") + "/")


def _signature(event: Event) -> str:
    """What identifies an edit between two runs: the editor's arguments, or the command's words."""
    if event.type == "file_edit":
        return repr((event.edit, event.old_text, event.new_text, event.file_text, event.insert_line,
                     event.view_range))
    return " ".join((event.command or "").split())


# --- reads: line ranges ------------------------------------------------------------------------------------


def _covered(read: Read, seen: list[tuple[int, int | None, int, str]]) -> int | None:
    """When the ranges ``seen`` (``(start, end, event, selector)``) together cover the lines of ``read``, the
    latest predecessor event that saw them all (else the latest that saw some); ``None`` when they do not. Lines picked by a pattern are covered by a
    whole read or by the same pattern."""
    whole = [ev for s, e, ev, sel in seen if s == 1 and e is None and not sel]
    if read.selector:
        same = [ev for *_, ev, sel in seen if sel == read.selector]
        return max(whole + same) if whole or same else None
    seen = [(s, e, ev) for s, e, ev, sel in seen if not sel]
    if read.start < 0:  # the last lines: a whole read or a longer tail covers them
        tails = [ev for s, e, ev in seen if s < 0 and s <= read.start]
        return max(whole + tails) if whole or tails else None
    end = _END if read.end is None else read.end
    reach, used = read.start - 1, []
    for s, e, ev in sorted((s, _END if e is None else e, ev) for s, e, ev in seen if s > 0):
        if s > reach + 1:
            break
        if e > reach:
            used.append(ev)
            reach = e
    if not used or reach < end:
        return max(whole) if whole else None
    # The latest event that saw all these lines, else the latest that saw some of them.
    alone = [ev for s, e, ev in seen if 0 < s <= read.start and (e is None or e >= end)]
    return max(alone or [ev for s, e, ev in seen if 0 < s <= end and (e is None or e >= read.start)])


_END = 10**12


# --- the predecessor's knowledge ---------------------------------------------------------------------------


@dataclass
class Knowledge:
    """What the predecessor knew at the cut (docs/protocol.md section 9.1): ``seen`` (file,
    content key) -> line ranges with their events; ``searched`` (search, scope content) -> event;
    ``verified`` (normalised command, state) -> event; ``edits`` path -> edit signature -> event, for the
    edits of the checkpoint; and the content keys at the cut."""

    seen: dict[tuple[str, Any], list[tuple[int, int | None, int, str]]] = field(default_factory=dict)
    searched: dict[tuple[Search, Any], int] = field(default_factory=dict)
    verified: dict[tuple[str, Any], int] = field(default_factory=dict)
    edits: dict[str, dict[str, int]] = field(default_factory=dict)
    contents: _Contents = field(default_factory=_Contents)


def _observations(events: Sequence[Event]) -> dict[int, Event]:
    out: dict[int, Event] = {}
    for ev in events:
        if ev.kind == "observation" and ev.cause is not None and ev.cause not in out:
            out[ev.cause] = ev
    return out


def _roots(trajectory: Trajectory, extra: Sequence[str]) -> list[str]:
    return [r for r in (trajectory.working_dir, *extra, *_DEFAULT_ROOTS) if r]


def knowledge_at(trajectory: Trajectory, cut_event: int, *, states: Sequence[dict[str, str]] | None = None,
                 roots: Sequence[str] = ()) -> Knowledge:
    """The predecessor's knowledge after its event ``cut_event`` (0-based, inclusive).

    Args:
        states: the repository state after every event (per-file diffs), when known.
        roots: more folders that stand for the repository's top folder.

    Raises:
        InputError: ``cut_event`` is not an event of the run.
    """
    if not 0 <= cut_event < len(trajectory.events):
        raise InputError(trajectory.source_path or "predecessor", f"event {cut_event} is not an event of the run "
                         f"(it has {len(trajectory.events)})", field="cut_event")
    k = Knowledge(contents=_Contents(states=states))
    answers = _observations(trajectory.events)
    top = _roots(trajectory, roots)
    for ev in trajectory.events[: cut_event + 1]:
        fx = event_effects(ev, answers.get(ev.index), top, trajectory.working_dir)
        c = k.contents
        for r in fx.reads:
            key = c.state() if r.path.startswith("git:") else c.key(r.path)
            k.seen.setdefault((r.path, key), []).append((r.start, r.end, ev.index, r.selector))
        for s in fx.searches:
            k.searched[(s, c.scope_key(s.scope, s.kind))] = ev.index
        for v in fx.verifications:
            k.verified[(v, c.state())] = ev.index
        c.advance(ev, fx, _signature(ev))
        for path in fx.edits:
            k.edits.setdefault(path, {})[_signature(ev)] = ev.index
        for path in fx.writes_whole:
            k.seen.setdefault((path, c.key(path)), []).append((1, None, ev.index, ""))
    return k


# --- labelling the successor -------------------------------------------------------------------------------


def _label(fx: ActionEffects, event: Event, k: Knowledge, c: _Contents) -> tuple[str, int | None]:
    """The label of one successor action whose effects are ``fx`` (``c``: the contents before it)."""
    if fx.edits:
        return _edit_label(fx, event, k, c)
    if fx.unrecognised or fx.kind == "other":
        return "new", None
    repeats: list[int] = []
    for v in fx.verifications:
        ev = k.verified.get((v, c.state()))
        if ev is None:
            return "new", None
        repeats.append(ev)
    for r in fx.reads:
        key = c.state() if r.path.startswith("git:") else c.key(r.path)
        ev = _covered(r, k.seen.get((r.path, key), []))
        if ev is None:
            return "new", None
        repeats.append(ev)
    for s in fx.searches:
        ev = k.searched.get((s, c.scope_key(s.scope, s.kind)))
        if ev is None:
            return "new", None
        repeats.append(ev)
    label = {"verification": "rerun", "read": "reread", "search": "research"}[fx.kind]
    return label, repeats[0]


def _edit_label(fx: ActionEffects, event: Event, k: Knowledge, c: _Contents) -> tuple[str, int | None]:
    """``redo_edit`` when the edit leaves the files unchanged or recreates a change of the checkpoint."""
    if "*" in fx.edits:
        return "new", None
    if event.type == "file_edit" and event.edit in ("str_replace", "replace_all") and event.old_text == event.new_text:
        return "redo_edit", None
    if c.states is not None:
        return "new", None  # decided in label_successor, which sees the state after the edit
    signature = _signature(event)
    repeats = []
    for path in fx.edits:
        # The checkpoint holds this edit's result when it is the last edit the predecessor made to the file
        # before the cut (as far as the events tell: an earlier edit may have been undone by a later one).
        cut_key = k.contents.keys.get(path, ())
        ev = k.edits.get(path, {}).get(signature)
        if ev is None or not cut_key or cut_key[-1] != signature:
            return "new", None
        repeats.append(ev)
    return "redo_edit", repeats[0]


def label_successor(predecessor: Trajectory, cut_event: int, successor: Trajectory, *, start: Start = "checkpoint",
                    predecessor_states: Sequence[dict[str, str]] | None = None,
                    successor_states: Sequence[dict[str, str]] | None = None,
                    roots: Sequence[str] = ()) -> Rediscovery:
    """Label every action of ``successor`` against the knowledge of ``predecessor`` at ``cut_event``.

    Args:
        start: ``checkpoint``: the successor starts from the repository at the cut (a takeover); ``base``: it
            starts from the starting state (a run compared with itself, or two independent runs of a task).
        predecessor_states, successor_states: per-event repository states (per-file diffs against the
            starting state); used only when both are given, otherwise content keys come from the events.
        roots: more folders that stand for the repository's top folder in either run.

    Raises:
        InputError: ``cut_event`` is not an event of the predecessor.
    """
    use_states = predecessor_states is not None and successor_states is not None
    k = knowledge_at(predecessor, cut_event, states=predecessor_states if use_states else None, roots=roots)
    if start == "checkpoint":
        c = k.contents.copy(successor_states if use_states else None)
    else:
        c = _Contents(states=successor_states if use_states else None)
    answers = _observations(successor.events)
    top = _roots(successor, roots)
    labels: list[LabelledAction] = []
    unrecognised: list[str] = []
    first_new = first_edit = None
    for ev in successor.events:
        if ev.kind != "action":
            continue
        fx = event_effects(ev, answers.get(ev.index), top, successor.working_dir)
        label, repeats = _label(fx, ev, k, c)
        before = c.state()
        c.advance(ev, fx, _signature(ev))
        if use_states and fx.edits and "*" not in fx.edits:
            unchanged = c.state() == before
            recreates = all(c.key(p) == ("state", k.contents.current.get(p)) for p in fx.edits)
            if unchanged or recreates:
                label = "redo_edit"
        unrecognised.extend(fx.unrecognised)
        labels.append(LabelledAction(ev.index, label, repeats if label != "new" else None, fx.kind))
        if first_new is None and label == "new" and (fx.kind != "other" or fx.unrecognised):
            first_new = ev.index
        if first_edit is None and fx.edits:
            first_edit = ev.index
    return Rediscovery(cut_event, _figures(successor, labels, first_new, first_edit), labels, unrecognised)


def _figures(run: Trajectory, labels: list[LabelledAction], first_new: int | None,
             first_edit: int | None) -> RediscoveryFigures:
    found = {a.event for a in labels if a.label in REDISCOVERY_LABELS}
    answered = sum(1 for e in run.events if e.kind == "observation" and e.cause in found)
    label_of = {a.event: a.label for a in labels}
    events_by_label = dict.fromkeys(LABELS, 0)
    for e in run.events:
        owner = e.index if e.kind == "action" else e.cause
        events_by_label[label_of.get(owner, "new") if owner is not None else "new"] += 1
    by_label = {name: sum(1 for a in labels if a.label == name) for name in LABELS}
    per_call: dict[int, list[bool]] = {}
    for a in labels:
        call = run.events[a.event].llm_call
        if call is not None:
            per_call.setdefault(call, []).append(a.event in found)
    tokens = None
    if run.usage_reported:
        usage = {c.index: c.usage.prompt_tokens for c in run.llm_calls if c.usage}
        tokens = round(sum(usage.get(call, 0) * sum(flags) / len(flags) for call, flags in per_call.items()))
    events = len(run.events)
    rediscovery_events = len(found) + answered
    return RediscoveryFigures(
        actions=len(labels), rediscovery_actions=len(found), by_label=by_label, agent_events=events,
        rediscovery_events=rediscovery_events,
        rediscovery_share=round(rediscovery_events / events, 4) if events else None,
        prompt_tokens=run.prompt_tokens if run.usage_reported else None, rediscovery_prompt_tokens=tokens,
        events_until_first_new=first_new, events_until_first_edit=first_edit, events_by_label=events_by_label,
    )


def event_derived_states(trajectory: Trajectory, roots: Sequence[str] = ()) -> list[dict[str, str]]:
    """The state after every event as the events determine it: ``{path: key}`` for each file an edit
    reached, the key a text naming the edits applied to it (not a diff). Enough to tell which files changed
    at which event (the detection rules of docs/protocol.md section 4 read nothing else) where a run has no
    exact states; never a checkpoint's content."""
    c = _Contents()
    answers = _observations(trajectory.events)
    top = _roots(trajectory, roots)
    out: list[dict[str, str]] = []
    for ev in trajectory.events:
        fx = event_effects(ev, answers.get(ev.index), top, trajectory.working_dir)
        c.advance(ev, fx, _signature(ev))
        out.append({p: f"{len(k)} edits {hashlib.sha1(repr((c.epoch, k)).encode()).hexdigest()[:12]}"
                    for p, k in c.keys.items() if k})
    return out
