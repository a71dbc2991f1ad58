"""Replay of imported runs in a fresh workspace (docs/protocol.md section 5 source (c)).

A run from another agent rarely records the repository state after each event. Replay rebuilds it: in a fresh
checkout of the task's starting state (``base_commit`` plus the edits of the task environment's own setup,
:mod:`takeover.repository_states.starting_state`), the recorded actions are re-executed in order and a
snapshot (:func:`takeover.repository_states.snapshots.take_snapshot`) is taken after every event that ran a
command or an edit. The replay is accepted only if the final state reproduces the run's own final patch under
one of the rules of docs/protocol.md section 5.4 (:mod:`takeover.repository_states.replay_verification`);
otherwise the run is unreplayable and its points do not qualify.

How actions are re-executed:

- File-editor actions (OpenHands ``str_replace_editor``/``edit``: ``create``, ``str_replace``,
  ``insert``, ``undo_edit``; SWE-agent ``create``/``open``/``edit N:M ... end_of_edit``, its windowed
  ``edit``/``insert`` and ``str_replace_editor`` command lines; Claude Code's edits) are applied exactly in
  Python with the recording tool's rules, never through a shell, and an action the recorded answer shows
  refused or failed changes nothing; OpenHands IPython cells calling its file-editing agent skills are
  replayed the same way, and any other cell makes the run unreplayable (:mod:`takeover.repository_states.editors`).
- Actions the recording tool did not carry out (a command the person rejected, one the shell refused to
  start) and input to a running process (OpenHands ``is_input``, ``C-c``) are not run
  (docs/protocol.md section 5.6).
- Shell commands run with ``bash -c`` in a new process group, with a per-command time limit (the whole
  group is killed) and a memory limit (address-space limit plus a resident-memory watchdog).
- Paths. The agent ran in its own repository root (``Trajectory.working_dir``, e.g. ``/testbed``).
  Decision: when bubblewrap is available and that root can be created inside the sandbox (its top-level
  folder does not exist on this machine, e.g. ``/testbed`` or ``/workspace/x``), the workspace is
  mounted *at the recorded root* and commands run unchanged (mode ``bind``). Otherwise every mention of
  the root in a command is rewritten to the workspace path (mode ``rewrite``), and the output says so.
  In both modes the sandbox (when available) has no network, a read-only file system except the
  workspace and a private ``/tmp`` that persists between the commands of one replay (agents write
  scratch files there), so nothing a replayed command does can modify the mirror.
- The sandbox is bubblewrap with a tmpfs root holding read-only binds of this machine's top-level
  folders (so that ``/testbed`` can be created), plus the mirror's object folders read-only (a
  ``git clone --shared`` workspace reads them even when the mirror lives under ``/tmp``). It follows
  :mod:`takeover._util.sandbox`'s policy and is built by ``sandbox.wrap(..., mount_at=root)``, the same
  implementation agent runs use to mount their workspace at ``/testbed``.
- Which files count. States cover every non-ignored file, untracked ones included (the set ``git add -A``
  stages), minus new files of generated output (docs/protocol.md section 3.3: ``_build/``, ``build/``,
  ``*.egg-info/``, compiled files), which differ from build to build and would make states depend on the
  replay. Scratch files the agent left behind (``reproduce.py``, ``patch.txt``) stay: they are non-source
  artifacts (section 3), never create a handoff point, but are part of the checkpoint, as they were in the
  predecessor's repository.
- Commands that the recorded run itself saw time out (the reader's ``timed_out`` mark, or a known timeout
  sentence) get at most :data:`RECORDED_TIMEOUT_LIMIT` seconds and are allowed to time out again, unless
  the recorded run waited for them to finish (:func:`recorded_timeout`); any other command killed at its
  time or memory limit makes the run unreplayable with that reason.
- The recording machine's programs, not ours: a command whose recorded output says a program was not
  found (exit code 127) runs with that program missing here too, and the verdict says so. A command that
  failed in the recorded run (a positive exit code) but succeeds here and changes files makes the run
  unreplayable: those changes may be ones the recorded run never made.
- The submission command of mini-swe-agent (``git add -A && git diff --cached``) only stages files in
  the workspace's own index; snapshots use a private index, so later snapshots are unaffected.

The replay uses the task's environment when the caller passes its variables
(``takeover.environments.PreparedEnvironment.env_vars()``); otherwise commands run with the plain
interpreter on ``PATH`` and the verdict says so.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from takeover._util import sandbox
from takeover._util.processes import run_process
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.editors import (
    EditOutcome,
    FileEditor,
    apply_edit,
    displayed_window,
    editor_command,
    replay_cell,
    swe_agent_command,
)
from takeover.repository_states.recorded_writes import proven_writes
from takeover.repository_states.replay_verification import (
    VerificationRule,
    check_submission,
    commit_hint,
    last_write,
    printed_file,
)
from takeover.repository_states.snapshots import (
    EMPTY_TREE,
    join_diffs,
    snapshot_diff,
    take_snapshot,
    without_generated,
)
from takeover.repository_states.starting_state import RecordedForm, StartingState
from takeover.sources.repos import alternates
from takeover.trajectories.events import Event, Trajectory
from takeover.trajectories.registry import replay_needs

# Seconds for a command the recorded run itself saw time out (mini-swe-agent's default limit): it is
# expected to hang again, so it is not given the full limit.
RECORDED_TIMEOUT_LIMIT = 60.0
OUTPUT_LIMIT = 200_000  # characters of command output kept per step

_RECORDED_TIMEOUT = re.compile(r"timed out and has been killed|timed out after|command timed out|TimeoutError|exit code 124|\[Command timed out", re.IGNORECASE)
# bash's words for a program it cannot find: ``bash: ed: command not found``, ``bash: line 1: ed: command not
# found``, ``/bin/sh: 1: ed: not found``.
_NOT_FOUND = re.compile(r"(?m)(?:^|: )([A-Za-z0-9_][A-Za-z0-9_.+-]*): (?:command )?not found\s*$")


class ReplayVerdict(BaseModel):
    """Whether a run's per-event repository states are exact (docs/protocol.md section 5).

    Attributes:
        verified: true when the states can be used for checkpoints.
        method: ``recorded_snapshot`` (our runner's snapshots), ``stored_diff`` (per-step diffs in the
            trajectory), ``verified_replay`` (replay reproduced the final patch) or ``replay`` (a replay
            that did not verify).
        rule: the rule of docs/protocol.md section 5.4 that verified a replay: ``whole_tree`` or
            ``submitted_files``.
        first_mismatch: first file (sorted) where the final state differs from the run's final patch;
            for stored sources this check is informational only.
        reason: why the run is unreplayable (or a note when verified), one sentence.
        environment_files: files the task environment's setup changed before the agent started
            (docs/protocol.md section 5.2): part of the starting state, never of a point's diff.
        environment: how the recording image kept those edits: ``committed`` or ``working_tree``.
        notes: what the replay did other than run every action as recorded, and what it left out of the
            comparison (programs missing where the run was recorded, generated output), one line each.
        sandbox: the sandbox sentence (whether commands were confined), for replays.
        mode: ``bind`` (workspace mounted at the recorded root) or ``rewrite`` (paths rewritten), for replays.
        interpreter: which interpreter replayed commands used (task environment or plain ``PATH``).
    """

    verified: bool
    method: str
    rule: VerificationRule | None = None
    first_mismatch: str | None = None
    reason: str | None = None
    environment_files: list[str] = Field(default_factory=list)
    environment: RecordedForm | None = None
    notes: list[str] = Field(default_factory=list)
    sandbox: str | None = None
    mode: str | None = None
    interpreter: str | None = None


class ReplayStep(BaseModel):
    """What happened when one event was replayed (not part of the deterministic JSON)."""

    index: int
    action: str  # "command", "edit", "noop", "skipped"
    detail: str = ""
    exit_code: int | None = None
    killed: str | None = None  # "timeout" / "memory" when the command was killed
    seconds: float = 0.0
    output: str = ""
    missing: list[str] = Field(default_factory=list)  # programs replayed as missing (absent where recorded)


class ReplayResult(BaseModel):
    """States after every event: ``trees[i]`` (snapshot tree id), ``diffs[i]`` ({path: diff against the
    starting state}), ``unrecorded[i]`` (files the record does not determine there, :mod:`.unrecorded_output`);
    ``start``: that starting state, when determined (docs/protocol.md section 5.2); ``base_top_level``: the
    names of ``base_commit``'s top-level files and folders (section 3.2; ``None``: no copy of the repository)."""

    trees: list[str] = Field(default_factory=list)
    diffs: list[dict[str, str]] = Field(default_factory=list)
    unrecorded: list[list[str]] = Field(default_factory=list)
    steps: list[ReplayStep] = Field(default_factory=list)
    verdict: ReplayVerdict
    start: StartingState | None = None
    base_top_level: list[str] | None = None

    @property
    def final_patch(self) -> str:
        """The replayed final state as one patch (against the starting state)."""
        return join_diffs(self.diffs[-1]) if self.diffs else ""


