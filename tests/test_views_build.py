"""repo_only and raw_trace views and the takeover prompt, built from a real mini-swe-agent run
(docs/protocol.md section 7)."""

from __future__ import annotations

import re

import pytest
from _views_support import real_run, real_task, requests_1766_points

from takeover.errors import InputError
from takeover.llm import estimate_tokens
from takeover.view_budgets import ViewBudgets
from takeover.views import ModelRequired, build_view, task_prompt
from takeover.views.evidence import render_event

ID = "psf__requests-1766"


@pytest.fixture(scope="module")
def run():
    return real_run(ID)


@pytest.fixture(scope="module")
def task():
    return real_task(ID)


@pytest.fixture(scope="module")
def points():
    return requests_1766_points()


def sections(prompt: str) -> list[str]:
    return re.findall(r"^<(takeover_instructions|previous_agent|original_task)\b", prompt, re.MULTILINE)


def test_task_prompt_renders_the_problem_statement(task):
    text = task_prompt(task)
    assert task.problem_statement.strip() in text
    assert "psf/requests" in text
    assert text.count("<issue>") == 1


def test_repo_only_is_preamble_plus_original_task(run, task, points, checkpoint_patch):
    result = build_view("repo_only", run, points["after_first_source_edit"], task, checkpoint_patch)
    assert sections(result.prompt) == ["takeover_instructions", "original_task"]
    assert result.block == ""
    assert result.prompt.rstrip().endswith("</original_task>")
    assert task_prompt(task) in result.prompt
    assert "historical evidence" not in result.prompt  # no handoff text to qualify
    assert "another agent began and did not finish" in result.prompt
    assert result.characters == len(result.prompt)
    assert result.estimated_tokens == estimate_tokens(result.prompt)
    assert (result.validation, result.attempts, result.note_usage) == ("not_applicable", 0, None)


def test_raw_trace_has_every_event_up_to_and_including_the_handoff_event(run, task, points, checkpoint_patch):
    point = points["after_first_source_edit"]
    result = build_view("raw_trace", run, point, task, checkpoint_patch)
    assert sections(result.prompt) == ["takeover_instructions", "previous_agent", "original_task"]
    assert "historical evidence" in result.prompt and "not" in result.prompt
    headers = re.findall(r"^\[step (\d+) \| (agent|environment|user) \| (\w+)\]$", result.block, re.MULTILINE)
    assert [int(h[0]) for h in headers] == list(range(1, point.event_index + 2))
    assert headers[0] == ("1", "agent", "command") and headers[-1] == ("15", "agent", "command")
    for event in run.events[: point.event_index + 1]:
        assert render_event(event) in result.block
    assert render_event(run.events[point.event_index + 1]) not in result.prompt
    assert "(15 events)" in result.block and result.dropped_events == 0


def test_raw_trace_budget_keeps_the_newest_events_and_says_how_many_were_dropped(run, task, points, checkpoint_patch):
    point = points["after_first_post_failure_edit"]
    full = build_view("raw_trace", run, point, task, checkpoint_patch)
    cut = build_view("raw_trace", run, point, task, checkpoint_patch, view_budgets=ViewBudgets(raw_trace_max_chars=4000))
    steps = [int(s) for s in re.findall(r"^\[step (\d+) \|", cut.block, re.MULTILINE)]
    assert steps[-1] == point.event_index + 1 and steps == list(range(steps[0], steps[-1] + 1))
    assert cut.dropped_events == steps[0] - 1 > 0
    assert f"[... {cut.dropped_events} earlier events omitted ...]" in cut.block
    # A budgeted trace does not call itself complete; the whole one does.
    assert "The most recent part of the previous agent's event log" in cut.block and "complete" not in cut.block
    assert full.block.split("\n", 1)[0].startswith("The complete event log of the previous agent")
    entries = sum(len(render_event(e)) + 2 for e in run.events[steps[0] - 1 : point.event_index + 1])
    assert entries <= 4000
    assert cut.characters < full.characters
    by_tokens = build_view("raw_trace", run, point, task, checkpoint_patch, view_budgets=ViewBudgets(raw_trace_max_tokens=500))
    assert by_tokens.dropped_events > 0 and "500 estimated tokens" in by_tokens.block


def test_user_templates_override_the_packaged_ones(tmp_path, run, task, points):
    (tmp_path / "preamble.md.j2").write_text("CUSTOM PREAMBLE for {{ view }}\n")
    result = build_view("raw_trace", run, points["after_first_source_edit"], task, template_dir=tmp_path)
    assert "CUSTOM PREAMBLE for raw_trace" in result.prompt
    assert "another agent began" not in result.prompt
    assert "[step 1 | agent | command]" in result.prompt  # the other templates are still the packaged ones


def test_a_template_with_an_undefined_variable_is_an_input_error(tmp_path, run, task, points):
    (tmp_path / "task_prompt.md.j2").write_text("{{ problem_statment }}\n")
    with pytest.raises(InputError, match="undefined"):
        build_view("repo_only", run, points["after_first_source_edit"], task, template_dir=tmp_path)


def test_notes_views_need_a_model(run, task, points):
    with pytest.raises(ModelRequired, match="a model is needed"):
        build_view("summary_notes", run, points["after_first_source_edit"], task)


def test_point_outside_the_run_is_rejected(run, task, points):
    bad = points["after_first_source_edit"].model_copy(update={"event_index": len(run.events)})
    with pytest.raises(ValueError, match="outside the trajectory"):
        build_view("raw_trace", run, bad, task)


def test_secrets_the_predecessor_printed_are_masked_in_views(task, points):
    from takeover.trajectories.events import Event, Trajectory

    key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
    run = Trajectory(format="takeover", instance_id=ID, events=[
        Event(index=0, kind="action", source="agent", type="command", text="env | grep KEY", command="env | grep KEY"),
        Event(index=1, kind="observation", source="environment", type="command", text=f"OPENAI_API_KEY={key}"),
    ])
    point = points["after_first_source_edit"].model_copy(update={"event_index": 1})
    result = build_view("raw_trace", run, point, task)
    assert key not in result.prompt and "OPENAI_API_KEY=[REDACTED]" in result.prompt
