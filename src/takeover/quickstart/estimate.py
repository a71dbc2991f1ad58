"""How long the quickstart will take on this machine: its known work, this machine's speed, the estimate.

The quickstart's work with its defaults is known: a reference run measured it, call by call
(``known_work.json`` beside this module, :class:`KnownWork`, written by ``benchmarks/bench_quickstart.py
--write-work`` with :func:`measure_work`): for each model call the unit it served, the prompt tokens the
server evaluated (its prefix cache spares the rest), the tokens it generated and the seconds it spent;
and the wall time of the run after the model was ready. The reference run lets every takeover run take
all its steps (a wall-time limit long enough never to stop one), so that the work of every step is known.
The embedded server measures this machine's speed when it starts
(:func:`takeover.embedded_model.measure_speed`); the reference machine's speed was measured the same way.

:func:`estimate_run` scales the reference run by the ratio of the two speeds:

- each call's prompt evaluation: its seconds x (reference prompt speed / this machine's); the rest of its
  time (generation): its seconds x (reference generation speed / this machine's);
- a takeover run checks its wall-time limit before each model call (docs/protocol.md section 8), so at this
  machine's speed its calls are counted until their seconds reach the limit (and up to the step limit);
  the note writers' calls always count;
- the rest of the wall time (replays, tests, grading while the model is idle): its seconds x the prompt
  ratio (both are CPU-bound work).

So the estimate is the token work at this machine's speed for prompts as long as the quickstart's (the
start-up's short prompt runs faster per token than prompts of thousands of tokens, by the ratio the
reference run measured). It holds for the work the reference run did: the defaults (any wall-time
limit, at most its step limit), the default weights, a fresh output folder and a task environment
already built (:func:`estimate_note` says when it does not hold). While the run goes,
:func:`progress_phrase` says where it stands against the estimate.
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


class KnownCall(BaseModel):
    """One model call of the reference run (units: tokens and seconds, as the server's log gives them).

    Attributes:
        unit: the unit it served: its stage and view (``view summary_notes``, ``takeover raw_trace``).
        evaluated_tokens, generated_tokens: prompt tokens evaluated (not reused from the server's cache)
            and tokens generated.
        prompt_seconds, seconds: the prompt's evaluation, and the whole call on the server.
    """

    unit: str
    evaluated_tokens: int
    generated_tokens: int
    prompt_seconds: float
    seconds: float


class KnownWork(BaseModel):
    """The quickstart's work with its defaults, measured on a reference run (units: tokens and seconds).

    Attributes:
        configuration: what sets the work (:func:`work_configuration` of the reference run; its wall-time
            limit let every takeover run take all its steps).
        calls: the model calls after the server's start-up requests, in order.
        prompt_tokens: prompt tokens sent (the calls' usage, the server's cached prefixes included).
        wall_seconds: the run from the model being ready to the report.
        cpu_seconds: user + system seconds of the whole quickstart process tree (``None``: not measured).
        speed: the reference machine's speed, measured as every run measures it.
        machine: the reference machine (CPU, cores) and how loaded it was.
        measured: how, when and at which commit the figures were measured.
    """

    configuration: dict[str, Any]
    calls: list[KnownCall]
    prompt_tokens: int
    wall_seconds: float
    cpu_seconds: float | None = None
    speed: MachineSpeed
    machine: str
    measured: str

    @property
    def model_calls(self) -> int:
        return len(self.calls)

    @property
    def prompt_tokens_evaluated(self) -> int:
        return sum(c.evaluated_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.generated_tokens for c in self.calls)

    @property
    def model_seconds(self) -> float:
        return sum(c.seconds for c in self.calls)

    def units(self) -> dict[str, list[KnownCall]]:
        """The calls of each unit, units in the order of their first call."""
        grouped: dict[str, list[KnownCall]] = {}
        for call in self.calls:
            grouped.setdefault(call.unit, []).append(call)
        return grouped


class RunEstimate(BaseModel):
    """The expected duration of the quickstart's run on this machine, from the model being ready to the
    report (seconds), and the figures it was made of.

    Attributes:
        seconds: the whole; model_seconds: the model's part; other_seconds: the rest.
        model_calls: the calls expected (of ``reference_calls``, the reference run's: every step);
            call_seconds: each one's expected seconds, in order; takeover_steps: the steps expected of each
            takeover run, by view.
        prompt_tokens_evaluated, completion_tokens: the expected calls' tokens.
        prompt_rate, generation_rate: the rates expected here for those calls' prompts and generation
            (tokens per second).
        speed: this machine's measured speed.
        reference_seconds: the reference run's wall time; reference_calls: its model calls.
        actual_seconds: the run's wall time over the same span, once it ended (``None`` before).
    """

    seconds: float
    model_seconds: float
    other_seconds: float
    model_calls: int
    call_seconds: list[float]
    takeover_steps: dict[str, int]
    prompt_tokens_evaluated: int
    completion_tokens: int
    prompt_rate: float
    generation_rate: float
    speed: MachineSpeed
    reference_seconds: float
    reference_calls: int
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
        "views": sorted(options.views) if options.views else "all", "step_limit": options.limits.step_limit,
        "wall_time_limit_seconds": options.limits.wall_time_limit_seconds,
        "note_max_tokens": options.budgets.note_max_tokens, "raw_trace_max_tokens": options.budgets.raw_trace_max_tokens,
        "agent": options.agent.runtime, "workers": options.workers,
        "model": model_identity,
    }


#: Settings the estimate follows instead of requiring the reference run's: the wall-time limit (simulated
#: call by call) and the step limit (at most the reference run's).
FOLLOWED = ("wall_time_limit_seconds", "step_limit")


def estimate_note(work: KnownWork, configuration: dict[str, Any], *, resuming: bool) -> str | None:
    """Why no estimate can be made for this run (``None``: it can): settings that differ from the
    reference run's (a step limit above its own included), or an output folder whose finished units this
    run reuses."""
    differ = [key for key in sorted({*work.configuration, *configuration} - set(FOLLOWED))
              if work.configuration.get(key) != configuration.get(key)]
    if configuration.get("step_limit", 0) > work.configuration.get("step_limit", 0):
        differ.append(f"step_limit (the known work has {work.configuration.get('step_limit')} steps per run)")
    if differ:
        return f"the known work is the quickstart's with its defaults; this run differs in {', '.join(differ)}"
    if resuming:
        return "the output folder holds an earlier run's finished units, which this run reuses"
    return None


def estimate_run(work: KnownWork, speed: MachineSpeed, *, step_limit: int, wall_time_limit_seconds: float) -> RunEstimate:
    """The reference run scaled to this machine's speed, each takeover run cut where its limits would cut
    it here (the module docstring gives the rule)."""
    prompt_ratio = work.speed.prompt_tokens_per_second / speed.prompt_tokens_per_second
    generation_ratio = work.speed.generation_tokens_per_second / speed.generation_tokens_per_second

    def here(call: KnownCall) -> tuple[float, float]:
        return call.prompt_seconds * prompt_ratio, (call.seconds - call.prompt_seconds) * generation_ratio

    expected: list[KnownCall] = []
    steps: dict[str, int] = {}
    for unit, calls in work.units().items():
        if not unit.startswith("takeover"):
            expected += calls
            continue
        elapsed = 0.0
        for number, call in enumerate(calls[:step_limit], start=1):
            expected.append(call)
            steps[unit.removeprefix("takeover").strip()] = number
            elapsed += sum(here(call))
            if elapsed >= wall_time_limit_seconds:
                break
    prompt = sum(here(c)[0] for c in expected)
    generation = sum(here(c)[1] for c in expected)
    other = max(work.wall_seconds - work.model_seconds, 0.0) * prompt_ratio
    evaluated, generated = sum(c.evaluated_tokens for c in expected), sum(c.generated_tokens for c in expected)
    return RunEstimate(
        seconds=round(prompt + generation + other, 1), model_seconds=round(prompt + generation, 1),
        other_seconds=round(other, 1), model_calls=len(expected), takeover_steps=steps,
        call_seconds=[round(sum(here(c)), 1) for c in expected],
        prompt_tokens_evaluated=evaluated, completion_tokens=generated,
        prompt_rate=round(evaluated / max(prompt, 1e-6), 1), generation_rate=round(generated / max(generation, 1e-6), 2),
        speed=speed, reference_seconds=work.wall_seconds, reference_calls=work.model_calls)


def minutes(seconds: float) -> str:
    """``12.5 min`` (``45 s`` under a minute)."""
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def describe_estimate(estimate: RunEstimate, work: KnownWork, wall_time_limit_seconds: float) -> str:
    """Two sentences: the expected duration here and what it is made of, then the reference run's."""
    steps = ", ".join(f"{view} {n}" for view, n in estimate.takeover_steps.items())
    return (
        f"Expected here: about {minutes(estimate.seconds)} from now to the report. The work is known: "
        f"{estimate.model_calls} model calls of the {estimate.reference_calls} the defaults make with every step "
        f"(at this speed the {wall_time_limit_seconds:,.0f}-second limit should end the takeover runs after "
        f"{steps} steps), {estimate.prompt_tokens_evaluated:,} prompt tokens evaluated at "
        f"~{estimate.prompt_rate:,.0f} tokens/s here and {estimate.completion_tokens:,} generated at "
        f"~{estimate.generation_rate:,.1f} tokens/s ({minutes(estimate.model_seconds)}), plus "
        f"{minutes(estimate.other_seconds)} of replays, tests and grading. Measured with every step on "
        f"{work.machine}, whose start-up measured {work.speed.describe()}: {work.model_calls} calls, "
        f"{minutes(work.wall_seconds)}.")


def progress_phrase(estimate: RunEstimate | None, calls_done: int, elapsed: float, calls_seconds: float = 0.0) -> str:
    """Where the run stands against the estimate after ``calls_done`` answered calls, ``elapsed`` seconds
    after the estimate, the calls having taken ``calls_seconds`` in all: ``call 7 of ~20, 4.1 of ~12.5 min;
    the calls took 1.4x their expected time`` (past the estimate: ``call 23 of ~20, 13.6 min, past the ~12.5
    min expected``). The pace tells a machine busier than at start-up (above 1x) from a stuck run (no new
    line at all). ``""`` without an estimate."""
    if estimate is None:
        return ""
    text = f"call {calls_done} of ~{estimate.model_calls}, "
    if elapsed <= estimate.seconds:
        text += f"{elapsed / 60:.1f} of ~{estimate.seconds / 60:.1f} min"
    else:
        text += f"{elapsed / 60:.1f} min, past the ~{estimate.seconds / 60:.1f} min expected"
    expected = sum(estimate.call_seconds[:calls_done])
    if calls_seconds and expected and calls_done <= len(estimate.call_seconds):
        text += f"; the calls took {calls_seconds / expected:.1f}x their expected time"
    return text


def actual_phrase(estimate: RunEstimate) -> str:
    """``12.9 min; expected ~12.1 min (1.07x)`` once :attr:`RunEstimate.actual_seconds` is set."""
    if estimate.actual_seconds is None:
        return ""
    ratio = estimate.actual_seconds / max(estimate.seconds, 1e-6)
    return f"{minutes(estimate.actual_seconds)}; expected ~{minutes(estimate.seconds)} ({ratio:.2f}x)"


def measure_work(out: Path | str, *, machine: str, measured: str, cpu_seconds: float | None = None) -> KnownWork:
    """The work of a finished quickstart in ``out`` (a fresh folder: its server log holds one run), from
    its ``quickstart.json`` (configuration, speed, wall time), ``model-server.log`` (per call: tokens
    evaluated and generated, seconds) and ``model-calls.jsonl`` (the unit each call served, and the prompt
    tokens sent), joined in order: the server has one slot and answers in the order calls arrive.

    Raises:
        ValueError: the run did not finish or measured no speed, or its server answered another number
            of requests than its call log has answered calls (a timed-out attempt, which the server still
            answers: measure on a run without one).
    """
    out = Path(out)
    result = json.loads((out / "quickstart.json").read_text())
    if not (result.get("ok") and result.get("speed") and result.get("configuration") and result.get("run_seconds")):
        raise ValueError(f"{out / 'quickstart.json'}: not a finished quickstart with its speed measured")
    served = read_server_log(out / "model-server.log")[STARTUP_REQUESTS:]
    answered = [c for c in read_calls(out / CALLS_FILE)[0] if c.status == "ok"]
    if len(served) != len(answered):
        raise ValueError(f"{out}: the server answered {len(served)} requests after its start-up, the call log has "
                         f"{len(answered)} answered calls; measure on a run without failed attempts")
    calls = [KnownCall(unit=" ".join(str(c.unit[k]) for k in ("stage", "view") if c.unit.get(k)),
                       evaluated_tokens=r.evaluated_tokens, generated_tokens=r.generated_tokens,
                       prompt_seconds=round(r.prompt_ms / 1000, 2), seconds=round(r.total_ms / 1000, 2))
             for c, r in zip(answered, served, strict=True)]
    return KnownWork(configuration=result["configuration"], calls=calls,
                     prompt_tokens=sum(c.prompt_tokens for c in answered), wall_seconds=result["run_seconds"],
                     cpu_seconds=cpu_seconds, speed=MachineSpeed.model_validate(result["speed"]), machine=machine,
                     measured=measured)
