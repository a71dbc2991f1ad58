"""The repository of a session as it was after an earlier event (``takeover handoff --event N``,
docs/protocol.md section 4.5).

A session records no repository state per event. The state after event N is rebuilt the way the study
rebuilds a run's states (docs/protocol.md sections 5.3 and 5.4): the session's actions are replayed, in the
sandbox, in a scratch clone of the repository at the session's starting commit, and the replay is accepted
only when its final state is the repository's state now (its diff against that commit, untracked files
included: the ``whole_tree`` rule). Otherwise the cut is refused with the replay's reason. The clone
shares the repository's objects (``git clone --shared``) and the repository itself is never changed.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from takeover.errors import InputError
from takeover.handoff.worktree import RepositoryState
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.replay import replay_trajectory
from takeover.repository_states.snapshots import EMPTY_TREE, join_diffs
from takeover.repository_states.starting_state import StartingState
from takeover.trajectories.events import Trajectory


def _clone(root: str, commit: str, dest: Path) -> str:
    """A scratch clone of ``root`` at ``commit``; returns ``commit``'s tree id."""
    for args in (["clone", "--shared", "--no-checkout", "--quiet", root, str(dest)],
                 ["-C", str(dest), "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit]):
        proc = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise InputError(root, f"cannot make a scratch copy at {commit[:12]}: {proc.stderr.strip()[:200]}")
    return subprocess.run(["git", "-C", str(dest), "rev-parse", f"{commit}^{{tree}}"], capture_output=True,
                          text=True, check=True).stdout.strip()


def patch_at_event(
    trajectory: Trajectory,
    state: RepositoryState,
    event: int,
    *,
    replay: ReplaySettings | None = None,
) -> tuple[str | None, str]:
    """``(patch, how)``: the repository's cumulative diff after ``event`` (0-based) against
    ``state.base_commit``, and a sentence saying how it was obtained; ``(None, reason)`` when it cannot be
    rebuilt exactly (see module docstring). The last event's state is the repository as it is now.

    Args:
        replay: the replay's per-command limits and sandbox (:class:`takeover.replay_settings.ReplaySettings`;
            default: its defaults; the session's own repository is its environment).
    """
    last = len(trajectory.events) - 1
    if not 0 <= event <= last:
        return None, f"event {event} is not in the session: it has {last + 1} events (0 to {last})"
    if event == last:
        return state.patch, "the repository as it is now (the session's last event)"
    if state.base_commit == EMPTY_TREE:
        return None, "the repository has no commit to replay the session from"
    with tempfile.TemporaryDirectory(prefix="takeover-handoff-") as tmp:
        ws = Path(tmp) / "repo"
        tree = _clone(state.root, state.base_commit, ws)
        run = trajectory.model_copy(update={"final_patch": state.patch})
        result = replay_trajectory(run, ws, state.base_commit, start=StartingState(base_commit=state.base_commit, tree=tree),
                                   replay=replay)
    if not result.verdict.verified:
        return None, (f"the session's state after event {event} cannot be rebuilt exactly: its replay does not "
                      f"end at the repository as it is now ({result.verdict.reason})")
    return join_diffs(result.diffs[event]), (f"replayed from {state.base_commit[:12]} and verified against the "
                                             f"repository as it is now ({result.verdict.sandbox})")
