"""A whole experiment over a synthetic task, with a real agent loop driven by the scripted model server:
select -> predecessor run -> points -> checkpoints -> handoff states -> views (notes by the model) ->
takeover runs -> grading -> report. Then: with its takeover and grading stages forgotten, run again by
the CLI, killed in the middle of the takeover stage and resumed, it gives the same results.csv as the
uninterrupted run and does not redo finished units (unit file mtimes, model requests)."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git, make_repo

from takeover.experiments import load_experiment, run_experiment
from takeover.report import build_report
from takeover.testing.scripted_server import ScriptedServer

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = "from calc import add, sub\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n"
REPRO = "from calc import add\\nassert add(1, 2) == 3, add(1, 2)\\nprint(\\'ok\\')\\n"


def bash(command: str) -> dict:
    return {"content": f"THOUGHT: next step.\n\n```mswea_bash_command\n{command}\n```"}


SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
FIX = "sed -i '2s/return a [-*] b$/return a + b/' calc.py"
PREDECESSOR = [
    bash("sed -i '2s/a - b/a * b/' calc.py"),  # first source edit (wrong)
    bash(f"printf '{REPRO}' > repro.py"),
    bash("python repro.py"),  # first verification result: fails
    bash("sed -i '2s/a \\* b/a + b/' calc.py"),  # first post-failure edit (right)
    bash("python repro.py"),
    bash(SUBMIT),
]
# Successor behaviour per view: repo_only looks and gives up, raw_trace fixes at once, notes views look
# then fix. So repo_only solves only checkpoints that were already right.
SUCCESSOR = {
    "repo_only": [bash("git diff"), bash(SUBMIT)],
    "raw_trace": [bash(FIX), bash(SUBMIT)],
    "summary_notes": [bash("git diff"), bash(FIX), bash(SUBMIT)],
    "structured_notes": [bash("git diff"), bash(FIX), bash(SUBMIT)],
}
STRUCTURED = {
    "problem_understanding": "add() subtracts instead of adding.",
    "work_completed": "The agent edited calc.py (add) and wrote repro.py.",
    "evidence_observed": "repro.py was run after the edit.",
    "observed_failures": "An AssertionError from repro.py after the first edit.",
    "remaining_uncertainty": "Whether add() now returns the sum is not confirmed.",
    "rollback_notes": "NONE OBSERVED",
    "recommended_next_action": "Run python repro.py and check the output.",
}
SUMMARY = (
    "- The task: add() in calc.py subtracts instead of adding.\n- The agent edited calc.py and created repro.py.\n"
    "- repro.py raised an AssertionError after the first edit.\n- Next: inspect calc.py and run repro.py."
)


def script(request: dict, n: int) -> dict:
    """Deterministic answers keyed on the request: note writer, takeover (by view) or predecessor."""
    messages = request["messages"]
    if messages[0]["content"].startswith("You write handoff notes"):
        return {"content": json.dumps(STRUCTURED)} if "JSON object" in messages[1]["content"] else {"content": SUMMARY}
    first = messages[1]["content"] if len(messages) > 1 else ""
    step = sum(1 for m in messages if m["role"] == "assistant")
    if "<takeover_instructions>" in first:
        view = "repo_only"
        for name in ("raw_trace", "summary_notes", "structured_notes"):
            if f'<previous_agent view="{name}">' in first:
                view = name
        answers = SUCCESSOR[view]
    else:
        answers = PREDECESSOR
    return answers[min(step, len(answers) - 1)]


def _test_patch(tmp_path: Path) -> str:
    scratch, _ = make_repo(tmp_path / "scratch", {"calc.py": CALC})
    (scratch / "test_calc.py").write_text(TESTS)
    git(scratch, "add", "-N", "test_calc.py")
    return git(scratch, "diff")


@pytest.fixture
def synthetic(tmp_path):
    """A mirror with one bare repository and a dataset file with its single task."""
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": CALC}, bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    task = {
        "instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "version": "0.1",
        "problem_statement": "add() returns a - b; it must return the sum a + b.",
        "patch": "", "test_patch": _test_patch(tmp_path),
        "FAIL_TO_PASS": ["test_calc.py::test_add"], "PASS_TO_PASS": ["test_calc.py::test_sub"],
        "difficulty": "15 min - 1 hour",
        "takeover_env_spec": {"python": None, "test_cmd": "pytest -rA", "log_parser": "pytest"},
    }
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    return tmp_path


def _experiment(root: Path, name: str, base_url: str) -> Path:
    model = f'model = "scripted"\nbase_url = "{base_url}"\napi_key_env = "SCRIPTED_KEY"\nretries = 0\n'
    text = f"""
name = "{name}"
out_dir = "{name}"
mirror = "mirror"
offline = true
point_types = ["after_first_source_edit", "after_first_post_failure_edit"]
bootstrap_resamples = 200

[dataset]
path = "tasks.jsonl"
difficulties = ["15 min - 1 hour"]
limit = 5

[predecessor.model]
{model}
[[successors]]
{model}
[limits]
step_limit = 8
wall_time_limit_seconds = 300
command_timeout = 30