# --- the replay loop ---------------------------------------------------------------------------------


def _observation_after(events: Sequence[Event], index: int) -> Event | None:
    """The recorded observation of the action at ``index``: the later observation whose ``cause`` is it
    (parallel tool calls answer several actions of one turn after all of them), else, for formats that
    record no cause, the observation right after it."""
    for ev in events[index + 1 :]:
        if ev.kind == "observation" and ev.cause == index:
            return ev
    for ev in events[index + 1 :]:
        if ev.kind == "observation" and ev.cause is None:
            return ev
        if ev.kind == "action":
            return None
    return None


def _base_env(extra: dict[str, str] | None, home: str) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "PYENV_ROOT", "PYENV_VERSION")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"HOME": home, "PAGER": "cat", "MANPAGER": "cat", "LESS": "-R", "PIP_PROGRESS_BAR": "off",
                "TQDM_DISABLE": "1", "PIP_NO_INPUT": "1", "PYTHONDONTWRITEBYTECODE": "1", "GIT_PAGER": "cat"})
    if extra:
        env.update(extra)
    return env


def replay_trajectory(
    trajectory: Trajectory,
    workspace: Path | str,
    base_commit: str,
    *,
    start: StartingState | None = None,
    form: RecordedForm = "committed",
    env_vars: dict[str, str] | None = None,
    readable: Sequence[Path] = (),
    interpreter_note: str | None = None,
    replay: ReplaySettings | None = None,
    progress: Callable[[ReplayStep], None] | None = None,
) -> ReplayResult:
    """Re-execute ``trajectory``'s actions in ``workspace`` (a checkout of the task's starting state).

    Args:
        trajectory: the imported run; ``working_dir`` is the agent's repository root.
        workspace: checkout of ``base_commit`` (made with ``RepoSource.workspace``), already put into the
            starting state (:func:`takeover.repository_states.starting_state.apply_starting_state`); modified.
        base_commit: the task's commit.
        start: the starting state (docs/protocol.md section 5.2): per-event diffs are taken against its tree,
            so the environment's own edits are never the agent's. ``None``: against ``base_commit``.
        form: how the recording image kept the environment's edits; the run's submission is compared with
            the final state taken against ``base_commit`` (``working_tree``) or the starting state
            (``committed``).
        env_vars: variables of the task's environment, e.g. ``PATH`` with its interpreter.
        readable: folders of that environment the sandbox must show again (its private ``/tmp`` hides them).
        interpreter_note: how to describe that environment in the verdict.
        replay: the per-command limits and the sandbox (:class:`takeover.replay_settings.ReplaySettings`;
            default: its defaults): ``timeout`` seconds per command (a command the recorded run saw time out
            gets at most :data:`RECORDED_TIMEOUT_LIMIT`), ``memory_mb`` MiB, ``use_sandbox`` (bubblewrap when
            available; the verdict says when not). Its ``use_environment`` is the caller's, which passes
            ``env_vars`` or not.
        progress: called after each replayed event.

    Returns:
        :class:`ReplayResult` with one tree and one per-file diff map per event (generated output left out,
        docs/protocol.md section 3.3), and the verdict: verified only if the final state reproduces
        ``trajectory.final_patch`` under one of the rules of section 5.4 (no final patch: unreplayable).
    """
    replay = replay or ReplaySettings()
    timeout, memory_mb = replay.timeout, replay.memory_mb
    workspace = Path(workspace).resolve()
    events = trajectory.events
    root = (trajectory.working_dir or "").rstrip("/") or None
    st = sandbox.status() if replay.use_sandbox else sandbox.SandboxStatus(available=False, tool=None, message="sandbox off: commands run unconfined")
    mode = "bind" if st.available and root and sandbox.can_mount_at(root) else "rewrite"
    host = None if env_vars else sandbox.host_python()  # by its real folder: the sandbox hides a shim in HOME
    env_vars, readable = ({"PATH": host.path()}, [*readable, *host.readable]) if host else (env_vars, readable)
    interp = interpreter_note or ("task environment" if host is None and env_vars else
                                  f"plain interpreter on PATH ({host.bin_dir if host else 'python3 not found'}); no task environment")
    with_environment = start is not None and bool(start.diffs)
    verdict_base = {
        "sandbox": st.message, "mode": mode, "interpreter": interp,
        "environment_files": start.files if with_environment else [],
        "environment": form if with_environment else None,
    }
    diff_base = start.tree if with_environment else base_commit
    editor = FileEditor(workspace, root)
    trees: list[str] = []
    diffs: list[dict[str, str]] = []
    steps: list[ReplayStep] = []
    failure: str | None = None
    notes: list[str] = []

    with tempfile.TemporaryDirectory(prefix="takeover-replay-") as scratch:
        tmp_dir, home = Path(scratch) / "tmp", Path(scratch) / "home"
        tmp_dir.mkdir()
        home.mkdir()
        env = _base_env(env_vars, "/tmp" if st.available else str(home))
        prev_tree: str | None = None
        prev_diff: dict[str, str] = {}
        for i, ev in enumerate(events):
            step = ReplayStep(index=i, action="noop")
            if failure is None and ev.kind == "action" and not ev.format_error:
                step = _replay_action(ev, i, events, trajectory, workspace, root, mode, st, editor, env, tmp_dir,
                                      timeout, memory_mb, [*alternates(workspace), *readable])
                if step.action == "unreplayable":
                    failure = f"event {i} cannot be replayed exactly: {step.detail}"
                if step.killed and (step.killed == "memory" or not recorded_timeout(events, i)):
                    limit = f"{timeout:g} s time limit" if step.killed == "timeout" else f"{memory_mb} MiB memory limit"
                    failure = f"command at event {i} was killed at the {limit}: {(ev.command or '')[:120]!r}"
                if step.missing:
                    notes.append(f"event {i}: {', '.join(step.missing)} was not found where the run was recorded "
                                 "(exit 127); replayed as missing")
            if step.action in ("command", "edit") or prev_tree is None:
                tree = take_snapshot(workspace)
            else:
                tree = prev_tree
            if tree != prev_tree:
                diff = without_generated(snapshot_diff(workspace, diff_base, tree))[0] if tree != EMPTY_TREE else {}
                if failure is None:
                    failure = _unreproduced_exit(step, events, prev_diff, diff, root, notes)
                prev_diff = diff
                prev_tree = tree
            trees.append(tree)
            diffs.append(prev_diff)
            steps.append(step)
            if progress:
                progress(step)

    if failure:
        verdict = ReplayVerdict(verified=False, method="replay", reason=failure, notes=notes, **verdict_base)
    elif trajectory.final_patch is None:
        why = "the run records no final patch to verify against" + (
            f" (it ended with exit status {trajectory.exit_status})" if trajectory.exit_status else "")
        verdict = ReplayVerdict(verified=False, method="replay", reason=why, notes=notes, **verdict_base)
    else:
        final_base = base_commit if with_environment and form == "working_tree" else diff_base
        final = snapshot_diff(workspace, final_base, trees[-1]) if trees else {}
        submit = next((s for s in reversed(steps) if s.action == "command" and events[s.index].type == "finish"), None)
        written = last_write(diffs, printed_file(events[submit.index].command or "", root), submit.index) if submit else None
        check = check_submission(final, trajectory.final_patch, submit_output=submit.output if submit else None,
                                 submit_event=submit.index if submit else None, written_event=written,
                                 written=snapshot_diff(workspace, final_base, trees[written]) if written is not None else None)
        ran = {s.index: events[s.index].command or "" for s in steps if s.action == "command" and s.exit_code == 0}
        reason = check.reason if check.verified else f"{check.reason}{commit_hint(ran)}"
        verdict = ReplayVerdict(
            verified=check.verified, method="verified_replay" if check.verified else "replay", rule=check.rule,
            first_mismatch=check.first_mismatch, reason=reason, notes=notes + check.notes, **verdict_base,
        )
    return ReplayResult(trees=trees, diffs=diffs, steps=steps, verdict=verdict, start=start)


