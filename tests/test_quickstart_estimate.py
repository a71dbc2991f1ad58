"""The quickstart's estimate: this machine's speed measured at the server's start, the known work of a
reference run, the expected duration scaled between the two, progress against it, and the reference
figures measured from a finished run's files."""

from __future__ import annotations

import json

import pytest

from takeover import quickstart as qs
from takeover.embedded_model import DEFAULT_MODEL, MachineSpeed, measure_speed
from takeover.embedded_model.speed import COUNT_PROMPT, GENERATED_TOKENS, PROBE_PROMPT
from takeover.llm import ModelSettings
from takeover.testing.scripted_server import ScriptedServer

CONFIGURATION = {"instance_ids": ["pytest-dev__pytest-7521"], "step_limit": 3, "wall_time_limit_seconds": 3600.0,
                 "model": "qwen gguf-sha256:abc"}


def call(unit: str, evaluated: int, generated: int, prompt_seconds: float, seconds: float) -> qs.KnownCall:
    return qs.KnownCall(unit=unit, evaluated_tokens=evaluated, generated_tokens=generated,
                        prompt_seconds=prompt_seconds, seconds=seconds)


def reference(**changes) -> qs.KnownWork:
    """A reference run on a machine whose start-up measured 50 and 12 tokens/s: two note writers, then two
    takeover runs of three steps (every step: its wall-time limit was long), 780 s in all."""
    calls = [call("view summary_notes", 5_000, 300, 100.0, 125.0), call("view structured_notes", 4_000, 150, 80.0, 92.5),
             call("takeover repo_only", 2_500, 150, 50.0, 62.5), call("takeover repo_only", 400, 150, 8.0, 20.5),
             call("takeover repo_only", 400, 150, 8.0, 20.5),
             call("takeover raw_trace", 4_000, 150, 80.0, 92.5), call("takeover raw_trace", 500, 150, 10.0, 22.5),
             call("takeover raw_trace", 500, 150, 10.0, 22.5)]
    return qs.KnownWork(**{
        "configuration": CONFIGURATION, "calls": calls, "prompt_tokens": 40_000, "wall_seconds": 780.0,
        "cpu_seconds": 1_250.0, "machine": "a 2-core test CPU", "measured": "by hand",
        "speed": MachineSpeed(prompt_tokens_per_second=50, generation_tokens_per_second=12, prompt_tokens=330,
                              generated_tokens=48, seconds=13),
        **changes})


def speed(prompt: float, generation: float) -> MachineSpeed:
    return MachineSpeed(prompt_tokens_per_second=prompt, generation_tokens_per_second=generation,
                        prompt_tokens=330, generated_tokens=48, seconds=10)


def test_the_speed_is_measured_with_two_fixed_requests():
    script = [{"content": "f30", "usage": {"prompt_tokens": 450, "completion_tokens": 1}, "delay": 0.3},
              {"content": "1 2 3 4", "usage": {"prompt_tokens": 30, "completion_tokens": 48}, "delay": 0.3}]
    with ScriptedServer(script) as srv:
        got = measure_speed(ModelSettings(model="openai/m", base_url=srv.base_url, api_key_env=None))
    first, second = srv.requests
    assert first["max_tokens"] == 1 and first["messages"][-1]["content"] == PROBE_PROMPT
    assert second["max_tokens"] == GENERATED_TOKENS == 48 and second["messages"][-1]["content"] == COUNT_PROMPT
    assert first["temperature"] == second["temperature"] == 0.0
    assert (got.prompt_tokens, got.generated_tokens) == (450, 48)
    # Each answer took at least 0.3 s: at most 450 / 0.3 prompt tokens/s, and at most 48 tokens over the
    # half of 0.3 s that is always counted as generation.
    assert 0 < got.prompt_tokens_per_second <= 1500 and 0 < got.generation_tokens_per_second <= 320
    assert got.describe() == (f"prompt {got.prompt_tokens_per_second:,.0f} tokens/s, "
                              f"generation {got.generation_tokens_per_second:,.1f} tokens/s")