[grading]
timeout = 120
"""
    path = root / f"{name}.toml"
    path.write_text(text)
    return path


def _rows(out: Path) -> list[dict]:
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r.pop("wall_seconds")  # the only column that depends on the clock
    return rows


@pytest.mark.slow
def test_experiment_end_to_end_then_killed_and_resumed(synthetic):
    root = synthetic
    with ScriptedServer(script) as srv:
        # 1. Uninterrupted run, through the Python API.
        config = load_experiment(_experiment(root, "runa", srv.base_url))
        summary = run_experiment(config, progress=False)
        assert summary.problems == [], summary.problems_by_reason()
        assert summary.counts["takeover"]["done"] == 8 and summary.counts["grade"]["done"] == 8
        out = config.out
        rows = _rows(out)
        assert len(rows) == 8
        by = {(r["point_type"], r["view"]): r for r in rows}
        states = {r["point_type"]: r["handoff_state"] for r in rows}
        assert states == {"after_first_source_edit": "needs_completion",
                          "after_first_post_failure_edit": "resolved_preserve"}
        solved = {k for k, r in by.items() if r["resolved"] == "True"}
        assert ("after_first_source_edit", "repo_only") not in solved and len(solved) == 7
        # Event counts follow the scripts: 2 calls (4 events) for repo_only and raw_trace, 3 (6) for notes.
        assert {k[1]: int(r["agent_events"]) for k, r in by.items()} == {
            "repo_only": 4, "raw_trace": 4, "summary_notes": 6, "structured_notes": 6}
        assert all(r["exit_status"] == "submitted" and r["status"] == "done" for r in rows)
        assert by[("after_first_source_edit", "raw_trace")]["checkpoint_diff_preserved"] == "False"  # a*b undone
        assert by[("after_first_post_failure_edit", "raw_trace")]["checkpoint_diff_preserved"] == "True"
        assert int(by[("after_first_source_edit", "raw_trace")]["initial_prompt_chars"]) > int(
            by[("after_first_source_edit", "repo_only")]["initial_prompt_chars"])
        report = json.loads((out / "report.json").read_text())
        summ = {e["view"]: e for e in report["summary"]}
        assert summ["repo_only"]["solved_rate"] == 0.5 and summ["raw_trace"]["solved_rate"] == 1.0
        assert summ["raw_trace"]["vs_repo_only"]["solved_rate"]["new_only"] == 1
        assert report["table1"]["points"] == {"after_first_post_failure_edit": {"resolved_preserve": 1},
                                              "after_first_source_edit": {"needs_completion": 1}}
        notes = report["note_writing"]
        assert notes["summary_notes"]["units"] == 2 and notes["summary_notes"]["prompt_tokens"] > 0
        assert "prompt_tokens" in notes["structured_notes"]
        assert (out / "config.resolved.json").exists() and "takeover" in json.loads((out / "versions.json").read_text())
        assert (out / "plots" / "solved_rate.png").exists()

        # 2. Forget the takeover and grading stages, run again by the CLI and kill it during the takeover stage.
        exp = root / "runa.toml"
        for folder in ("units/takeover", "units/grade", "work/takeover", "work/grade"):
            shutil.rmtree(out / folder)
        (out / "results.csv").unlink()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen([sys.executable, "-m", "takeover", "run", str(exp)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        units = out / "units" / "takeover"
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if units.is_dir() and len(list(units.glob("*.json"))) >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        finished = {p.name: p.stat().st_mtime_ns for p in units.glob("*.json")}
        assert 3 <= len(finished) < 8
        # Progress to a pipe: one plain line per stage and per finished unit, no live display.
        lines = proc.stderr.read().decode().splitlines()
        assert not [line for line in lines if "\x1b[" in line]
        assert any(re.fullmatch(r"\d\d:\d\d:\d\d predecessor: 1 unit\(s\) planned, 1 reused, 0 to run", x) for x in lines)
        assert any(re.fullmatch(r"\d\d:\d\d:\d\d view: stage done in 0\.0 s: 8 done, 0 failed \(8 reused\), [\d,]+ tokens",
                                x) for x in lines), lines
        assert any(re.fullmatch(r"\d\d:\d\d:\d\d takeover: 8 unit\(s\) planned as the stage before ends "
                                r"\(stored ones are reused\)", x) for x in lines), lines
        done = [x for x in lines if re.fullmatch(r"\d\d:\d\d:\d\d takeover [1-8]/8 done [\d.]+ s [\d,]+ tokens: "
                                                 r"acme__calc-1 after_first_\w+ \w+ scripted", x)]
        assert len(done) >= len(finished) - 1, lines  # the last one may have been killed before its line
        assert not (out / "results.csv").exists() and not (out / "units" / "grade").exists()

        # 3. Resume: only the unfinished takeover runs talk to the model again; finished units stay as they are.
        before = len(srv.requests)
        summary_b = run_experiment(load_experiment(exp), progress=False)
        assert summary_b.problems == []
        assert summary_b.counts["takeover"]["reused"] == len(finished)
        assert summary_b.counts["takeover"]["ran"] == 8 - len(finished)
        assert summary_b.counts["predecessor"]["reused"] == 1 and summary_b.counts["view"]["ran"] == 0
        assert {p.name: p.stat().st_mtime_ns for p in units.glob("*.json") if p.name in finished} == finished
        llm_calls = {p.name: json.loads(p.read_text())["output"]["llm_calls"] for p in units.glob("*.json")}
        assert len(srv.requests) - before == sum(n for name, n in llm_calls.items() if name not in finished)
        assert _rows(out) == rows
    # The report is rebuilt from unit files alone, identically.
    first = (out / "report.json").read_bytes()
    build_report(out, plots=False)
    assert (out / "report.json").read_bytes() == first
