"""Output when nobody watches a terminal: with stdout and stderr going to pipes, the commands with long work
print one plain line per finished unit and per stage (time of day, counts, seconds, tokens), no live
display, and no INFO lines of other libraries unless --verbose.

The commands run as a user runs them (``python -m takeover ...`` in a subprocess) on a small synthetic task:
a one-file repository in a mirror, a predecessor run recorded by the agent against the scripted model."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, make_repo
from test_experiment_e2e import CALC, PREDECESSOR, SUCCESSOR, TESTS

from takeover.agents import RunLimits
from takeover.agents.runs import run_predecessor
from takeover.experiments.engine import InlineExecutor, run_units
from takeover.experiments.progress import ProgressLines
from takeover.experiments.units import UnitSpec
from takeover.llm import ModelSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.testing.engine_units import fail_unless_file, record_call
from takeover.testing.scripted_server import ScriptedServer

TIME = r"\d\d:\d\d:\d\d"
FIX_PATCH = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"


def test_progress_lines_say_each_unit_and_stage(tmp_path):
    out, log, stream = tmp_path / "out", tmp_path / "calls.jsonl", io.StringIO()
    specs = [UnitSpec(stage="demo", fn=record_call, inputs={"value": v, "log": str(log)},
                      labels={"instance_id": f"acme__calc-{v}", "view": "raw_trace"}) for v in (1, 2)]
    specs.append(UnitSpec(stage="demo", fn=fail_unless_file, inputs={"ok_file": str(tmp_path / "no"), "kind": "agent",
                                                                     "prompt_tokens": 7},
                          labels={"instance_id": "acme__calc-3"}))
    run_units(specs, out, InlineExecutor(), progress=ProgressLines(stream=stream))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 5, lines
    assert re.fullmatch(rf"{TIME} demo: 3 unit\(s\) planned, 0 reused, 3 to run", lines[0])
    assert re.fullmatch(rf"{TIME} demo 1/3 done \d+\.\d s 2 tokens: acme__calc-1 raw_trace", lines[1])
    assert re.fullmatch(rf"{TIME} demo 2/3 done \d+\.\d s 3 tokens: acme__calc-2 raw_trace", lines[2])
    assert re.fullmatch(rf"{TIME} demo 3/3 failed \(agent\) \d+\.\d s 7 tokens: acme__calc-3: .*no is missing", lines[3])
    assert re.fullmatch(rf"{TIME} demo: stage done in \d+\.\d s: 2 done, 1 failed, 12 tokens", lines[4])
    # Everything reused: one line for the plan and one for the stage.
    stream.truncate(0)
    stream.seek(0)
    run_units(specs, out, InlineExecutor(), progress=ProgressLines(stream=stream))
    lines = stream.getvalue().splitlines()
    assert [re.sub(TIME, "T", line) for line in lines] == [
        "T demo: 3 unit(s) planned, 3 reused, 0 to run",
        "T demo: stage done in 0.0 s: 2 done, 1 failed (3 reused), 12 tokens"]


def _script(request: dict, n: int) -> dict:
    """The predecessor's commands, then a takeover run per view as in the synthetic experiment."""
    first = request["messages"][1]["content"] if len(request["messages"]) > 1 else ""
    step = sum(1 for m in request["messages"] if m["role"] == "assistant")
    answers = PREDECESSOR
    if "<takeover_instructions>" in first:
        answers = SUCCESSOR["raw_trace" if '<previous_agent view="raw_trace">' in first else "repo_only"]
    return answers[min(step, len(answers) - 1)]


@pytest.fixture
def recorded(tmp_path):
    """``(root, server)``: tasks.jsonl with acme__calc-1, its mirror, and the predecessor's recorded run in
    ``root/runs/acme__calc-1`` (takeover's run format); the scripted server keeps running for the test."""
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": CALC}, bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    scratch, _ = make_repo(tmp_path / "scratch", {"calc.py": CALC})
    (scratch / "test_calc.py").write_text(TESTS)
    git(scratch, "add", "-N", "test_calc.py")
    task = SourceTask(instance_id="acme__calc-1", repo="acme/calc", base_commit=sha, version="0.1",
                      problem_statement="add() returns a - b; it must return the sum a + b.",
                      test_patch=git(scratch, "diff"), FAIL_TO_PASS=["test_calc.py::test_add"],
                      PASS_TO_PASS=["test_calc.py::test_sub"],
                      takeover_env_spec={"python": None, "test_cmd": "pytest -rA", "log_parser": "pytest"})
    (tmp_path / "tasks.jsonl").write_text(task.model_dump_json() + "\n")
    with ScriptedServer(_script) as srv:
        model = ModelSettings(model="openai/scripted", base_url=srv.base_url, api_key_env=None, retries=0)
        run_predecessor(task, model, tmp_path / "runs" / "acme__calc-1", repo_source=RepoSource(tmp_path / "mirror"),
                        limits=RunLimits(step_limit=8))
        yield tmp_path, srv