def test_an_endpoint_without_usage_gives_no_speed():
    with ScriptedServer([{"content": "f30", "usage": None}, {"content": "1 2", "usage": None}]) as srv, \
            pytest.raises(ValueError, match="no usable token counts"):
        measure_speed(ModelSettings(model="openai/m", base_url=srv.base_url, api_key_env=None))


def test_the_known_work_adds_up_its_calls():
    work = reference()
    assert (work.model_calls, work.prompt_tokens_evaluated, work.completion_tokens, work.model_seconds) == (
        8, 17_300, 1_350, 458.5)
    assert list(work.units()) == ["view summary_notes", "view structured_notes", "takeover repo_only",
                                  "takeover raw_trace"]


def test_on_the_reference_machine_with_its_limits_the_estimate_is_the_reference_run():
    work = reference()
    estimate = qs.estimate_run(work, work.speed, step_limit=3, wall_time_limit_seconds=3600)
    assert (estimate.seconds, estimate.model_seconds, estimate.other_seconds) == (780.0, 458.5, 321.5)
    assert (estimate.model_calls, estimate.reference_calls) == (8, 8)
    assert estimate.takeover_steps == {"repo_only": 3, "raw_trace": 3}
    # The run's own rates: 17,300 tokens in 346 s of prompts, 1,350 in 112.5 s of the rest.
    assert (estimate.prompt_rate, estimate.generation_rate) == (50.0, 12.0)


def test_a_slower_machine_scales_each_part_by_its_own_speed():
    # Prompts evaluated at half the speed, generation as fast: the prompt seconds and the rest (CPU-bound
    # like them) double, the generation's part stays.
    estimate = qs.estimate_run(reference(), speed(25, 12), step_limit=3, wall_time_limit_seconds=3600)
    assert (estimate.model_seconds, estimate.other_seconds, estimate.seconds) == (692.0 + 112.5, 643.0, 1447.5)
    assert (estimate.prompt_rate, estimate.generation_rate) == (25.0, 12.0)
    # Generation at a third of the speed: its 112.5 s triple.
    assert qs.estimate_run(reference(), speed(50, 4), step_limit=3, wall_time_limit_seconds=3600).model_seconds == (
        346.0 + 337.5)


def test_the_wall_time_limit_ends_each_takeover_run_where_it_would_here():
    # At half the prompt speed the first steps take 112.5 s (repo_only) and 172.5 s (raw_trace): a 120-second
    # limit, checked before each call, lets repo_only make a second call and raw_trace none after its first.
    estimate = qs.estimate_run(reference(), speed(25, 12), step_limit=3, wall_time_limit_seconds=120)
    assert estimate.takeover_steps == {"repo_only": 2, "raw_trace": 1}
    assert (estimate.model_calls, estimate.prompt_tokens_evaluated, estimate.completion_tokens) == (5, 15_900, 900)
    assert estimate.model_seconds == 225.0 + 172.5 + 112.5 + 28.5 + 172.5
    assert estimate.seconds == 711.0 + 643.0
    # The step limit cuts them too (at most the reference run's steps).
    assert qs.estimate_run(reference(), reference().speed, step_limit=1, wall_time_limit_seconds=3600).takeover_steps == {
        "repo_only": 1, "raw_trace": 1}


def test_the_estimate_says_what_it_is_made_of():
    work = reference()
    text = qs.describe_estimate(qs.estimate_run(work, speed(25, 12), step_limit=3, wall_time_limit_seconds=120),
                                work, 120)
    assert text == (
        "Expected here: about 22.6 min from now to the report. The work is known: 5 model calls of the 8 the defaults "
        "make with every step (at this speed the 120-second limit should end the takeover runs after repo_only 2, "
        "raw_trace 1 steps), 15,900 prompt tokens evaluated at ~25 tokens/s here and 900 generated at ~12.0 tokens/s "
        "(11.8 min), plus 10.7 min of replays, tests and grading. Measured with every step on a 2-core test CPU, "
        "whose start-up measured prompt 50 tokens/s, generation 12.0 tokens/s: 8 calls, 13.0 min.")


