"""How long the quickstart will take on this machine: its known work, this machine's speed, the estimate.

The quickstart's work with its defaults is known: a reference run measured it (``known_work.json`` beside
this module, :class:`KnownWork`, written by ``benchmarks/bench_quickstart.py --write-work`` with
:func:`measure_work`): model calls, prompt tokens evaluated (the server's prefix cache spares the rest),
tokens generated, the seconds the model spent on each, and the wall time of the run after the model was
ready. The embedded server measures this machine's speed when it starts
(:func:`takeover.embedded_model.measure_speed`); the reference run's speed was measured the same way.

:func:`estimate_run` scales the reference run by the ratio of the two speeds:

- prompt evaluation: the reference run's prompt seconds x (reference prompt speed / this machine's);
- generation, and the rest of the model's time per call: its seconds x (reference generation speed / this
  machine's);
- the rest of the wall time (replays, tests, grading while the model is idle): its seconds x the prompt
  ratio (both are CPU-bound work).

So the estimate is the token work at this machine's speed for prompts as long as the quickstart's
(:attr:`RunEstimate.prompt_rate`: the probe's short prompt runs faster per token than prompts of
thousands of tokens, by the ratio the reference run measured). It holds for the work the reference run
did: the defaults, the default weights, a fresh output folder and a task environment already built
(:func:`estimate_note` says when it does not hold). While the run goes, :func:`progress_phrase` says
where it stands against the estimate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from takeover.embedded_model import STARTUP_REQUESTS, MachineSpeed, read_server_log
from takeover.llm import read_calls
from takeover.quickstart.model_calls import CALLS_FILE
from takeover.quickstart.options import QuickstartOptions

KNOWN_WORK_FILE = Path(__file__).with_name("known_work.json")


class KnownWork(BaseModel):
    """The quickstart's work with its defaults, measured on a reference run (units: tokens and seconds).

    Attributes:
        configuration: what sets the work (:func:`work_configuration` of the reference run).
        model_calls: completions the server answered after its start-up requests.
        prompt_tokens: prompt tokens sent (the calls' usage, the server's cached prefixes included).
        prompt_tokens_evaluated, completion_tokens: tokens the server evaluated and generated (its log).
        model_prompt_seconds, model_seconds: seconds the server spent evaluating prompts, and on its
            requests in all (its log).
        wall_seconds: the run from the model being ready to the report.
        cpu_seconds: user + system seconds of the whole quickstart process tree (``None``: not measured).
        speed: the reference machine's speed, measured as every run measures it.
        machine: the reference machine (CPU, cores) and how loaded it was.
        measured: how, when and at which commit the figures were measured.
    """

    configuration: dict[str, Any]
    model_calls: int
    prompt_tokens: int
    prompt_tokens_evaluated: int
    completion_tokens: int
    model_prompt_seconds: float
    model_seconds: float
    wall_seconds: float
    cpu_seconds: float | None = None
    speed: MachineSpeed
    machine: str
    measured: str

    @property
    def run_prompt_rate(self) -> float:
        """Prompt tokens evaluated per second during the reference run (longer prompts than the probe's)."""
        return self.prompt_tokens_evaluated / max(self.model_prompt_seconds, 1e-6)

    @property
    def run_generation_rate(self) -> float:
        """Tokens generated per second of the reference run's non-prompt model time."""
        return self.completion_tokens / max(self.model_seconds - self.model_prompt_seconds, 1e-6)


class RunEstimate(BaseModel):
    """The expected duration of the quickstart's run on this machine, from the model being ready to the
    report (seconds), and the figures it was made of.

    Attributes:
        seconds: the whole; model_seconds: the model's part; other_seconds: the rest.
        model_calls, prompt_tokens_evaluated, completion_tokens: the known work.
        prompt_rate, generation_rate: the rates expected here for the run's prompts and generation
            (tokens per second).
        speed: this machine's measured speed.
        reference_seconds: the reference run's wall time.
        actual_seconds: the run's wall time over the same span, once it ended (``None`` before).
    """

    seconds: float
    model_seconds: float
    other_seconds: float
    model_calls: int
    prompt_tokens_evaluated: int
    completion_tokens: int
    prompt_rate: float
    generation_rate: float
    speed: MachineSpeed
    reference_seconds: float
    actual_seconds: float | None = None


def load_known_work(path: Path | str = KNOWN_WORK_FILE) -> KnownWork:
    """The reference run's figures (default: the packaged ``known_work.json``)."""
    return KnownWork.model_validate_json(Path(path).read_text())


def work_configuration(options: QuickstartOptions, model_identity: str) -> dict[str, Any]:
    """What sets the quickstart's work: the task, point types, views, limits, note and ``raw_trace``
    budgets, the agent, the workers, and the model by its identity (weights' sha256 and server settings,
    :meth:`takeover.embedded_model.EmbeddedModel.identity`)."""
    return {
        "instance_ids": sorted(options.instance_ids), "point_types": sorted(options.point_types),
        "views": sorted(options.views) if options.views else "all", "step_limit": options.step_limit,
        "wall_time_limit_seconds": options.wall_time_limit_seconds, "note_max_tokens": options.notes_cap,
        "raw_trace_max_tokens": options.raw_trace_budget, "agent": options.agent, "workers": options.workers,
        "model": model_identity,
    }


def estimate_note(work: KnownWork, configuration: dict[str, Any], *, resuming: bool) -> str | None:
    """Why no estimate can be made for this run (``None``: it can): settings that differ from the
    reference run's, or an output folder whose finished units this run reuses."""
    differ = [key for key in sorted({*work.configuration, *configuration})
              if work.configuration.get(key) != configuration.get(key)]
    if differ:
        return f"the known work is the quickstart's with its defaults; this run differs in {', '.join(differ)}"
    if resuming:
        return "the output folder holds an earlier run's finished units, which this run reuses"
    return None


def estimate_run(work: KnownWork, speed: MachineSpeed) -> RunEstimate:
    """The reference run scaled to this machine's speed (the module docstring gives the rule)."""
    prompt_ratio = work.speed.prompt_tokens_per_second / speed.prompt_tokens_per_second
    generation_ratio = work.speed.generation_tokens_per_second / speed.generation_tokens_per_second
    model = work.model_prompt_seconds * prompt_ratio + (work.model_seconds - work.model_prompt_seconds) * generation_ratio
    other = max(work.wall_seconds - work.model_seconds, 0.0) * prompt_ratio
    return RunEstimate(
        seconds=round(model + other, 1), model_seconds=round(model, 1), other_seconds=round(other, 1),
        model_calls=work.model_calls, prompt_tokens_evaluated=work.prompt_tokens_evaluated,
        completion_tokens=work.completion_tokens, prompt_rate=round(work.run_prompt_rate / prompt_ratio, 1),
        generation_rate=round(work.run_generation_rate / generation_ratio, 2), speed=speed,
        reference_seconds=work.wall_seconds)


def minutes(seconds: float) -> str:
    """``12.5 min`` (``45 s`` under a minute)."""
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def describe_estimate(estimate: RunEstimate, work: KnownWork) -> str:
    """Two sentences: the expected duration here and what it is made of, then the reference run's."""
    return (
        f"Expected here: about {minutes(estimate.seconds)} from now to the report. The work is known: "
        f"{estimate.model_calls} model calls, {estimate.prompt_tokens_evaluated:,} prompt tokens evaluated at "
        f"~{estimate.prompt_rate:,.0f} tokens/s here and {estimate.completion_tokens:,} generated at "
        f"~{estimate.generation_rate:,.1f} tokens/s ({minutes(estimate.model_seconds)}), plus "
        f"{minutes(estimate.other_seconds)} of replays, tests and grading. Measured on {work.machine} "
        f"({work.speed.describe()}): {minutes(work.wall_seconds)}.")


def progress_phrase(estimate: RunEstimate | None, calls_done: int, elapsed: float) -> str:
    """Where the run stands against the estimate: ``call 7 of ~20, 4.1 of ~12.5 min``, or, past it,
    ``call 23 of ~20, 13.6 min, past the ~12.5 min expected`` (``""`` without an estimate)."""
    if estimate is None:
        return ""
    text = f"call {calls_done} of ~{estimate.model_calls}, "
    if elapsed <= estimate.seconds:
        return text + f"{elapsed / 60:.1f} of ~{estimate.seconds / 60:.1f} min"
    return text + f"{elapsed / 60:.1f} min, past the ~{estimate.seconds / 60:.1f} min expected"


def actual_phrase(estimate: RunEstimate) -> str:
    """``12.9 min; expected ~12.1 min (1.07x)`` once :attr:`RunEstimate.actual_seconds` is set."""
    if estimate.actual_seconds is None:
        return ""
    ratio = estimate.actual_seconds / max(estimate.seconds, 1e-6)
    return f"{minutes(estimate.actual_seconds)}; expected ~{minutes(estimate.seconds)} ({ratio:.2f}x)"


def measure_work(out: Path | str, *, machine: str, measured: str, cpu_seconds: float | None = None) -> KnownWork:
    """The work of a finished quickstart in ``out`` (a fresh folder: its server log holds one run), from
    its ``quickstart.json`` (configuration, speed, wall time), ``model-server.log`` (tokens evaluated and
    generated, seconds) and ``model-calls.jsonl`` (prompt tokens sent).

    Raises:
        ValueError: the run made no estimate (no speed or configuration recorded) or did not finish.
    """
    out = Path(out)
    result = json.loads((out / "quickstart.json").read_text())
    if not (result.get("ok") and result.get("speed") and result.get("configuration") and result.get("run_seconds")):
        raise ValueError(f"{out / 'quickstart.json'}: not a finished quickstart with its speed measured")
    served = read_server_log(out / "model-server.log")[STARTUP_REQUESTS:]
    calls, _ = read_calls(out / CALLS_FILE)
    return KnownWork(
        configuration=result["configuration"], model_calls=len(served),
        prompt_tokens=sum(c.prompt_tokens for c in calls if c.status == "ok"),
        prompt_tokens_evaluated=sum(r.evaluated_tokens for r in served),
        completion_tokens=sum(r.generated_tokens for r in served),
        model_prompt_seconds=round(sum(r.prompt_ms for r in served) / 1000, 1),
        model_seconds=round(sum(r.total_ms for r in served) / 1000, 1),
        wall_seconds=result["run_seconds"], cpu_seconds=cpu_seconds, speed=MachineSpeed.model_validate(result["speed"]),
        machine=machine, measured=measured)