def _takeover(root: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m takeover ARGS`` with stdout and stderr to pipes (nobody watches)."""
    return subprocess.run([sys.executable, "-m", "takeover", *args], check=False, cwd=root, capture_output=True, text=True,
                          timeout=900, env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home()),
                                            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                                            "TAKEOVER_CACHE": os.environ["TAKEOVER_CACHE"]})


def _no_live_display_or_library_info(done: subprocess.CompletedProcess) -> None:
    lines = (done.stdout + done.stderr).splitlines()
    # No terminal control codes and no live table of units; no INFO lines of other libraries.
    assert [line for line in lines if "\x1b[" in line or "┃ running" in line] == []
    assert [line for line in lines if "HTTP Request:" in line or " INFO " in line or "INFO:" in line] == []


@pytest.mark.slow
def test_quickstart_to_a_pipe_prints_a_line_per_step_unit_and_stage(recorded):
    root, srv = recorded
    done = _takeover(root, "quickstart", "--dataset", "tasks.jsonl", "--trajectories", "runs/acme__calc-1",
                     "--instance-id", "acme__calc-1", "--mirror", "mirror", "--offline", "--model", "openai/scripted",
                     "--base-url", srv.base_url, "--view", "repo_only", "--view", "raw_trace", "--step-limit", "4",
                     "--out-dir", "qs")
    assert done.returncode == 0, done.stderr[-3000:]
    err = done.stderr.splitlines()
    for pattern in (
        rf"{TIME} inputs: dataset rows and predecessor trajectories",
        rf"{TIME} done inputs: 0\.\d s — .*",
        rf"{TIME} environment: 1 unit\(s\) planned, [01] reused, [01] to run",
        rf"{TIME} predecessor 1/1 done \d+\.\d s 0 tokens: acme__calc-1",
        rf"{TIME} checkpoint 1/1 done \d+\.\d s 0 tokens: acme__calc-1 after_first_source_edit",
        (rf"{TIME} takeover [12]/2 done \d+\.\d s [\d,]+ tokens: acme__calc-1 after_first_source_edit raw_trace "
        r"openai/scripted"),
        rf"{TIME} takeover: stage done in \d+\.\d s: 2 done, 0 failed, [\d,]+ tokens",
        rf"{TIME} grade: stage done in \d+\.\d s: 2 done, 0 failed, 0 tokens",
        rf"{TIME} done report: \d+\.\d s — .*",
    ):
        assert any(re.fullmatch(pattern, line) for line in err), (pattern, err)
    _no_live_display_or_library_info(done)
    assert "takeover runs per view (this quickstart)" in done.stderr  # the closing tables are still printed
    assert f"open {root / 'qs' / 'report.html'} in a browser" in " ".join(done.stderr.split())


@pytest.mark.slow
def test_points_grade_and_views_to_a_pipe_print_a_line_per_item(recorded):
    root, _ = recorded
    points = _takeover(root, "points", "runs", "--dataset", "tasks.jsonl", "--mirror", "mirror", "--offline", "--json")
    assert points.returncode == 0, points.stderr[-3000:]
    assert json.loads(points.stdout.splitlines()[0])["instance_id"] == "acme__calc-1"  # stdout stays JSON Lines
    assert re.search(rf"^{TIME} points 1/1 files: acme__calc-1 replay verified \(\w+\), 3 point\(s\), 0 missing, "
                     rf"\d+\.\d s: runs/acme__calc-1$", points.stderr, re.MULTILINE), points.stderr

    preds = root / "preds.jsonl"
    preds.write_text("".join(json.dumps({"instance_id": "acme__calc-1", "model_name_or_path": name,
                                         "model_patch": patch}) + "\n"
                             for name, patch in (("fix", FIX_PATCH), ("none", ""))))
    graded = _takeover(root, "grade", "--dataset", "tasks.jsonl", "--predictions", "preds.jsonl", "--mirror", "mirror",
                       "--offline", "--out-dir", str(root / "grades"))
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    lines = [line for line in graded.stderr.splitlines() if re.match(rf"{TIME} grade ", line)]
    assert len(lines) == 2, graded.stderr
    assert re.fullmatch(rf"{TIME} grade 1/2 resolved \(\w+\), environment \d+\.\d s, tests \d+\.\d s: acme__calc-1",
                        lines[0])
    assert re.fullmatch(rf"{TIME} grade 2/2 not resolved \(\w+\), environment .*: acme__calc-1", lines[1])

    views = _takeover(root, "views", "runs/acme__calc-1", "--point-type", "after_first_source_edit", "--dataset",
                      "tasks.jsonl", "--mirror", "mirror", "--offline", "--view", "repo_only", "--view", "raw_trace",
                      "--out-dir", "views")
    assert views.returncode == 0, views.stderr[-3000:]
    assert re.search(rf"^{TIME} views 1/2 repo_only written \(\w+\), \d+\.\d s, 0 note tokens$", views.stderr,
                     re.MULTILINE), views.stderr
    assert re.search(rf"^{TIME} views 2/2 raw_trace written", views.stderr, re.MULTILINE)
    for done in (points, graded, views):
        _no_live_display_or_library_info(done)