def test_progress_is_told_against_the_estimate():
    estimate = qs.estimate_run(reference(), speed(25, 12), step_limit=3, wall_time_limit_seconds=3600)  # 1,447.5 s
    assert estimate.call_seconds == [225.0, 172.5, 112.5, 28.5, 28.5, 172.5, 32.5, 32.5]
    assert qs.progress_phrase(estimate, 7, 250) == "call 7 of ~8, 4.2 of ~24.1 min"
    # The first two calls were expected to take 397.5 s: at 596.25 s the machine runs 1.5x slower than measured.
    assert qs.progress_phrase(estimate, 2, 700, 596.25) == (
        "call 2 of ~8, 11.7 of ~24.1 min; the calls took 1.5x their expected time")
    assert qs.progress_phrase(estimate, 9, 1500, 900) == "call 9 of ~8, 25.0 min, past the ~24.1 min expected"
    assert qs.progress_phrase(None, 7, 250) == ""
    assert qs.actual_phrase(estimate) == ""
    estimate.actual_seconds = 1500
    assert qs.actual_phrase(estimate) == "25.0 min; expected ~24.1 min (1.04x)"


def test_an_estimate_is_made_only_for_the_work_the_reference_run_did():
    work = reference()
    assert qs.estimate_note(work, dict(CONFIGURATION), resuming=False) is None
    # The wall-time limit is followed call by call, and fewer steps are the known steps' first ones.
    assert qs.estimate_note(work, {**CONFIGURATION, "wall_time_limit_seconds": 120, "step_limit": 2},
                            resuming=False) is None
    assert qs.estimate_note(work, {**CONFIGURATION, "step_limit": 9, "model": "mine"}, resuming=False) == (
        "the known work is the quickstart's with its defaults; this run differs in model, step_limit (the known "
        "work has 3 steps per run)")
    assert qs.estimate_note(work, dict(CONFIGURATION), resuming=True) == (
        "the output folder holds an earlier run's finished units, which this run reuses")


STARTUP = """\
llama_perf_context_print: prompt eval time =     700.00 ms /    36 tokens
llama_perf_context_print:        eval time =      80.00 ms /     1 runs
llama_perf_context_print:       total time =     800.00 ms /    37 tokens
llama_perf_context_print: prompt eval time =   9000.00 ms /   450 tokens
llama_perf_context_print:        eval time =      80.00 ms /     1 runs
llama_perf_context_print:       total time =    9100.00 ms /   451 tokens
Llama.generate: 3 prefix-match hit, remaining 27 prompt tokens to eval
llama_perf_context_print: prompt eval time =     500.00 ms /    27 tokens
llama_perf_context_print:        eval time =    4000.00 ms /    48 runs
llama_perf_context_print:       total time =    4600.00 ms /    75 tokens
"""
RUN = """\
llama_perf_context_print: prompt eval time =   60000.00 ms /  3000 tokens
llama_perf_context_print:        eval time =   10000.00 ms /   120 runs
llama_perf_context_print:       total time =   70500.00 ms /  3120 tokens
Llama.generate: 2990 prefix-match hit, remaining 400 prompt tokens to eval
llama_perf_context_print: prompt eval time =    9000.00 ms /   400 tokens
llama_perf_context_print:        eval time =    5000.00 ms /    60 runs
llama_perf_context_print:       total time =   14200.00 ms /   460 tokens
"""