def _unreproduced_exit(step: ReplayStep, events: Sequence[Event], before: dict[str, str],
                       after: dict[str, str], root: str | None, notes: list[str]) -> str | None:
    """Why a command that changed files cannot stand (docs/protocol.md section 5.3): it failed in the recorded
    run (a positive exit code there) but succeeded here, so the changes it made here may be ones the recorded
    run never made. ``None`` when the command did not change files or its outcome was reproduced. A negative
    recorded code is no failure: harnesses write -1 for a command they stopped waiting for (a soft timeout),
    and neither is a recorded timeout (:func:`recorded_timeout`).

    Extension: changes the recorded output proves stand (:func:`takeover.repository_states.recorded_writes.
    proven_writes`: a here-document's target whose lines the recorded traceback or test report names); the
    command is accepted when every file it changed is such a write, and ``notes`` says so."""
    obs = _observation_after(events, step.index)
    if (step.action != "command" or step.exit_code != 0 or obs is None or obs.exit_code is None
            or obs.exit_code <= 0 or recorded_timeout(events, step.index)):
        return None
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    if not changed:
        return None
    proven = proven_writes(events[step.index].command or "", obs.text or "", changed, root)
    unproven = [p for p in changed if p not in proven]
    if not unproven:
        notes.append(f"event {step.index}: exited {obs.exit_code} in the recorded run and 0 in the replay; its "
                     f"here-document wrote {', '.join(proven)}, which the recorded output names: kept")
        return None
    shown = ", ".join(unproven[:3]) + (f" and {len(unproven) - 3} more" if len(unproven) > 3 else "")
    return (f"command at event {step.index} exited 0 in the replay but {obs.exit_code} in the recorded run, and changed "
            f"{shown}: the recorded run may not have made these changes")


