"""Which of a successor's actions rediscover what the predecessor knew at the cut, and the run's figures
(docs/protocol.md section 9.1).

The predecessor's knowledge at the cut (its events ``0..cut_event``): the files it read or wrote whole, with
the content it saw and the lines; the searches it ran over the content of their scope; the verification
commands it ran, and every command it ran, with the state they ran on; the changes its edits made. Each
successor action gets one label: ``reread``, ``research``, ``rerun``, ``redo_edit`` or ``new``; a ``new``
action gets the reason it is new (:data:`REASONS`). Content keys and states are :mod:`.contents`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from takeover.commands import Search
from takeover.commands.repeats import varying_output
from takeover.errors import InputError
from takeover.rediscovery.actions import ActionEffects, Read, command_form, event_effects, script_keys
from takeover.rediscovery.contents import Contents, signature
from takeover.trajectories.events import Event, Trajectory, answers_by_action

Label = Literal["reread", "research", "rerun", "redo_edit", "new"]
#: Every label, rediscovery first (docs/protocol.md section 9.1).
LABELS: tuple[str, ...] = ("reread", "research", "rerun", "redo_edit", "new")
#: The labels that count as rediscovery.
REDISCOVERY_LABELS: tuple[str, ...] = ("reread", "research", "rerun", "redo_edit")
#: Where a successor starts: the checkpoint (a takeover), or the starting state (a run compared with itself).
Start = Literal["checkpoint", "base"]
#: A folder the agents of SWE-bench runs work in, tried after a run's own working folder.
_DEFAULT_ROOTS = ("/testbed",)
#: Why an action is ``new`` (docs/protocol.md section 9.1).
REASONS: dict[str, str] = {
    "message": "it runs, reads and edits nothing (a message, a submission, an action that was not carried out)",
    "edit": "a change the predecessor did not make before the cut",
    "read": "lines or content the predecessor did not see",
    "search": "a search the predecessor did not run over this content",
    "verification": "a verification the predecessor did not run on this state",
    "command": "a command no rule reads whole (a part no rule reads, or no file touched) that the predecessor "
               "did not run on this state",
    "time": "a repeat whose output depends on the time",
    "randomness": "a repeat whose output depends on randomness",
    "network": "a repeat whose output depends on the network",
    "session": "input to a running process or an IPython cell: its output depends on that process",
}


@dataclass(frozen=True)
class LabelledAction:
    """One successor action: its ``event`` index, ``label``, the predecessor event it ``repeats`` (``None`` for
    ``new``), its ``kind`` (``read``, ``search``, ``verification``, ``edit`` or ``other``) and, for ``new``,
    the ``reason`` (a key of :data:`REASONS`)."""

    event: int
    label: str
    repeats: int | None
    kind: str
    reason: str | None = None


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
    (one per successor action) and ``unrecognised``: the command parts no rule reads of the successor's
    actions left ``new``, each with how often it occurs (most frequent first)."""

    cut_event: int
    figures: RediscoveryFigures
    labels: list[LabelledAction]
    unrecognised: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The record ``takeover rediscovery --json`` prints."""
        return {"cut_event": self.cut_event, "figures": asdict(self.figures),
                "labels": [{"event": a.event, "label": a.label, "repeats": a.repeats, "kind": a.kind,
                            "reason": a.reason} for a in self.labels],
                "unrecognised": self.unrecognised}


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
    ``verified`` (normalised command, run state) -> event; ``commands`` (command form, run state) -> event, for
    every shell command; ``changes`` (path, content key after) -> the event whose edit left the file so;
    ``edits`` path -> edit signature -> event; and the content keys at the cut."""

    seen: dict[tuple[str, Any], list[tuple[int, int | None, int, str]]] = field(default_factory=dict)
    searched: dict[tuple[Search, Any], int] = field(default_factory=dict)
    verified: dict[tuple[str, Any], int] = field(default_factory=dict)
    commands: dict[tuple[Any, Any], int] = field(default_factory=dict)
    changes: dict[tuple[str, Any], int] = field(default_factory=dict)
    edits: dict[str, dict[str, int]] = field(default_factory=dict)
    contents: Contents = field(default_factory=Contents)


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
    k = Knowledge(contents=Contents(states=states))
    answers = answers_by_action(trajectory.events)
    top = _roots(trajectory, roots)
    for ev in trajectory.events[: cut_event + 1]:
        fx = event_effects(ev, answers.get(ev.index), top, trajectory.working_dir)
        c = k.contents
        for r in fx.reads:
            key = c.state() if r.path.startswith("git:") else c.key(r.path)
            k.seen.setdefault((r.path, key), []).append((r.start, r.end, ev.index, r.selector))
        for s in fx.searches:
            k.searched[(s, c.scope_key(s.scope, s.kind))] = ev.index
        run = c.run_state()
        for v in fx.verifications:
            k.verified[(v, run)] = ev.index
        form = command_form(ev, top, trajectory.working_dir)
        if form is not None:
            k.commands[(form, run)] = ev.index
        for path in c.advance(ev, fx, signature(ev)):
            k.changes[(path, c.key(path))] = ev.index
        for path in fx.edits:
            k.edits.setdefault(path, {})[signature(ev)] = ev.index
        for path in fx.writes_whole:
            k.seen.setdefault((path, c.key(path)), []).append((1, None, ev.index, ""))
    return k


