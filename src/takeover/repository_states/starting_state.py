"""A task's starting state: ``base_commit`` plus the edits its environment's own setup makes to the
repository before any agent starts (docs/protocol.md section 5.2).

SWE-bench's specification runs ``pre_install`` steps in the checkout: for sphinx ``sed`` pins written into
``setup.py`` and ``tox.ini``, for astropy a pin in ``pyproject.toml``, for one pytest version a fix of
``setup.cfg``. They are the environment's work, never the agent's. A recording image kept them in one of
two ways, both seen in real runs:

- ``committed``: SWE-bench's harness ends the image's setup with ``git commit -am SWE-bench``, so the
  agent's ``git diff`` and its submission do not contain them;
- ``working_tree``: older images left them uncommitted, so a ``git add -A`` submission contains them.

:func:`environment_edits` finds the edits by running the setup steps in a fresh checkout (in the sandbox,
without network, each step under a time limit), so they never depend on whether the task's environment
is built or cached; :func:`find_environment_edits` does so in a scratch checkout of any repository that
holds ``base_commit`` (an agent run's workspace). :func:`recorded_form` reads from a run's submission which
way its image kept them, and :func:`apply_starting_state` puts a replay workspace into that state (for
``committed`` with a commit like the harness's, made by :func:`commit_starting_state`, so that the agent's
``git diff``, ``git stash`` or ``git checkout`` behave as they did). Every per-event diff, and the final
patch of takeover's own agent runs, is then taken against :attr:`StartingState.tree`.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from takeover._util import sandbox
from takeover._util.patches import split_patch
from takeover._util.processes import run_process
from takeover.environments.spec import EnvSpec, env_spec_for
from takeover.errors import TakeoverError
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.snapshots import join_diffs, snapshot_diff, take_snapshot, without_generated
from takeover.sources.repos import alternates
from takeover.sources.tasks import SourceTask

#: How the recording image kept the environment's edits (see the module docstring).
RecordedForm = Literal["committed", "working_tree"]
#: Seconds each setup step may take (they are ``sed`` lines; downloads fail at once without network).
SETUP_STEP_TIMEOUT = 120.0
# The identity and date of the commit that stands for the harness's ``git commit -am SWE-bench``: fixed, so
# the same starting state always gives the same commit id.
_COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "SWE-bench", "GIT_AUTHOR_EMAIL": "setup@swebench.config",
    "GIT_COMMITTER_NAME": "SWE-bench", "GIT_COMMITTER_EMAIL": "setup@swebench.config",
    "GIT_AUTHOR_DATE": "1970-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "1970-01-01T00:00:00Z",
}


class StartingState(BaseModel):
    """The task's starting state in one workspace.

    Attributes:
        base_commit: the task's commit.
        tree: git tree id of the starting state (``base_commit``'s tree when the setup changes nothing),
            held by the workspace's object store.
        diffs: ``{path: diff against base_commit}`` of the files the setup changed (generated output left
            out, docs/protocol.md section 3.3).
        steps: the setup steps that were run, in order.
        notes: what did not go as the specification says (a failed step, no specification), for the user.
    """

    base_commit: str
    tree: str
    diffs: dict[str, str] = Field(default_factory=dict)
    steps: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def files(self) -> list[str]:
        """Paths the setup changed, sorted."""
        return sorted(self.diffs)

    @property
    def patch(self) -> str:
        """The setup's edits as one patch against ``base_commit``."""
        return join_diffs(self.diffs)


def setup_steps(task: SourceTask, spec: EnvSpec | None = None) -> tuple[list[str], list[str]]:
    """``(steps, notes)``: the shell steps of the task environment's specification (``spec``, default the
    task's own) that run in the checkout before the agent starts (SWE-bench's ``pre_install``, system steps
    removed), and a note when the task has no specification (then there are no steps)."""
    if spec is not None:
        return list(spec.pre_install), []
    try:
        return list(env_spec_for(task).pre_install), []
    except TakeoverError as exc:
        return [], [f"no environment setup steps: {str(exc).splitlines()[0][:200]}"]


def _git(workspace: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full_env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})})
    proc = subprocess.run(["git", *args], cwd=workspace, env=full_env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise TakeoverError(f"git {' '.join(args[:2])} in {workspace} failed: {proc.stderr.strip()[:300]}")
    return proc.stdout


def environment_edits(task: SourceTask, workspace: Path | str, *, replay: ReplaySettings | None = None,
                      spec: EnvSpec | None = None) -> StartingState:
    """Run the task environment's setup steps (:func:`setup_steps` of ``spec``, default the task's own
    specification) in ``workspace`` (a fresh checkout of ``task.base_commit``), record what they changed,
    and put the changed files back to ``base_commit``.

    The steps run with ``bash -c`` in the workspace, confined by the sandbox when available and ``replay``
    says so (its ``use_sandbox``; :class:`takeover.replay_settings.ReplaySettings`, default: its defaults: no
    network, writes only in the workspace), each under :data:`SETUP_STEP_TIMEOUT` seconds; a failing step is noted
    and the next one runs (as a shell script without ``set -e`` would). Generated output the steps leave
    (docs/protocol.md section 3.3) is not part of the edits and stays in the workspace.

    Returns:
        The :class:`StartingState`; its ``tree`` is in ``workspace``'s object store.
    Raises:
        TakeoverError: git fails in the workspace.
    """
    workspace = Path(workspace).resolve()
    steps, notes = setup_steps(task, spec)
    base_tree = _git(workspace, "rev-parse", f"{task.base_commit}^{{tree}}").strip()
    if not steps:
        return StartingState(base_commit=task.base_commit, tree=base_tree, notes=notes)
    use_sandbox = (replay or ReplaySettings()).use_sandbox
    st = sandbox.status() if use_sandbox else sandbox.SandboxStatus(available=False, tool=None, message="off")
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(workspace), "LC_ALL": "C"}
    for step in steps:
        argv = ["bash", "-c", step]
        if st.available:
            argv = sandbox.wrap(argv, workspace, readable=alternates(workspace), tool=st.tool)
        done = run_process(argv, cwd=workspace, env=env, timeout=SETUP_STEP_TIMEOUT, output_limit=2000)
        if done.exit_code != 0:
            why = f"killed at the {SETUP_STEP_TIMEOUT:g} s limit" if done.killed else f"exit {done.exit_code}"
            notes.append(f"setup step failed ({why}): {step[:160]}")
    tree = take_snapshot(workspace)
    diffs, _ = without_generated(snapshot_diff(workspace, task.base_commit, tree))
    if not diffs:
        return StartingState(base_commit=task.base_commit, tree=base_tree, steps=steps, notes=notes)
    tree = tree_with_patch(workspace, task.base_commit, join_diffs(diffs))
    _restore(workspace, task.base_commit, list(diffs))
    return StartingState(base_commit=task.base_commit, tree=tree, diffs=diffs, steps=steps, notes=notes)


