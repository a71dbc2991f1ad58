"""The ``condensed`` view: OpenHands' own compaction of the predecessor's history, as a handoff
(**Extension**, docs/protocol.md section 7.9).

Every agent framework hands work over to itself when its context fills: it condenses the history into a
summary and goes on from it. This view measures that handoff under the protocol's controls: OpenHands SDK's
``LLMSummarizingCondenser`` (the library, run in OpenHands' own environment,
:mod:`takeover.environments.openhands_venv`, by the script :mod:`takeover.views.oh_condense`) condenses the
predecessor's events up to the cut, turned into OpenHands events, with the study's note writer as its LLM.
The condensation is forced at the cut (a ``CondensationRequest`` after the last event: the predecessor stops
there, whatever its context's size), so the SDK's own rule for a requested condensation decides what is
summarized and what is kept (the first ``keep_first`` events, and about the newer half of the history).
The block is the condensed view in OpenHands' order: the events kept, with the summary where the SDK inserts
it (the task message, kept by the SDK, is the takeover prompt's own task). Nothing after the cut is given to
the condenser; its summary passes the leak guard like any note (a leaking summary fails the view: the
condenser has no feedback loop to retry with).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from takeover.environments.openhands_venv import litellm_model, openhands_environment
from takeover.llm import ModelClient, ModelSettings, ModelUsage
from takeover.trajectories.events import Trajectory
from takeover.view_budgets import NOTE_MAX_TOKENS
from takeover.views.evidence import render_event, visible_events
from takeover.views.handoff_view import Handoff, HandoffView, ViewBlock
from takeover.views.notes import NotesFailed
from takeover.views.prompt import render, task_prompt

#: The script OpenHands' Python runs.
CONDENSE_SCRIPT = os.path.join(os.path.dirname(__file__), "oh_condense.py")
#: Seconds OpenHands may take to import and start, on top of the model calls' own time.
STARTUP_SECONDS = 300.0
#: The header of the summary's entry in the block (the kept events' entries start ``[step N | ``).
SUMMARY_ENTRY = "[summary | condenser | summary of earlier events]"
_NEXT_ENTRY = re.compile(r"\n\n\[step \d+ \| ")
#: The environment variable that hands the endpoint's key to the script (never written to a file).
KEY_VARIABLE = "TAKEOVER_CONDENSER_API_KEY"


class CondenserOptions(BaseModel):
    """The condenser's settings (a ``condensed`` view's options; part of its unit key).

    Attributes:
        max_size: OpenHands' ``max_size`` (events in a view before it condenses by size; the SDK's default,
            240). The forced condensation keeps about half of the history whatever it is; a smaller
            ``max_size`` than the history keeps less.
        keep_first: OpenHands' ``keep_first`` (events at the start never condensed; the SDK's default, 2:
            the task message and the first action). Must stay below ``max_size // 2 - 1`` (OpenHands' rule).
        note_max_tokens: the condenser LLM's ``max_output_tokens`` (the protocol's note cap, section 7.3).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_size: int = Field(240, gt=0)
    keep_first: int = Field(2, ge=0)
    note_max_tokens: int = Field(NOTE_MAX_TOKENS, ge=64)

    @model_validator(mode="after")
    def _room_to_condense(self) -> CondenserOptions:
        # OpenHands' own rule (its condenser refuses otherwise), said before any work.
        if self.max_size // 2 - self.keep_first - 1 <= 0:
            raise ValueError(f"keep_first ({self.keep_first}) must be below max_size // 2 - 1 "
                             f"({self.max_size // 2 - 1}), as OpenHands' condenser requires")
        return self


class Condensation(BaseModel):
    """What the condenser made of the history at the cut.

    Attributes:
        block: the view block (summary and kept events, rendered).
        summary: the condenser's summary, as its LLM wrote it.
        kept: takeover event indices the condensed view keeps (``-1``: the task message).
        forgotten: how many OpenHands events the summary replaces.
        usage: the condenser LLM's tokens (one call, usually) and the seconds the condensation took.
        condenser: the record: ``name``, ``max_size``, ``keep_first``, ``max_output_tokens``, ``versions``
            (openhands-sdk, openhands-tools, litellm), ``trigger`` (``request``: forced at the cut).
    """

    block: str
    summary: str
    kept: list[int]
    forgotten: int
    usage: ModelUsage
    condenser: dict


class CondenserFailed(Exception):
    """The condenser made no condensation (its LLM failed, or OpenHands did); ``usage`` is what it spent."""

    def __init__(self, reason: str, usage: ModelUsage):
        self.reason = reason
        self.usage = usage
        super().__init__(reason)