# --- labelling the successor ---------------------------------------------------------------------------


def _label(fx: ActionEffects, event: Event, k: Knowledge, c: Contents) -> tuple[str, int | None, str | None]:
    """``(label, repeated event, reason)`` of one successor action that edits nothing, by the rules that read
    every effect (``c``: the contents before it)."""
    if event.process_input or event.ipython:
        return "new", None, "session"
    if fx.edits:
        return "new", None, "edit"  # decided by the change it makes (_edit_label)
    if fx.unrecognised or fx.kind == "other":
        ran = event.type == "command" and not (event.not_applied or event.format_error)
        return "new", None, "command" if ran else "message"
    repeats: list[int] = []
    for v in fx.verifications:
        ev = k.verified.get((v, c.run_state()))
        if ev is None:
            return "new", None, "verification"
        repeats.append(ev)
    for r in fx.reads:
        key = c.state() if r.path.startswith("git:") else c.key(r.path)
        ev = _covered(r, k.seen.get((r.path, key), []))
        if ev is None:
            return "new", None, "read"
        repeats.append(ev)
    for s in fx.searches:
        ev = k.searched.get((s, c.scope_key(s.scope, s.kind)))
        if ev is None:
            return "new", None, "search"
        repeats.append(ev)
    label = {"verification": "rerun", "read": "reread", "search": "research"}[fx.kind]
    return label, repeats[0], None


def _edit_label(fx: ActionEffects, event: Event, k: Knowledge, c: Contents, changed: list[str],
                unchanged: bool) -> tuple[str, int | None, str | None]:
    """``redo_edit`` when an action that writes files (``changed``: the paths it changed, ``c``: the contents
    after it) leaves them unchanged, recreates a change of the checkpoint, or leaves every file it changed as
    one of the predecessor's edits before the cut left it."""
    if "*" in fx.edits and c.states is None:
        return "new", None, "edit"
    repeats: list[int | None] = []
    for path in changed:
        ev = k.changes.get((path, c.key(path)))
        if ev is None and not path.startswith("/"):
            ev = _recreates_checkpoint(path, event, k, c)
        if ev is None:
            break
        repeats.append(ev if ev >= 0 else None)
    else:
        if repeats:
            return "redo_edit", repeats[0], None
    same_text = event.type == "file_edit" and event.edit in ("str_replace", "replace_all") and \
        event.old_text == event.new_text
    if same_text or (c.states is not None and unchanged and not changed):
        return "redo_edit", None, None
    return "new", None, "edit"