def find_environment_edits(task: SourceTask, repository: Path | str, *, work_dir: Path | str | None = None,
                           replay: ReplaySettings | None = None) -> StartingState:
    """The starting state of ``task`` (docs/protocol.md section 5.2) for a repository whose working tree is
    not a fresh checkout (an agent run's workspace, where the environment has been prepared and a checkpoint
    patch may be applied): :func:`environment_edits` runs in a scratch checkout of ``task.base_commit`` that
    shares ``repository``'s objects (under ``work_dir``, a temporary folder by default, removed afterwards),
    and the starting state's tree is then written into ``repository``'s object store. ``repository`` itself
    is only read, apart from the new objects.

    Returns:
        The :class:`StartingState`; its ``tree`` is in ``repository``'s object store (``base_commit``'s tree
        when the task's environment has no setup steps or they change nothing).
    Raises:
        TakeoverError: git fails (``repository`` lacks ``base_commit``, or the scratch checkout fails).
    """
    repository = Path(repository).resolve()
    steps, notes = setup_steps(task)
    if not steps:
        tree = _git(repository, "rev-parse", f"{task.base_commit}^{{tree}}").strip()
        return StartingState(base_commit=task.base_commit, tree=tree, notes=notes)
    with tempfile.TemporaryDirectory(prefix="takeover-setup-", dir=work_dir) as tmp:
        scratch = Path(tmp) / "checkout"
        _git(repository, "clone", "--shared", "--no-checkout", "--quiet", str(repository), str(scratch))
        _git(scratch, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", task.base_commit)
        state = environment_edits(task, scratch, replay=replay)
    if not state.diffs:
        tree = _git(repository, "rev-parse", f"{task.base_commit}^{{tree}}").strip()
        return state.model_copy(update={"tree": tree})
    return state.model_copy(update={"tree": tree_with_patch(repository, task.base_commit, state.patch)})


def tree_with_patch(repository: Path | str, base_commit: str, patch: str) -> str:
    """The git tree id of ``base_commit`` with ``patch`` applied, written into ``repository``'s object store
    through a private index (the repository's own index and working tree are untouched).

    Raises:
        TakeoverError: the patch does not apply to ``base_commit``.
    """
    repository = Path(repository)
    index = Path(_git(repository, "rev-parse", "--absolute-git-dir").strip()) / "takeover-starting-state.index"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        _git(repository, "read-tree", base_commit, env=env)
        if patch.strip():
            proc = subprocess.run(["git", "apply", "--cached", "--binary", "-"], cwd=repository,
                                  input=patch.encode("utf-8", "surrogateescape"), capture_output=True, check=False,
                                  env={**os.environ, **env})
            if proc.returncode != 0:
                raise TakeoverError(f"environment edits do not apply to {base_commit[:12]}: "
                                    f"{proc.stderr.decode(errors='replace').strip()[:300]}")
        return _git(repository, "write-tree", env=env).strip()
    finally:
        index.unlink(missing_ok=True)


def _restore(workspace: Path, source: str, paths: list[str]) -> None:
    """Working-tree files ``paths`` as they are in ``source`` (a commit or tree); paths ``source`` lacks are
    removed. The workspace's index is left as ``HEAD`` has it."""
    _git(workspace, "restore", f"--source={source}", "--worktree", "--", *paths)


def recorded_form(state: StartingState, final_patch: str | None) -> RecordedForm:
    """Which way the recording image kept the environment's edits, read from the run's submission:
    ``working_tree`` when the submission carries the lines one of the edits added to a file, else
    ``committed`` (also when the run has no submission, or the setup changed nothing)."""
    if not state.diffs or not final_patch:
        return "committed"
    submitted = split_patch(final_patch)
    for path, diff in state.diffs.items():
        added = {line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")}
        if path in submitted and added and added <= set(submitted[path].splitlines()):
            return "working_tree"
    return "committed"


def apply_starting_state(workspace: Path | str, state: StartingState, form: RecordedForm) -> None:
    """Put ``workspace`` (at ``state.base_commit``, possibly with its environment prepared) into the starting
    state the way the recording image had it: the setup's files as the setup left them, and for
    ``committed`` a commit of that state on top of ``base_commit`` as ``HEAD`` (fixed author and date, so
    the commit id is always the same) with the index at ``HEAD``.

    Raises:
        TakeoverError: git fails in the workspace.
    """
    if not state.diffs:
        return
    workspace = Path(workspace)
    _restore(workspace, state.tree, state.files)
    if form == "committed":
        commit_starting_state(workspace, state)


def commit_starting_state(workspace: Path | str, state: StartingState) -> str | None:
    """Make the starting state ``HEAD`` of ``workspace`` the way SWE-bench's harness does
    (docs/protocol.md section 5.2, form ``committed``): a commit of ``state.tree`` on top of
    ``state.base_commit`` (author and committer ``SWE-bench <setup@swebench.config>``, date
    1970-01-01T00:00:00Z, so the same starting state always gives the same commit id), with the index entries
    of the setup's files at that commit. The working tree is not touched: whatever is in it (the setup's
    edits, a checkpoint patch) stays, and ``git diff`` shows only what differs from the starting state.

    Returns:
        The commit id, or ``None`` when the setup changes nothing (``HEAD`` stays at ``base_commit``).
    Raises:
        TakeoverError: git fails in the workspace (``state.tree`` must be in its object store).
    """
    if not state.diffs:
        return None
    workspace = Path(workspace)
    commit = _git(workspace, "commit-tree", state.tree, "-p", state.base_commit, "-m", "SWE-bench",
                  env=_COMMIT_ENV).strip()
    _git(workspace, "update-ref", "--no-deref", "HEAD", commit)
    _git(workspace, "reset", "--quiet", "--", *state.files)
    return commit