def missing_programs(obs: Event | None) -> list[str]:
    """Programs the recorded run could not find (``bash: ed: command not found``, exit code 127 or none
    recorded), sorted; a replay runs the command with them missing too (docs/protocol.md section 5.3)."""
    if obs is None or obs.exit_code not in (None, 127):
        return []
    found = _NOT_FOUND.findall(obs.text or "")
    if obs.exit_code is None:  # no exit code to confirm it: only bash's own sentence counts
        found = [p for p in found if f"{p}: command not found" in (obs.text or "")]
    return sorted(set(found))


def _as_missing(command: str, programs: list[str]) -> str:
    """``command`` run by bash with ``programs`` answering as bash does for a program it cannot find
    (shell functions come before ``PATH``, and exported ones reach child shells)."""
    stubs = "".join(
        f"{p}() {{ echo \"bash: {p}: command not found\" >&2; return 127; }}; export -f {p}; " for p in programs
    )
    return stubs + "\n" + command


# --- actions that are not shell commands, and recorded timeouts (docs/protocol.md section 5.6) --------


def _edited(i: int, outcome: EditOutcome) -> ReplayStep:
    action, detail = outcome
    return ReplayStep(index=i, action=action, detail=detail)


def _shown_window(events: Sequence[Event], index: int) -> tuple[int, int] | None:
    """The file window SWE-agent showed last before event ``index`` (its windowed edits work inside it)."""
    for ev in reversed(events[:index]):
        if ev.kind == "observation" and (window := displayed_window(ev.text or "")) is not None:
            return window
    return None