def _recreates_checkpoint(path: str, event: Event, k: Knowledge, c: Contents) -> int | None:
    """The predecessor's event whose change of ``path`` the checkpoint holds and the successor's edit recreates
    (``-1`` when the checkpoint holds the file's starting content), else ``None``. With states: the file's
    content after the edit is its content at the cut. Without: the edit is the same as the predecessor's last
    edit of the file before the cut (as far as the events tell: an earlier edit may have been undone)."""
    if c.states is not None:
        return -1 if c.key(path) == ("state", k.contents.current.get(path)) else None
    cut_key = k.contents.keys.get(path, ())
    ev = k.edits.get(path, {}).get(signature(event))
    return ev if ev is not None and cut_key and cut_key[-1] == signature(event) else None


def _varies(event: Event, c: Contents, roots: Sequence[str], default_cwd: str | None) -> str | None:
    """What the output of a command depends on besides the files: the time, randomness, the network
    (:func:`takeover.commands.repeats.varying_output`, with the text of the scripts it runs that the runs wrote)."""
    if event.type != "command" or not event.command:
        return None
    scripts = script_keys(event.command, event.cwd or default_cwd, roots)
    return varying_output(event.command, [c.texts[p] for p in scripts if p in c.texts])


def label_successor(predecessor: Trajectory, cut_event: int, successor: Trajectory, *, start: Start = "checkpoint",
                    predecessor_states: Sequence[dict[str, str]] | None = None,
                    successor_states: Sequence[dict[str, str]] | None = None,
                    roots: Sequence[str] = ()) -> Rediscovery:
    """Label every action of ``successor`` against the knowledge of ``predecessor`` at ``cut_event``.

    The rules that read every effect of an action decide first (a read, a search, a verification; an edit by
    the change it makes); an action they cannot read whole (a part no rule reads, or a command that touches
    no file) is ``rerun`` when the predecessor ran the same command (same folder and normal form) on the same
    state before the cut, and ``new`` otherwise. A ``rerun`` whose output depends on the time, randomness or
    the network is ``new`` (docs/protocol.md section 9.1).

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
    states = successor_states if use_states else None
    c = k.contents.resumed(states) if start == "checkpoint" else Contents(states=states)
    answers = answers_by_action(successor.events)
    top = _roots(successor, roots)
    labels: list[LabelledAction] = []
    unrecognised: dict[str, int] = {}
    first_new = first_edit = None
    for ev in successor.events:
        if ev.kind != "action":
            continue
        fx = event_effects(ev, answers.get(ev.index), top, successor.working_dir)
        label, repeats, reason = _label(fx, ev, k, c)
        run, before = c.run_state(), c.state()
        form = command_form(ev, top, successor.working_dir)
        varies = _varies(ev, c, top, successor.working_dir)
        changed = c.advance(ev, fx, signature(ev))
        if fx.edits or changed:
            label, repeats, reason = _edit_label(fx, ev, k, c, changed, c.state() == before)
        elif label == "new" and reason == "command" and form is not None and (form, run) in k.commands:
            label, repeats, reason = "rerun", k.commands[(form, run)], None
        if label == "rerun" and varies:
            label, repeats, reason = "new", None, varies
        if label == "new":
            for part in fx.unrecognised:
                unrecognised[part] = unrecognised.get(part, 0) + 1
        labels.append(LabelledAction(ev.index, label, repeats if label != "new" else None, fx.kind, reason))
        if first_new is None and label == "new" and (fx.kind != "other" or fx.unrecognised):
            first_new = ev.index
        if first_edit is None and fx.edits:
            first_edit = ev.index
    ranked = dict(sorted(unrecognised.items(), key=lambda kv: (-kv[1], kv[0])))
    return Rediscovery(cut_event, _figures(successor, labels, first_new, first_edit), labels, ranked)


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
    c = Contents()
    answers = answers_by_action(trajectory.events)
    top = _roots(trajectory, roots)
    out: list[dict[str, str]] = []
    for ev in trajectory.events:
        fx = event_effects(ev, answers.get(ev.index), top, trajectory.working_dir)
        c.advance(ev, fx, signature(ev))
        out.append({p: f"{len(k)} edits {hashlib.sha1(repr((c.epoch, k)).encode()).hexdigest()[:12]}"
                    for p, k in c.keys.items() if k})
    return out
