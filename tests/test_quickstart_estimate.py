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

CONFIGURATION = {"instance_ids": ["pytest-dev__pytest-7521"], "step_limit": 5, "model": "qwen gguf-sha256:abc"}


def reference(**changes) -> qs.KnownWork:
    """A reference run: 400 s evaluating 25,000 prompt tokens, 250 s more of model time for 2,700 generated
    tokens, 130 s of the rest, on a machine whose start-up measured 50 and 12 tokens/s."""
    return qs.KnownWork(**{
        "configuration": CONFIGURATION, "model_calls": 20, "prompt_tokens": 60_000, "prompt_tokens_evaluated": 25_000,
        "completion_tokens": 2_700, "model_prompt_seconds": 400.0, "model_seconds": 650.0, "wall_seconds": 780.0,
        "cpu_seconds": 1_250.0, "machine": "a 2-core test CPU", "measured": "by hand",
        "speed": MachineSpeed(prompt_tokens_per_second=50, generation_tokens_per_second=12, prompt_tokens=450,
                              generated_tokens=48, seconds=13),
        **changes})


def speed(prompt: float, generation: float) -> MachineSpeed:
    return MachineSpeed(prompt_tokens_per_second=prompt, generation_tokens_per_second=generation,
                        prompt_tokens=450, generated_tokens=48, seconds=10)


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


def test_on_the_reference_machine_the_estimate_is_the_reference_run():
    work = reference()
    estimate = qs.estimate_run(work, work.speed)
    assert (estimate.seconds, estimate.model_seconds, estimate.other_seconds) == (780.0, 650.0, 130.0)
    assert (estimate.prompt_rate, estimate.generation_rate) == (62.5, 10.8)  # the run's own rates


def test_a_slower_machine_scales_each_part_by_its_own_speed():
    # Prompts evaluated at half the speed, generation as fast: the prompt seconds and the rest (CPU-bound
    # like them) double, the generation's part stays.
    estimate = qs.estimate_run(reference(), speed(25, 12))
    assert (estimate.model_seconds, estimate.other_seconds, estimate.seconds) == (1050.0, 260.0, 1310.0)
    assert (estimate.prompt_rate, estimate.generation_rate) == (31.2, 10.8)
    # Generation at a third of the speed: its 250 s triple.
    assert qs.estimate_run(reference(), speed(50, 4)).model_seconds == 400.0 + 750.0
    assert (estimate.model_calls, estimate.prompt_tokens_evaluated, estimate.completion_tokens) == (20, 25_000, 2_700)


def test_the_estimate_says_what_it_is_made_of():
    work = reference()
    text = qs.describe_estimate(qs.estimate_run(work, speed(25, 12)), work)
    assert text == (
        "Expected here: about 21.8 min from now to the report. The work is known: 20 model calls, 25,000 prompt "
        "tokens evaluated at ~31 tokens/s here and 2,700 generated at ~10.8 tokens/s (17.5 min), plus 4.3 min of "
        "replays, tests and grading. Measured on a 2-core test CPU (prompt 50 tokens/s, generation 12.0 tokens/s): "
        "13.0 min.")


def test_progress_is_told_against_the_estimate():
    estimate = qs.estimate_run(reference(), speed(25, 12))  # 1,310 s
    assert qs.progress_phrase(estimate, 7, 250) == "call 7 of ~20, 4.2 of ~21.8 min"
    assert qs.progress_phrase(estimate, 23, 1400) == "call 23 of ~20, 23.3 min, past the ~21.8 min expected"
    assert qs.progress_phrase(None, 7, 250) == ""
    assert qs.actual_phrase(estimate) == ""
    estimate.actual_seconds = 1400
    assert qs.actual_phrase(estimate) == "23.3 min; expected ~21.8 min (1.07x)"


def test_an_estimate_is_made_only_for_the_work_the_reference_run_did():
    work = reference()
    assert qs.estimate_note(work, dict(CONFIGURATION), resuming=False) is None
    assert qs.estimate_note(work, {**CONFIGURATION, "step_limit": 9, "model": "mine"}, resuming=False) == (
        "the known work is the quickstart's with its defaults; this run differs in model, step_limit")
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
    calls = [{"model": "m", "at": 1.0, "pid": 1, "attempt": 1, "status": "ok", "seconds": 70.5, "prompt_tokens": 3000,
              "completion_tokens": 120},
             {"model": "m", "at": 2.0, "pid": 1, "attempt": 1, "status": "timeout", "seconds": 1.0},
             {"model": "m", "at": 3.0, "pid": 1, "attempt": 2, "status": "ok", "seconds": 14.2, "prompt_tokens": 3390,
              "completion_tokens": 60}]
    (tmp_path / "model-calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    work = qs.measure_work(tmp_path, machine="this test", measured="now", cpu_seconds=99.0)
    assert (work.model_calls, work.prompt_tokens, work.prompt_tokens_evaluated, work.completion_tokens) == (
        2, 6390, 3400, 180)
    assert (work.model_prompt_seconds, work.model_seconds, work.wall_seconds, work.cpu_seconds) == (
        69.0, 84.7, 120.5, 99.0)
    assert work.speed == speed(44, 11) and work.configuration == CONFIGURATION
    (tmp_path / "quickstart.json").write_text(json.dumps({"ok": False, "out_dir": str(tmp_path)}))
    with pytest.raises(ValueError, match="not a finished quickstart with its speed measured"):
        qs.measure_work(tmp_path, machine="m", measured="m")


def test_the_packaged_known_work_is_the_defaults_work():
    work = qs.load_known_work()
    identity = f"{DEFAULT_MODEL.alias} gguf-sha256:{DEFAULT_MODEL.sha256} n_ctx=16384 n_batch=512 flash_attn=true"
    assert work.configuration == qs.work_configuration(qs.QuickstartOptions(), identity)
    assert 0 < work.prompt_tokens_evaluated <= work.prompt_tokens and work.completion_tokens > 0
    assert 0 < work.model_prompt_seconds < work.model_seconds < work.wall_seconds
    assert work.model_calls >= 6  # two note writers and four takeover runs at least
    assert work.speed.prompt_tokens > 300  # the start-up's fixed prompt, evaluated whole
