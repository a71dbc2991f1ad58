"""The scorer of the handoff task: the final repository graded with takeover's SWE-bench grading, and the
run's counts (docs/protocol.md sections 6, 8.3 and 8.5).

- The final patch is the sandbox repository's diff against ``base_commit`` in the pinned format of
  docs/protocol.md section 5.2 (untracked files included, ignored files and new generated output left out):
  the checkpoint's edits plus the agent's, as a takeover run's final patch.
- It is graded by :func:`takeover.grading.grade` under the task's grading record
  (:class:`takeover.grading_settings.GradingSettings`, whole: backend and its options, time limit, network,
  hash seed, verdict rules) against the task's row of the dataset: ``resolved``, the FAIL_TO_PASS and
  PASS_TO_PASS pass rates and the final patch's label.
- ``agent_events`` (section 1): every assistant message after the input is one action per tool call (one
  when it calls none), every tool result one observation, and every later user message (a harness's
  "please continue") one observation.
- ``prompt_tokens`` (section 1, cached tokens included): the sum over the sample's model calls of
  Inspect's ``input_tokens + input_tokens_cache_read + input_tokens_cache_write``; ``None`` when no call
  reported usage.

Samples run concurrently; their gradings run one at a time (gradings of one instance share its
folders). A grading that cannot finish (the environment, the repository) scores ``resolved`` 0 with the reason in
``metadata["grading_error"]``; the report counts that run as an infrastructure failure.
"""

from __future__ import annotations

import asyncio
import shlex
import threading
from collections.abc import Sequence
from pathlib import Path

from inspect_ai.event import ModelEvent
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool, ChatMessageUser
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import sandbox

from takeover._util.patches import split_patch
from takeover.grading import grade
from takeover.grading.backends import checked_grading
from takeover.grading_settings import GradingSettings
from takeover.repository_states.snapshots import DIFF_ARGS, join_diffs, patch_sha256, without_generated
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import load_tasks, task_index


def diff_command(base_commit: str) -> str:
    """The shell command that prints the sandbox repository's diff against ``base_commit`` in the pinned
    format of docs/protocol.md section 5.2, untracked files included (it stages them first)."""
    return "git add -A >/dev/null && " + shlex.join(["git", *DIFF_ARGS, "--cached", base_commit])


#: One grading at a time: gradings of one instance share its log folder and environment.
_grading = threading.Lock()


def agent_events(messages: Sequence[ChatMessage]) -> int:
    """Actions plus observations of a sample's messages (rules in the module docstring)."""
    count = 0
    seen_assistant = False
    for message in messages:
        if isinstance(message, ChatMessageAssistant):
            seen_assistant = True
            count += max(1, len(message.tool_calls or []))
        elif isinstance(message, ChatMessageTool) or (isinstance(message, ChatMessageUser) and seen_assistant):
            count += 1
    return count


def prompt_tokens(events: Sequence[object]) -> tuple[int | None, int | None]:
    """``(prompt tokens, completion tokens)`` over the model calls in ``events`` (Inspect's transcript);
    ``(None, None)`` when none reported usage."""
    used = [e.output.usage for e in events if isinstance(e, ModelEvent) and e.output and e.output.usage]
    if not used:
        return None, None
    prompt = sum(u.input_tokens + (u.input_tokens_cache_read or 0) + (u.input_tokens_cache_write or 0) for u in used)
    return prompt, sum(u.output_tokens for u in used)


def _grade(task, patch: str, grading: GradingSettings, source: RepoSource):
    with _grading:
        return grade(task, patch, grading, repo_source=source)


def _rate(passed: list, failed: list) -> float | None:
    total = len(passed) + len(failed)
    return len(passed) / total if total else None


@scorer(metrics={"resolved": [mean()], "agent_events": [mean()], "prompt_tokens": [mean()]})
def handoff_scorer(dataset: str, mirror: str | None = None, offline: bool = False,
                   grading: GradingSettings | None = None):
    """Grade the sample's final repository and count its events and tokens (module docstring).

    Args:
        dataset: the SWE-bench dataset file (JSON Lines) holding the instances' rows.
        mirror, offline: where repositories come from (:class:`takeover.sources.repos.RepoSource`).
        grading: how it is graded (:class:`takeover.grading_settings.GradingSettings`, whole; default: its
            defaults, the ``local`` backend).

    Raises:
        InputError: an unknown backend or an option it refuses.
    """
    grading = checked_grading(grading or GradingSettings())
    source = RepoSource(mirror, offline=offline)
    tasks = task_index(load_tasks(Path(dataset)))

    async def score(state: TaskState, target: Target) -> Score:
        meta = state.metadata
        result = await sandbox().exec(["sh", "-c", diff_command(meta["base_commit"])])
        prompt, completion = prompt_tokens(transcript().events)
        counts = {"agent_events": agent_events(state.messages), "prompt_tokens": prompt}
        if not result.success:
            return Score(value={"resolved": 0.0, **counts}, explanation="no final patch",
                         metadata={"grading_error": f"git diff failed in the sandbox: {result.stderr.strip()[:300]}"})
        patch = join_diffs(without_generated(split_patch(result.stdout))[0]) if result.stdout.strip() else ""
        task = tasks.get(meta["instance_id"])
        if task is None:
            return Score(value={"resolved": 0.0, **counts}, answer=patch, explanation="not graded",
                         metadata={"grading_error": f"instance {meta['instance_id']} is not in {dataset}"})
        graded = await asyncio.to_thread(_grade, task, patch, grading, source)
        return Score(
            value={"resolved": 1.0 if graded.resolved else 0.0, **counts},
            answer=patch,
            explanation=graded.error or ("resolved" if graded.resolved else "not resolved"),
            metadata={
                "completion_tokens": completion, "patch_sha256": patch_sha256(patch),
                "final_state": graded.handoff_state, "grading_error": graded.error,
                "fail_to_pass_rate": _rate(graded.FAIL_TO_PASS.success, graded.FAIL_TO_PASS.failure),
                "pass_to_pass_rate": _rate(graded.PASS_TO_PASS.success, graded.PASS_TO_PASS.failure),
                "warnings": graded.warnings,
            },
        )

    return score