def _finished_later(events: Sequence[Event], index: int) -> bool:
    """Whether the recorded run waited for the timed-out command at ``index`` until it ended: OpenHands
    leaves a command running after its soft limit, and an empty process input waits for it; the answer
    that carries an exit code (not -1) means it finished. Keys or text sent to it first mean it did not."""
    for ev in events[index + 1 :]:
        if ev.kind != "action":
            continue
        if not ev.process_input or (ev.command or "").strip():
            return False
        obs = _observation_after(events, ev.index)
        if obs is None or (not obs.timed_out and (obs.exit_code is None or obs.exit_code < 0)):
            return False
        if not obs.timed_out:
            return True
    return False


def recorded_timeout(events: Sequence[Event], index: int) -> bool:
    """Whether the recorded run saw the command at ``index`` hit its time limit without finishing it: its
    observation is marked ``timed_out`` by the reader or matches a known timeout sentence, and the run did
    not wait for it to end (:func:`_finished_later`). Such a command gets at most
    :data:`RECORDED_TIMEOUT_LIMIT` seconds and may time out again."""
    obs = _observation_after(events, index)
    if obs is None or not (obs.timed_out or _RECORDED_TIMEOUT.search(obs.text or "")):
        return False
    return not _finished_later(events, index)


def _not_a_shell_command(ev: Event, i: int, events: Sequence[Event], trajectory: Trajectory,
                         editor: FileEditor) -> ReplayStep | None:
    """The step for an action that is not run with ``bash -c``: one the recording tool did not carry out,
    input to a running process, an IPython cell, an editor action or one of SWE-agent's own commands;
    ``None`` for a shell command."""
    obs = _observation_after(events, i)
    needs = replay_needs(trajectory.format)  # the recording tool's editor, window and commands
    if ev.not_applied:
        return ReplayStep(index=i, action="noop", detail="not carried out in the recorded run")
    if ev.type == "file_edit" and (ev.edit or ev.file_text is not None or ev.old_text is not None):
        window = _shown_window(events, i) if needs.edit_window else None
        return _edited(i, apply_edit(ev, obs, editor, flavor=needs.editor_flavor, window=window))
    # mini-swe-agent's submission is a ``finish`` action that still runs a command (``git add -A && git
    # diff --cached``): it is executed too; it only stages files in the workspace's own index.
    if ev.type not in ("command", "finish") or not ev.command:
        return ReplayStep(index=i, action="noop", detail=ev.type)
    if ev.process_input:
        return ReplayStep(index=i, action="noop", detail=f"input to a running process, not a command: {ev.command[:80]!r}")
    if ev.ipython:
        return _edited(i, replay_cell(ev.command, obs.text if obs is not None else "", ev.cwd, editor))
    if needs.tool_commands:
        outcome = swe_agent_command(ev.command, ev, obs, editor)
        if outcome is not None:
            return _edited(i, outcome)
    edit = editor_command(ev.command, i)
    if edit is not None:
        return _edited(i, apply_edit(edit, obs, editor, flavor=needs.editor_flavor))
    return None