def test_the_known_work_is_measured_from_a_finished_runs_files(tmp_path):
    (tmp_path / "quickstart.json").write_text(json.dumps({
        "ok": True, "out_dir": str(tmp_path), "configuration": CONFIGURATION, "run_seconds": 120.5,
        "speed": speed(44, 11).model_dump()}))
    (tmp_path / "model-server.log").write_text(STARTUP + RUN)  # the start-up requests are not the run's work
    unit = {"stage": "takeover", "view": "raw_trace", "instance_id": "pytest-dev__pytest-7521", "key": "k"}
    calls = [{"unit": {"stage": "view", "view": "summary_notes", "key": "n"}, "model": "m", "at": 1.0, "pid": 1,
              "attempt": 1, "status": "ok", "seconds": 70.5, "prompt_tokens": 3000, "completion_tokens": 120},
             {"unit": unit, "model": "m", "at": 3.0, "pid": 1, "attempt": 1, "status": "ok", "seconds": 14.2,
              "prompt_tokens": 3390, "completion_tokens": 60}]
    (tmp_path / "model-calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    work = qs.measure_work(tmp_path, machine="this test", measured="now", cpu_seconds=99.0)
    assert work.calls == [call("view summary_notes", 3000, 120, 60.0, 70.5), call("takeover raw_trace", 400, 60, 9.0, 14.2)]
    assert (work.prompt_tokens, work.wall_seconds, work.cpu_seconds) == (6390, 120.5, 99.0)
    assert work.speed == speed(44, 11) and work.configuration == CONFIGURATION
    # A timed-out attempt the server still answered: the two logs no longer pair up.
    timed_out = {**calls[1], "status": "timeout", "attempt": 1}
    (tmp_path / "model-calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in (calls[0], timed_out)))
    with pytest.raises(ValueError, match="the server answered 2 requests after its start-up, the call log has 1"):
        qs.measure_work(tmp_path, machine="m", measured="m")
    (tmp_path / "quickstart.json").write_text(json.dumps({"ok": False, "out_dir": str(tmp_path)}))
    with pytest.raises(ValueError, match="not a finished quickstart with its speed measured"):
        qs.measure_work(tmp_path, machine="m", measured="m")


def test_the_packaged_known_work_is_the_defaults_work():
    work = qs.load_known_work()
    identity = f"{DEFAULT_MODEL.alias} gguf-sha256:{DEFAULT_MODEL.sha256} n_ctx=16384 n_batch=512 flash_attn=true"
    defaults = qs.work_configuration(qs.QuickstartOptions(), identity)
    assert qs.estimate_note(work, defaults, resuming=False) is None
    # Measured with every step: a wall-time limit no takeover run reached.
    assert work.configuration["wall_time_limit_seconds"] > max(
        sum(c.seconds for c in calls) for unit, calls in work.units().items() if unit.startswith("takeover"))
    assert 0 < work.prompt_tokens_evaluated <= work.prompt_tokens and work.completion_tokens > 0
    assert 0 < work.model_seconds < work.wall_seconds
    assert work.model_calls >= 6  # two note writers and four takeover runs at least
    assert work.speed.prompt_tokens > 300  # the start-up's fixed prompt, evaluated whole


def test_the_console_tells_each_call_and_the_end_against_the_estimate(tmp_path):
    import io

    from rich.console import Console

    from takeover.cli.quickstart import ConsoleDisplay, print_results
    from takeover.llm import LoggedCall

    console = Console(file=io.StringIO(), width=300)  # a file: one plain line per call
    display = ConsoleDisplay(console)
    call = LoggedCall(unit={"stage": "takeover", "view": "raw_trace", "instance_id": "acme__calc-1", "key": "k"},
                      model="m", at=1.0, pid=1, attempt=1, status="ok", seconds=12.5, prompt_tokens=3000,
                      completion_tokens=160)
    estimate = qs.estimate_run(reference(), speed(25, 12), step_limit=3, wall_time_limit_seconds=3600)
    display.model_call(call, 1, qs.progress_phrase(estimate, 3, 250, 255.0))
    estimate.actual_seconds = 1500
    print_results(console, qs.QuickstartResult(ok=True, out_dir=str(tmp_path), report=str(tmp_path / "report.md"),
                                               estimate=estimate, total_seconds=1600))
    lines = console.file.getvalue().splitlines()
    assert lines[0].endswith(" model call 1 of takeover raw_trace (acme__calc-1): 3,000 prompt tokens, 160 completion "
                             "tokens, 12.5 s [call 3 of ~8, 4.2 of ~24.1 min; the calls took 0.5x their expected time]")
    assert "From the model being ready to the report: 25.0 min; expected ~24.1 min (1.04x) on this machine." in lines
