"""Trajectories: the normalized event model and readers of real agents' native formats.

Read any supported file (the format is detected from the content)::

    from takeover.trajectories import read_trajectories, read_trajectory

    for traj in read_trajectories("run.traj.json"):
        print(traj.format, traj.instance_id, traj.agent_events, traj.prompt_tokens)
    one = read_trajectory("runs.jsonl", record=2)   # one run out of a file holding several

Built-in readers (one module each; the module docstring says exactly how native records map to events):
``mini-swe-agent`` (:mod:`.mini_swe_agent`), ``openhands-v0`` (:mod:`.openhands_v0`),
``openhands-v0-messages`` (:mod:`.openhands_v0_messages`), ``openhands-v1`` and ``openhands-v1-dir``
(:mod:`.openhands_v1`), ``swe-agent`` (:mod:`.swe_agent`), ``claude-code`` (:mod:`.claude_code`),
``codex-cli`` (:mod:`.codex_cli`), and takeover's own runs, ``takeover`` and ``takeover-dir``
(:mod:`.takeover_run`). Add a format with :func:`register_reader` (a :class:`Reader` gets a
:class:`Source`: the path, parsed once; :class:`Ctx` builds :class:`~takeover.errors.InputError` messages
naming file, record and field; its :class:`ReplayNeeds` say what a replay needs to know of the recording
tool, :func:`replay_needs`). A session log cut off mid-write is read up to its last complete line, and
``metadata[CUT_LAST_LINE]`` of its run says what was left out.
"""

from takeover.trajectories._common import CUT_LAST_LINE, Ctx, EditorFlavor, ReplayNeeds, Source
from takeover.trajectories.events import Event, LLMCall, Trajectory, Usage
from takeover.trajectories.registry import (
    Reader,
    detect_format,
    get_reader,
    iter_trajectories,
    read_trajectories,
    read_trajectory,
    readers,
    register_reader,
    replay_needs,
    unregister_reader,
)
from takeover.trajectories.summary import TrajectorySummary, summarize

__all__ = [
    "CUT_LAST_LINE",
    "Ctx",
    "EditorFlavor",
    "Event",
    "LLMCall",
    "Reader",
    "ReplayNeeds",
    "Source",
    "Trajectory",
    "TrajectorySummary",
    "Usage",
    "detect_format",
    "get_reader",
    "iter_trajectories",
    "read_trajectories",
    "read_trajectory",
    "readers",
    "register_reader",
    "replay_needs",
    "summarize",
    "unregister_reader",
]
