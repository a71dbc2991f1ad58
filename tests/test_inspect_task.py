"""Handoff points as an Inspect task: ``inspect eval takeover/handoff`` on two points (a point type and a
cut at an event) x two views with Inspect's ``mockllm`` model in the ``local`` sandbox writes a log whose
samples carry the point's metadata and the scorer's resolved, agent events and prompt tokens, and
``takeover report`` puts those runs in the same tables as its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _mini_swe_agent import write_1x
from conftest import make_repo
from prerequisites import requires

from takeover.checkpoints import materialize_checkpoint
from takeover.points import analyze_run, checkpoint_method, cut_at_event
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.trajectories import read_trajectory
from takeover.views import load_inputs, write_views

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
TEST_PATCH = """diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,5 +1,9 @@
-from calc import mul
+from calc import add, mul
 
 
 def test_mul():
     assert mul(2, 3) == 6
+
+
+def test_add():
+    assert add(2, 3) == 5
"""
SPEC = {"python": None, "test_cmd": "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 pytest -rA -p no:cacheprovider", "log_parser": "pytest"}
#: A wrong edit (event 2), a failing check (event 5), the fix (event 6), a passing check (event 9).
STEPS = [
    ("ls", "calc.py\ntests", 0),
    ("sed -i 's/a - b/a * b/' calc.py", "", 0),
    ("python3 check_calc.py", "1 failed", 1),
    ("sed -i '0,/a \\* b/s//a + b/' calc.py", "", 0),
    ("python3 check_calc.py", "1 passed", 0),
]
INSPECT = Path(sys.executable).with_name("inspect")


@pytest.fixture
def checkpoints(tmp_path, monkeypatch):
    """Two checkpoint folders with their repo_only and raw_trace views: the cut after event 3 (the wrong
    edit) and the after_first_post_failure_edit point (event 6, the fix); and the dataset holding the task."""
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    src, sha = make_repo(tmp_path / "src", {"calc.py": CALC, "tests/test_calc.py": TESTS, "conftest.py": ""},
                         bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    (src / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    gold = subprocess.run(["git", "diff"], cwd=src, capture_output=True, text=True, check=True).stdout
    row = {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "problem_statement": "add subtracts",
           "version": "0.1", "patch": gold, "test_patch": TEST_PATCH, "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
           "PASS_TO_PASS": ["tests/test_calc.py::test_mul"], "takeover_env_spec": SPEC}
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(row) + "\n")
    task = SourceTask.model_validate(row)
    source = RepoSource(tmp_path / "mirror", offline=True)
    run = write_1x(tmp_path / "run.json", "acme__calc-1", STEPS, gold)
    traj = read_trajectory(run)
    rp = analyze_run(traj, task, source, replay=ReplaySettings(use_environment=False, timeout=30))
    post = rp.point("after_first_post_failure_edit")
    cut = cut_at_event(traj, task, 3, source, replay=ReplaySettings(use_environment=False, timeout=30))
    for name, point, patch in (("event-3", cut.point, cut.patch), ("post-failure", post, rp.patches[post.type])):
        folder = tmp_path / "cps" / name
        materialize_checkpoint(task, traj, point, patch, folder, checkpoint_method(rp.replay), repo_source=source,
                               workspace=False)
        write_views(load_inputs(run, None, dataset, checkpoint_dir=folder), ["repo_only", "raw_trace"], folder / "views")
    return tmp_path / "cps", dataset, tmp_path / "mirror"


@requires("inspect_ai")
@pytest.mark.timeout(900)
def test_inspect_eval_of_the_handoff_task_is_read_back_by_takeover_report(checkpoints, tmp_path):
    from inspect_ai.log import read_eval_log

    from takeover.report import build_report

    cps, dataset, mirror = checkpoints
    out = tmp_path / "study"
    proc = subprocess.run(
        [str(INSPECT), "eval", "takeover/handoff", "-T", f"checkpoints={cps}", "-T", f"dataset={dataset}",
         "-T", "views=repo_only,raw_trace", "-T", f"mirror={mirror}", "-T", "offline=true",
         "--model", "mockllm/model", "--message-limit", "6", "--log-dir", str(out / "logs"), "--display", "none"],
        capture_output=True, text=True, timeout=800, check=False,
        # offline, and without the vocabulary folder this process may have chosen: the task finds its own
        env={k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    logs = sorted((out / "logs").glob("*.eval"))
    assert len(logs) == 1
    log = read_eval_log(str(logs[0]))
    assert log.status == "success" and len(log.samples) == 4
    by_id = {s.id: s for s in log.samples}
    assert sorted(by_id) == ["acme__calc-1@after_first_post_failure_edit:6/raw_trace",
                             "acme__calc-1@after_first_post_failure_edit:6/repo_only",
                             "acme__calc-1@event:3/raw_trace", "acme__calc-1@event:3/repo_only"]
    cut = by_id["acme__calc-1@event:3/raw_trace"]
    assert (cut.metadata["point_type"], cut.metadata["event_index"], cut.metadata["view"]) == ("event", 3, "raw_trace")
    assert "<previous_agent view=\"raw_trace\">" in cut.input
    for sample in log.samples:
        value = sample.scores["handoff_scorer"].value
        assert set(value) == {"resolved", "agent_events", "prompt_tokens"}
        # mockllm changes nothing: the checkpoint's own state is graded (only the fix resolves the task)
        assert value["resolved"] == (1.0 if sample.metadata["point_type"] != "event" else 0.0), sample.id
        assert value["agent_events"] > 0 and sample.scores["handoff_scorer"].metadata["grading_error"] is None
    report = build_report(out, plots=False, html=False)
    rows = [r for r in report.rows if r["successor"] == "mockllm/model (inspect)"]
    assert len(rows) == 4 and all(r["status"] == "done" for r in rows)
    summary = {(s["successor"], s["view"]): s for s in report.data["summary"]}
    for view in ("repo_only", "raw_trace"):
        entry = summary[("mockllm/model (inspect)", view)]
        assert (entry["points"], entry["solved"], entry["finished"]) == (2, 1, 2)
    assert summary[("mockllm/model (inspect)", "raw_trace")]["vs_repo_only"]["solved_rate"]["comparable_pairs"] == 2
    csv = (out / "results.csv").read_text()
    assert csv.count("mockllm/model (inspect)") == 4