def condense(trajectory: Trajectory, event_index: int, task_message: str, writer: ModelSettings,
             options: CondenserOptions | None = None, *,
             template_dir: Path | str | None = None) -> Condensation:
    """Condense events ``0..event_index`` of ``trajectory`` with OpenHands' ``LLMSummarizingCondenser``.

    Args:
        task_message: the task the predecessor was given (OpenHands' first user message).
        writer: the condenser's LLM (the study's note writer); its key is read from the environment now.

    Raises:
        takeover.errors.EnvironmentUnavailable: OpenHands' environment cannot be built.
        CondenserFailed: the condenser's LLM or OpenHands failed (the reason, as OpenHands gave it).
    """
    options = options or CondenserOptions()
    env = openhands_environment()
    events = visible_events(trajectory, event_index)
    job = {
        "task": task_message,
        "events": [e.model_dump(exclude={"state_diff", "snapshot"}) for e in events],
        "model": litellm_model(writer.model, writer.base_url),
        "base_url": writer.base_url,
        "temperature": writer.temperature,
        "max_output_tokens": options.note_max_tokens,
        "timeout": writer.timeout,
        "num_retries": writer.retries,
        "max_size": options.max_size,
        "keep_first": options.keep_first,
    }
    variables = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    variables.update(HOME=os.environ.get("HOME", "/tmp"), OPENHANDS_SUPPRESS_BANNER="1")
    key = writer.api_key()
    if key:
        variables[KEY_VARIABLE] = key
    limit = STARTUP_SECONDS + writer.timeout * (writer.retries + 1)
    t0 = time.perf_counter()
    try:
        out = subprocess.run([str(env.python), "-I", CONDENSE_SCRIPT], input=json.dumps(job), capture_output=True,
                             text=True, env=variables, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        raise CondenserFailed(f"OpenHands' condenser did not finish within {limit:.0f} s", ModelUsage()) from None
    seconds = round(time.perf_counter() - t0, 3)
    try:
        answer = json.loads(out.stdout)
    except ValueError:
        tail = " | ".join(out.stderr.strip().splitlines()[-3:])
        raise CondenserFailed(f"OpenHands' condenser ended (exit {out.returncode}) without an answer: {tail}",
                              ModelUsage(seconds=seconds)) from None
    spent = answer.get("usage") or {}
    usage = ModelUsage(calls=int(spent.get("calls") or 0), prompt_tokens=int(spent.get("prompt_tokens") or 0),
                       completion_tokens=int(spent.get("completion_tokens") or 0), seconds=seconds)
    if "error" in answer:
        raise CondenserFailed(str(answer["error"]), usage)
    summary = str(answer.get("summary") or "").strip()
    if not summary:
        raise CondenserFailed("the condenser's LLM wrote an empty summary", usage)
    kept = [int(i) for i in answer["kept"]]
    block = render("view_condensed.md.j2", template_dir, entries=_entries(events, kept, summary,
                                                                          int(answer["summary_offset"] or 0)),
                   forgotten=int(answer["forgotten"]), kept=sum(1 for i in kept if i >= 0))
    condenser = {"name": "LLMSummarizingCondenser", "trigger": "request", "max_size": options.max_size,
                 "keep_first": options.keep_first, "max_output_tokens": options.note_max_tokens,
                 "versions": answer.get("versions") or env.versions}
    return Condensation(block=block, summary=summary, kept=kept, forgotten=int(answer["forgotten"]), usage=usage,
                        condenser=condenser)


def _entries(events, kept: list[int], summary: str, offset: int) -> list[str]:
    """The condensed view's entries in OpenHands' order: the summary at ``offset`` among the kept events
    (the task message counts for the offset, but is the takeover prompt's own task, so it is not repeated)."""
    by_index = {e.index: e for e in events}
    entries = ["[task | user | message] (the task, given in full below)" if i < 0 else render_event(by_index[i])
               for i in kept]
    entries.insert(min(offset, len(entries)), f"{SUMMARY_ENTRY}\n{summary}")
    return [entry for entry in entries if not entry.startswith("[task |")]


class Condensed(HandoffView):
    """OpenHands' ``LLMSummarizingCondenser`` over the predecessor's history, forced at the cut."""

    name = "condensed"
    description = "OpenHands' LLMSummarizingCondenser's compaction of the history at the cut (summary + kept events)"
    inputs = ("task", "events")
    model_written = True
    Options = CondenserOptions

    def build(self, handoff: Handoff, options: CondenserOptions, writer: ModelClient | None) -> ViewBlock:
        """The condensation as the view block (see the module docstring).

        Raises:
            NotesFailed: ``model_error`` when the condenser made no condensation, ``rejected`` when its
                summary leaks (carries the tokens spent).
            takeover.errors.EnvironmentUnavailable: OpenHands' environment cannot be built.
        """
        trajectory = handoff.trajectory
        task_message = trajectory.task_prompt or task_prompt(handoff.task, template_dir=handoff.template_dir)
        try:
            result = condense(trajectory, handoff.point.event_index, task_message, writer.settings, options,
                              template_dir=handoff.template_dir)
        except CondenserFailed as exc:
            raise NotesFailed(self.name, "model_error", [exc.reason], exc.usage, 1) from None
        prompt = handoff.prompt(result.block)
        leaks = handoff.guard.find(prompt)
        if leaks:
            raise NotesFailed(self.name, "rejected", [f"leak ({leak.kind}): {leak.detail}" for leak in leaks],
                              result.usage, 1)
        return ViewBlock(block=result.block, prompt=prompt, note_usage=result.usage, validation="valid", attempts=1,
                         structured={"condenser": result.condenser, "summary": result.summary,
                                     "kept_events": [i for i in result.kept if i >= 0],
                                     "forgotten_events": result.forgotten})

    def written_part(self, block: str) -> str:
        """The condenser's summary alone: the kept events are the trace itself, not the writer's claims."""
        if SUMMARY_ENTRY not in block:
            return block
        summary = block.split(SUMMARY_ENTRY, 1)[1]
        return _NEXT_ENTRY.split(summary, 1)[0].strip()
