"""Views as a registry (docs/protocol.md sections 7.7 and 7.8): the paper's four views keep their prompts byte
for byte and their keys; a view file in a scratch folder (no code added to takeover) goes through ``takeover views``;
a view file that shows what the predecessor never saw is refused in one line naming the file; a model-written view
file asks the note writer with its own prompt and schema; an entry point's view registers from an installed
distribution; ``trace_digest`` holds the diff, the files read and edited, and the last verification."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from _paper_view_digests import digests
from _views_support import (
    Replay,
    real_run,
    real_task,
    requests_1766_patches,
    requests_1766_points,
    requests_1766_points_file,
)
from conftest import DATASET, TRAJ
from prerequisites import requires
from typer.testing import CliRunner

from takeover.checkpoints import materialize_checkpoint
from takeover.claims.claim_rules import checks_claims
from takeover.cli import app
from takeover.errors import InputError
from takeover.experiments import load_experiment
from takeover.llm import ModelSettings, estimate_tokens
from takeover.sources.repos import RepoSource
from takeover.views import (
    HANDOFF_VIEWS,
    build_view,
    built_views,
    load_inputs,
    view_named,
    view_registry,
    write_views,
)
from takeover.vocabulary import VIEWS

ID = "psf__requests-1766"
FILE = TRAJ / "mini-swe-agent" / f"{ID}.json"

#: ``digests()`` computed on the source before views were a registry (main at 3c11868; how: the docstring of
#: tests/_paper_view_digests.py): prompts (sha256, 16 hex digits), views.json keys and view unit keys.
BEFORE = {
    "budgets/after_first_post_failure_edit/raw_trace/prompt": "203a365cfe0ac53b",
    "budgets/after_first_post_failure_edit/raw_trace/views_key": "0e5e668ff45f94c0",
    "budgets/after_first_post_failure_edit/repo_only/prompt": "5498c0565d376663",
    "budgets/after_first_post_failure_edit/repo_only/views_key": "3c1e2449976e3bb6",
    "budgets/after_first_post_failure_edit/structured_notes/prompt": "c2cc7dcd7a7c234f",
    "budgets/after_first_post_failure_edit/structured_notes/views_key": "54094609ad76d891",
    "budgets/after_first_post_failure_edit/summary_notes/prompt": "3ef49c83e2c3cc8d",
    "budgets/after_first_post_failure_edit/summary_notes/views_key": "a8d846d3218bf4ff",
    "budgets/after_first_source_edit/raw_trace/prompt": "c1bae0538abef5cd",
    "budgets/after_first_source_edit/raw_trace/views_key": "09f0f3f9bf55f0e2",
    "budgets/after_first_source_edit/repo_only/prompt": "5498c0565d376663",
    "budgets/after_first_source_edit/repo_only/views_key": "6b735beb03dc88ed",
    "budgets/after_first_source_edit/structured_notes/prompt": "820e0d690dd8c1ca",
    "budgets/after_first_source_edit/structured_notes/views_key": "0ff3bf9924711bc0",
    "budgets/after_first_source_edit/summary_notes/prompt": "3ef49c83e2c3cc8d",
    "budgets/after_first_source_edit/summary_notes/views_key": "b85f12e98c0790af",
    "budgets/after_first_verification_result/raw_trace/prompt": "99a445b12afbd884",
    "budgets/after_first_verification_result/raw_trace/views_key": "411b19c214e4ac05",
    "budgets/after_first_verification_result/repo_only/prompt": "5498c0565d376663",
    "budgets/after_first_verification_result/repo_only/views_key": "61a34dd45a47d4ee",
    "budgets/after_first_verification_result/structured_notes/prompt": "3a1712a211f90723",
    "budgets/after_first_verification_result/structured_notes/views_key": "45560b1945431c42",
    "budgets/after_first_verification_result/summary_notes/prompt": "3ef49c83e2c3cc8d",
    "budgets/after_first_verification_result/summary_notes/views_key": "02a8ca8aae86fe94",
    "budgets/raw_trace/unit_key": "d07c643d6817ff2f",
    "budgets/repo_only/unit_key": "dd7400f5335bd8e9",
    "budgets/structured_notes/unit_key": "afc6e43909c6b36d",
    "budgets/summary_notes/unit_key": "18f603f66221b2e7",
    "default/after_first_post_failure_edit/raw_trace/prompt": "47abd0a2ef5d808d",
    "default/after_first_post_failure_edit/raw_trace/views_key": "2ef30be05a9ee72a",
    "default/after_first_post_failure_edit/repo_only/prompt": "5498c0565d376663",
    "default/after_first_post_failure_edit/repo_only/views_key": "3c1e2449976e3bb6",
    "default/after_first_post_failure_edit/structured_notes/prompt": "c2cc7dcd7a7c234f",
    "default/after_first_post_failure_edit/structured_notes/views_key": "596cc6aec3f1c76f",
    "default/after_first_post_failure_edit/summary_notes/prompt": "3ef49c83e2c3cc8d",
    "default/after_first_post_failure_edit/summary_notes/views_key": "0f76820fd4f6cbae",
    "default/after_first_source_edit/raw_trace/prompt": "dc0ea9da431674ee",
    "default/after_first_source_edit/raw_trace/views_key": "8b5c8a56bcb69c1d",
    "default/after_first_source_edit/repo_only/prompt": "5498c0565d376663",
    "default/after_first_source_edit/repo_only/views_key": "6b735beb03dc88ed",
    "default/after_first_source_edit/structured_notes/prompt": "820e0d690dd8c1ca",
    "default/after_first_source_edit/structured_notes/views_key": "6ecb55db4dd7b9d5",
    "default/after_first_source_edit/summary_notes/prompt": "3ef49c83e2c3cc8d",
    "default/after_first_source_edit/summary_notes/views_key": "e9992fa9afc91813",
    "default/after_first_verification_result/raw_trace/prompt": "52795655ff60cb7d",
    "default/after_first_verification_result/raw_trace/views_key": "a71cfe7cc485c6c9",
    "default/after_first_verification_result/repo_only/prompt": "5498c0565d376663",
    "default/after_first_verification_result/repo_only/views_key": "61a34dd45a47d4ee",
    "default/after_first_verification_result/structured_notes/prompt": "3a1712a211f90723",
    "default/after_first_verification_result/structured_notes/views_key": "04d89e154a086d04",
    "default/after_first_verification_result/summary_notes/prompt": "3ef49c83e2c3cc8d",
    "default/after_first_verification_result/summary_notes/views_key": "0550b6478109b6e6",
    "default/raw_trace/unit_key": "be9ea17ce791015d",
    "default/repo_only/unit_key": "dd7400f5335bd8e9",
    "default/structured_notes/unit_key": "77c0b5ed6bb68f44",
    "default/summary_notes/unit_key": "ed9d0378565fc085",
}

PROGRESS = """
name = "progress_file"
description = "what a progress file would say"
inputs = ["task", "checkpoint"]
template = \'\'\'
Progress file left by the previous agent.
Changed source files: {{ point.changed_source_files | join(", ") or "none" }}
Last check: {{ point.latest_verification_command or "none" }} ({{ point.latest_verification_result or "no result" }})
Status: {{ facts.continuation_label }}
\'\'\'
"""


@pytest.fixture(autouse=True)
def _unregister_scratch_views():
    before = dict(HANDOFF_VIEWS)
    yield
    for name in [n for n in HANDOFF_VIEWS if n not in before]:
        HANDOFF_VIEWS.remove(name)


def invoke(*args: str):
    return CliRunner().invoke(app, ["views", str(FILE), "--dataset", str(DATASET), *args], catch_exceptions=False)


def test_paper_views_keep_their_prompts_byte_for_byte_and_their_keys():
    assert digests() == BEFORE


def test_the_paper_views_are_the_default_and_trace_digest_is_registered():
    assert tuple(HANDOFF_VIEWS)[:4] == VIEWS and HANDOFF_VIEWS.default == "repo_only"
    assert "trace_digest" in HANDOFF_VIEWS
    assert [checks_claims(v) for v in (*VIEWS, "trace_digest")] == [False, False, True, True, False]


def test_a_view_file_in_a_scratch_folder_goes_through_takeover_views(tmp_path):
    (tmp_path / "progress.toml").write_text(PROGRESS)
    points_file = requests_1766_points_file(tmp_path)
    out = tmp_path / "views"
    result = invoke("--point-type", "after_first_source_edit", "--points-file", str(points_file), "--out-dir", str(out),
                    "--view", "repo_only", "--view", str(tmp_path / "progress.toml"), "--view", "trace_digest")
    assert result.exit_code == 0, result.output
    prompt = (out / "progress_file.md").read_text()
    assert '<previous_agent view="progress_file">' in prompt
    assert "Changed source files: requests/auth.py\nLast check: python3 reproduce_issue.py (passed)" in prompt
    index = json.loads((out / "views.json").read_text())
    row = index["views"]["progress_file"]
    assert row["characters"] == len(prompt) and row["estimated_tokens"] == estimate_tokens(prompt)
    assert row["note_tokens"] is None and row["validation"] == "not_applicable"
    # sizes side by side: every view's characters, tokens and note tokens in one table
    assert all(name in result.output for name in ("repo_only", "progress_file", "trace_digest", "note tokens"))
    assert not checks_claims("progress_file")


def test_editing_a_view_file_changes_its_key_and_moving_it_does_not(tmp_path):
    run, task = real_run(ID), real_task(ID)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "progress.toml").write_text(PROGRESS)
    first = view_named(str(tmp_path / "a" / "progress.toml"))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "progress.toml").write_text(PROGRESS)
    assert view_named(str(tmp_path / "b" / "progress.toml")).definition() == first.definition()
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "progress.toml").write_text(PROGRESS.replace("Status:", "State:"))
    with pytest.raises(InputError, match="the view name 'progress_file' is taken by"):
        view_named(str(tmp_path / "c" / "progress.toml"))
    HANDOFF_VIEWS.remove("progress_file")
    edited = view_named(str(tmp_path / "c" / "progress.toml"))
    assert edited.definition() != first.definition()
    point = requests_1766_points()["after_first_source_edit"]
    built = build_view(edited, run, point, task, requests_1766_patches()[point.type])
    assert "State: needs verification" in built.prompt


def test_a_view_file_that_shows_a_later_event_is_refused_naming_the_file(tmp_path):
    later = "I should verify if there are any existing tests for Digest Auth that I might have broken."
    assert later in real_run(ID).events[20].text  # event 20: after the cut at event 14
    view_file = tmp_path / "peek.toml"
    view_file.write_text(f'template = "What comes next: {later}"\n')
    points_file = requests_1766_points_file(tmp_path)
    result = invoke("--point-type", "after_first_source_edit", "--points-file", str(points_file),
                    "--out-dir", str(tmp_path / "out"), "--view", str(view_file))
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and str(view_file) in lines[0] and "later_event" in lines[0], result.output
    # an event after the cut is not even there to be read: the template fails, naming the file
    (tmp_path / "index.toml").write_text('template = "{{ events[20].text }}"\n')
    point = requests_1766_points()["after_first_source_edit"]
    with pytest.raises(InputError, match="index.toml.*undefined variable"):
        build_view(str(tmp_path / "index.toml"), real_run(ID), point, real_task(ID))


def test_a_model_written_view_file_asks_the_writer_with_its_prompt_and_schema(tmp_path):
    view_file = tmp_path / "diary.toml"
    view_file.write_text(textwrap.dedent('''
        name = "diary"
        template = "Done so far: {{ notes.done }}\\nNext: {{ notes.next }}"
        [writer]
        prompt = "Task: {{ problem_statement[:60] }}\\n{{ rendered_events | length }} events. Write the diary."
        schema = { type = "object", properties = { done = { type = "string" }, next = { type = "string" } }, required = ["done", "next"] }
    '''))
    run, task = real_run(ID), real_task(ID)
    point = requests_1766_points()["after_first_source_edit"]
    replay = Replay()
    with replay.server:
        replay.script([{"content": "not json"},
                       {"content": json.dumps({"done": "edited requests/auth.py", "next": "run reproduce_issue.py"})}])
        model = ModelSettings(model="scripted", base_url=replay.base_url, retries=0)
        built = build_view(str(view_file), run, point, task, requests_1766_patches()[point.type], model=model,
                           view_options={"note_max_tokens": 300})
        requests = replay.requests
    assert checks_claims("diary")
    assert requests[0]["messages"][1]["content"].endswith("15 events. Write the diary.")
    assert requests[0]["max_tokens"] == 300 and requests[0]["temperature"] == 0
    assert "response_format" in requests[0]
    assert built.block == "Done so far: edited requests/auth.py\nNext: run reproduce_issue.py"
    assert built.validation == "retried" and built.attempts == 2 and built.note_usage.calls == 2
    assert built.rejections == ["attempt 1: the answer is not JSON (Expecting value)"]


def test_an_entry_point_view_registers_from_an_installed_distribution(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "scratch_views").mkdir(parents=True)
    (site / "scratch_views" / "__init__.py").write_text(textwrap.dedent('''
        from takeover.views import HandoffView, ViewBlock

        class LastCommand(HandoffView):
            name = "last_command"
            inputs = ("events",)

            def build(self, handoff, options, writer):
                commands = [e.command for e in handoff.events if e.command]
                return ViewBlock(block=f"Last command: {commands[-1]}")
    '''))
    info = site / "scratch_views-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: scratch-views\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[takeover.views]\nlast_command = scratch_views:LastCommand\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(view_registry, "_loaded_entry_points", set())
    monkeypatch.delitem(sys.modules, "scratch_views", raising=False)
    point = requests_1766_points()["after_first_source_edit"]
    built = build_view("last_command", real_run(ID), point, real_task(ID))
    assert built.block.startswith("Last command: ") and "last_command" in HANDOFF_VIEWS
    assert not checks_claims("last_command")


def test_trace_digest_holds_the_diff_the_files_and_the_last_verification():
    run, task = real_run(ID), real_task(ID)
    point = requests_1766_points()["after_first_post_failure_edit"]
    built = build_view("trace_digest", run, point, task, requests_1766_patches()[point.type])
    block = built.block
    assert "Last verification command: python3 test_requests.py\nIts result: failed" in block
    assert "Failure line of its output: FAILED (errors=1)" in block
    assert "Files it edited: reproduce_issue.py, requests/auth.py" in block
    assert "requests/auth.py" in block.split("Files it read: ")[1].splitlines()[0]
    assert "+++ b/reproduce_issue.py" in block
    assert built.note_usage is None and built.attempts == 0


def test_unknown_views_and_options_are_refused_by_name(tmp_path):
    with pytest.raises(InputError, match="unknown view 'diary'; the views are repo_only, raw_trace, summary_notes, structured_notes, trace_digest"):
        view_named("diary")
    point = requests_1766_points()["after_first_source_edit"]
    with pytest.raises(InputError, match=r"view_options.raw_trace.max_chars.*unknown option"):
        build_view("raw_trace", real_run(ID), point, real_task(ID), view_options={"max_chars": 3})


def test_each_view_takes_its_own_options_from_the_experiment_file_and_the_command_line(tmp_path):
    (tmp_path / "progress.toml").write_text(PROGRESS)
    base = 'out_dir = "o"\nviews = ["raw_trace", "./progress.toml"]\n[dataset]\npath = "d.jsonl"\n' \
           '[predecessor]\ntrajectories = ["runs"]\n[[successors]]\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n'
    experiment = tmp_path / "exp.toml"
    experiment.write_text(base + "[view_budgets]\nnote_max_tokens = 900\n[view_options.raw_trace]\nraw_trace_max_chars = 5000\n")
    config = load_experiment(experiment)
    assert config.view_names == ["raw_trace", "progress_file"]
    assert config.options_of("raw_trace") == {"raw_trace_max_chars": 5000} and config.options_of("progress_file") == {}
    for table, words in (("[view_options.raw_trace]\nmax_chars = 5\n", "view_options.raw_trace.max_chars: unknown option"),
                         ("[view_options.summary_notes]\nnote_max_tokens = 500\n", "not a view of this study")):
        experiment.write_text(base + table)
        with pytest.raises(InputError, match=words):
            load_experiment(experiment)
    points_file = requests_1766_points_file(tmp_path)
    out = tmp_path / "views"
    result = invoke("--point-type", "after_first_source_edit", "--points-file", str(points_file), "--out-dir", str(out),
                    "--view", "raw_trace", "--view-option", "raw_trace.raw_trace_max_chars=3000")
    assert result.exit_code == 0, result.output
    assert json.loads((out / "views.json").read_text())["views"]["raw_trace"]["dropped_events"] > 0


@requires("inspect_ai")
def test_the_exports_take_any_view_that_was_built(tmp_path):
    """Harbor and Inspect export a view file's view from the checkpoint folder alone (in their own process the
    file is not registered); a name neither built nor registered is refused."""
    from takeover.harbor.task_folder import export_task
    from takeover.inspect_task.dataset import handoff_samples

    task, point = real_task(ID), requests_1766_points()["after_first_source_edit"]
    folder = tmp_path / "cps" / "cp"
    materialize_checkpoint(task, real_run(ID), point, requests_1766_patches()[point.type], folder, "verified_replay",
                           workspace=False)
    (tmp_path / "progress.toml").write_text(PROGRESS)
    write_views(load_inputs(FILE, None, DATASET, checkpoint_dir=folder),
                ["repo_only", "trace_digest", str(tmp_path / "progress.toml")], folder / "views")
    HANDOFF_VIEWS.remove("progress_file")
    assert built_views(folder) == ["repo_only", "trace_digest", "progress_file"]
    samples = handoff_samples(tmp_path / "cps", ["trace_digest", "progress_file"])
    assert [s.id.rsplit("/", 1)[1] for s in samples] == ["trace_digest", "progress_file"]
    assert samples[1].input == (folder / "views" / "progress_file.md").read_text()
    exported = export_task(folder, "progress_file", task, tmp_path / "harbor", repo_source=RepoSource(None, offline=True))
    assert exported.name.endswith("__progress_file")
    with pytest.raises(InputError, match="unknown view 'nope'"):
        handoff_samples(tmp_path / "cps", ["nope"])
    with pytest.raises(InputError, match="unknown view 'nope'"):
        export_task(folder, "nope", task, tmp_path / "harbor")
