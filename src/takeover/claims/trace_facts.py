"""What the predecessor did up to the cut, in the terms a note's claims are checked by (docs/protocol.md
section 7.6, Extension): the files it read (with lines), wrote and ran, the commands it ran with their
results, the results of single tests, the text it saw and wrote, and the files the checkpoint changes.

The effects of each action are those of rediscovery (:func:`takeover.rediscovery.event_effects`, the shell
grammar of :mod:`takeover.commands`); results are section 4.2's (:func:`takeover.points.verification.
verification_result`), read from every command's observation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from takeover._util.patches import patch_files, split_patch
from takeover.commands import is_verification_command, repo_path, searches, segments
from takeover.commands.runners import python_script
from takeover.points.verification import verification_result
from takeover.rediscovery import event_effects
from takeover.trajectories.events import Event, Trajectory, answers_by_action

#: Folders that stand for the repository's top folder in SWE-bench runs, tried after the run's own.
DEFAULT_ROOTS = ("/testbed",)
_MISSING = re.compile(r"No such file or directory|does not exist|cannot open|can't open|not found", re.IGNORECASE)
_GREP_HIT = re.compile(r"^(?:(?P<path>[^\s:]+\.\w+):)?(?P<line>\d+)[:-]", re.MULTILINE)
_PYTEST_RESULT = re.compile(r"^(?P<id>\S+::\S+)\s+(?P<status>PASSED|FAILED|ERROR)\b|"
                            r"^(?P<status2>PASSED|FAILED|ERROR)\s+(?P<id2>\S+::[^\s-]+)", re.MULTILINE)
_UNITTEST_RESULT = re.compile(r"^(?P<name>test\w*)\s+\((?P<cls>[\w.]+)\)(?:\s+\.\.\.)?\s+(?P<status>ok|FAIL|ERROR)\b|"
                              r"^(?P<status2>FAIL|ERROR):\s+(?P<name2>test\w*)\s+\((?P<cls2>[\w.]+)\)", re.MULTILINE)
_STATUS = {"PASSED": "passed", "ok": "passed", "FAILED": "failed", "FAIL": "failed", "ERROR": "failed"}


@dataclass(frozen=True)
class CommandRun:
    """One command the predecessor ran: its action ``event``, the observation that answers it
    (``observation``, ``None`` when none was recorded), the command, whether it is a verification command
    (docs/protocol.md section 4.1), its result read from the observation (section 4.2: ``passed``,
    ``failed``, ``unknown``; ``None`` without an observation) and the results of single tests the output
    reports (pytest's and unittest's per-test lines: ``{test id: passed/failed}``)."""

    event: int
    observation: int | None
    command: str
    verification: bool
    result: str | None
    tests: dict[str, str] = field(default_factory=dict)

    @property
    def at(self) -> int:
        """The event that shows the result (the observation, else the action)."""
        return self.observation if self.observation is not None else self.event


@dataclass
class TraceFacts:
    """The predecessor's record at the cut (events ``0..cut_event``).

    Attributes:
        reads: path -> ``(start, end, event)`` line ranges it printed (``end`` ``None``: to the end; a negative
            start: the last lines), including the lines a numbered search showed and files it wrote whole.
        failed_reads: path -> the event whose output said the file is not there.
        edits: path -> events that changed it (``*``: a command that may change any file).
        written: path -> the first event that wrote the whole file or created it (an editor ``create``, a
            here-document, a redirection, ``touch``...).
        ran: path -> events that ran the file as a script.
        runs: every command with its result (:class:`CommandRun`).
        texts: ``(event, text)`` of what the predecessor wrote (commands, editor arguments) and saw (outputs).
        outputs: ``(event, text)`` of the observations alone.
        changed: the files the checkpoint patch changes (``None`` when the patch is not known); ``created``:
            those it adds.
        task: the task's problem statement.
    """

    cut_event: int
    reads: dict[str, list[tuple[int, int | None, int]]] = field(default_factory=dict)
    failed_reads: dict[str, int] = field(default_factory=dict)
    edits: dict[str, list[int]] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)
    ran: dict[str, list[int]] = field(default_factory=dict)
    runs: list[CommandRun] = field(default_factory=list)
    texts: list[tuple[int, str]] = field(default_factory=list)
    outputs: list[tuple[int, str]] = field(default_factory=list)
    changed: set[str] | None = None
    created: set[str] = field(default_factory=set)
    task: str = ""

    @property
    def edit_events(self) -> list[int]:
        """Every event that changed a file, in order."""
        return sorted({e for events in self.edits.values() for e in events})

    def latest_edit(self) -> int | None:
        """The last event up to the cut that changed a file (``None``: none did)."""
        events = self.edit_events
        return events[-1] if events else None

    def paths(self) -> set[str]:
        """Every repository path the record names (read, failed to read, edited, run, changed)."""
        out = set(self.reads) | set(self.failed_reads) | set(self.edits) | set(self.ran) | (self.changed or set())
        out.discard("*")
        return out


def _answer(events: Sequence[Event], index: int, answers: dict[int, Event]) -> Event | None:
    """The observation that answers action ``index``: the one naming it, else the next event when it is an
    observation without a cause."""
    if index in answers:
        return answers[index]
    nxt = events[index + 1] if index + 1 < len(events) else None
    return nxt if nxt is not None and nxt.kind == "observation" and nxt.cause is None else None


def test_results(output: str) -> dict[str, str]:
    """Results of single tests in a runner's output: pytest's ``path::test PASSED`` and ``FAILED path::test``,
    unittest's ``test_x (mod.Class) ... ok`` and ``FAIL: test_x (mod.Class)``; ids as printed (unittest's as
    ``mod.Class.test_x``). A test reported twice keeps its last result."""
    found: dict[str, str] = {}
    for m in _PYTEST_RESULT.finditer(output):
        found[m["id"] or m["id2"]] = _STATUS[m["status"] or m["status2"]]
    for m in _UNITTEST_RESULT.finditer(output):
        name, cls = (m["name"], m["cls"]) if m["name"] else (m["name2"], m["cls2"])
        found[f"{cls}.{name}"] = _STATUS[m["status"] or m["status2"]]
    return found


test_results.__test__ = False  # a helper, not a pytest test


def _editor_texts(ev: Event) -> list[str]:
    return [v for v in (ev.command, ev.path, ev.old_text, ev.new_text, ev.file_text) if v]


def _grep_hits(command: str, output: str, roots: Sequence[str], cwd: str | None) -> list[tuple[str, int]]:
    """``(path, line)`` of the lines a numbered content search printed: ``path:N:`` lines, or ``N:`` lines of a
    search over one file."""
    found = searches(command)
    single = [s for s in found if s.kind == "content" and len([p for p in s.scope if not p.startswith("filter:")]) == 1]
    one_file = single[0].scope[0] if len(found) == 1 and single and "." in single[0].scope[0].rsplit("/", 1)[-1] \
        else None
    hits = []
    for m in _GREP_HIT.finditer(output):
        path = m["path"] or one_file
        if path:
            hits.append((path, int(m["line"])))
    return hits


def _ran_scripts(command: str) -> list[str]:
    """Scripts a command runs: ``python x.py``, ``./x.sh``, ``bash x.sh``."""
    out = []
    for seg in segments(command):
        script = python_script(seg.words) if seg.program and seg.program.startswith("python") else None
        if script:
            out.append(script)
        elif seg.program in ("bash", "sh") and seg.args and not seg.args[0].startswith("-"):
            out.append(seg.args[0])
        elif seg.words and seg.words[0].startswith("./"):
            out.append(seg.words[0])
    return out


def trace_facts(trajectory: Trajectory, cut_event: int, *, checkpoint_patch: str | None = None,
                problem_statement: str = "", roots: Sequence[str] = ()) -> TraceFacts:
    """The predecessor's record after its event ``cut_event`` (0-based, inclusive).

    Args:
        checkpoint_patch: the cumulative diff at the cut (docs/protocol.md section 5); ``None`` when not
            known (edits are then judged by the events alone).
        problem_statement: the task's text (a file or name it gives is known to the note writer).
        roots: more folders that stand for the repository's top folder.

    Raises:
        ValueError: ``cut_event`` is not an event of the run.
    """
    events = trajectory.events
    if not 0 <= cut_event < len(events):
        raise ValueError(f"event {cut_event} is not an event of the run (it has {len(events)})")
    top = [r for r in (trajectory.working_dir, *roots, *DEFAULT_ROOTS) if r]
    facts = TraceFacts(cut_event=cut_event, task=problem_statement or "")
    if checkpoint_patch is not None:
        facts.changed = set(patch_files(checkpoint_patch))
        facts.created = {p for p, part in split_patch(checkpoint_patch).items() if "\nnew file mode" in part}
    answers = answers_by_action(events)
    for ev in events[: cut_event + 1]:
        if ev.kind == "observation":
            if ev.text:
                facts.texts.append((ev.index, ev.text))
                facts.outputs.append((ev.index, ev.text))
            continue
        texts = _editor_texts(ev)
        if texts:
            facts.texts.append((ev.index, "\n".join(texts)))
        answer = _answer(events, ev.index, answers)
        answer = answer if answer is not None and answer.index <= cut_event else None
        fx = event_effects(ev, answer, top, trajectory.working_dir)
        output = answer.text if answer is not None else ""
        missing = [line for line in (output or "").splitlines() if _MISSING.search(line)]
        for r in fx.reads:
            if r.path.startswith("git:"):
                continue
            if any(r.path.rsplit("/", 1)[-1] in line for line in missing):
                facts.failed_reads[r.path] = ev.index
            else:
                facts.reads.setdefault(r.path, []).append((r.start, r.end, ev.index))
        for path in fx.writes_whole:
            facts.reads.setdefault(path, []).append((1, None, ev.index))
        for path in [*fx.writes_whole, *fx.created]:
            facts.written.setdefault(path, ev.index)
        for path in fx.edits:
            facts.edits.setdefault(path, []).append(ev.index)
        if ev.type == "command" and ev.command and not ev.process_input and not ev.ipython and not ev.not_applied:
            for path, line in _grep_hits(ev.command, output or "", top, ev.cwd):
                rel = repo_path(path, ev.cwd or trajectory.working_dir, top)
                if rel:
                    facts.reads.setdefault(rel, []).append((line, line, ev.index))
            for script in _ran_scripts(ev.command):
                rel = repo_path(script, ev.cwd or trajectory.working_dir, top)
                if rel:
                    facts.ran.setdefault(rel, []).append(ev.index)
            result = verification_result(output, answer.exit_code) if answer is not None else None
            facts.runs.append(CommandRun(ev.index, answer.index if answer is not None else None, ev.command,
                                         is_verification_command(ev.command), result, test_results(output or "")))
    return facts