# --- shell commands ------------------------------------------------------------------------------------


def _replay_action(
    ev: Event, i: int, events: Sequence[Event], trajectory: Trajectory, workspace: Path, root: str | None,
    mode: str, st: sandbox.SandboxStatus, editor: FileEditor, env: dict[str, str], tmp_dir: Path,
    timeout: float, memory_mb: int, readable: list[Path],
) -> ReplayStep:
    step = _not_a_shell_command(ev, i, events, trajectory, editor)
    if step is not None:
        return step
    assert ev.command is not None
    command = ev.command

    missing = missing_programs(_observation_after(events, i))
    if missing:
        command = _as_missing(command, missing)
    cwd_rec = (ev.cwd or root or "").rstrip("/") or None
    if mode == "bind":
        inner_cwd = cwd_rec if cwd_rec and editor.resolve(cwd_rec) is not None else root
        mapped = editor.resolve(inner_cwd) if inner_cwd else workspace
        if mapped is None or not mapped.is_dir():
            inner_cwd = root
        argv = sandbox.wrap(["bash", "-c", command], workspace, cwd=inner_cwd, tmp=tmp_dir,
                            readable=readable, mount_at=root, tool=st.tool)
        run_cwd = workspace
    else:
        if root:
            command = re.sub(re.escape(root) + r"(?=/|\b|$)", str(workspace).replace("\\", "\\\\"), command)
        mapped = editor.resolve(cwd_rec) if cwd_rec else workspace
        run_cwd = mapped if mapped is not None and mapped.is_dir() else workspace
        if st.available:
            argv = sandbox.wrap(["bash", "-c", command], workspace, cwd=str(run_cwd), tmp=tmp_dir,
                                readable=readable, mount_at=None, tool=st.tool)
        else:
            argv = ["bash", "-c", command]
    if recorded_timeout(events, i):
        timeout = min(timeout, RECORDED_TIMEOUT_LIMIT)
    done = run_process(argv, cwd=run_cwd, env=env, timeout=timeout, memory_mb=memory_mb, output_limit=OUTPUT_LIMIT)
    code, output, killed, seconds = done.exit_code, done.output, done.killed, done.seconds
    return ReplayStep(index=i, action="command", detail=ev.command[:200], exit_code=code, killed=killed,
                      seconds=round(seconds, 3), output=output, missing=missing)
