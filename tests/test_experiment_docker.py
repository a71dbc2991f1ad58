"""A whole experiment in Docker on a real daemon: the agents' commands (predecessor and takeover runs) and
every grading (handoff states, takeover runs) in the task's instance image (a stand-in built by the tests),
end to end to a report; then the daemon gone in the middle of a study: its gradings fail with a clear
reason, and a rerun with --retry-failed redoes only them."""

from __future__ import annotations

import json
import shutil

import pytest
from docker_images import private_instance
from prerequisites import requires

from takeover.experiments import load_experiment, run_experiment
from takeover.testing.scripted_server import ScriptedServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800), requires("docker daemon", "debootstrap")]

MODULE = "src/tinyadd/__init__.py"


def bash(command: str) -> dict:
    return {"content": f"THOUGHT: next step.\n\n```mswea_bash_command\n{command}\n```"}


SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
REPRO = "from tinyadd import add\\nassert add(1, 2) == 3, add(1, 2)\\nprint(\\'ok\\')\\n"
PREDECESSOR = [
    bash(f"sed -i '2s/a - b/a * b/' {MODULE}"),  # the first source edit (wrong)
    bash(f"printf '{REPRO}' > repro.py"),
    bash("python repro.py"),  # the first verification result: it fails
    bash(f"sed -i '2s/a \\* b/a + b/' {MODULE}"),  # the first edit after the failure (right)
    bash("python repro.py"),
    bash(SUBMIT),
]
SUCCESSOR = {
    "repo_only": [bash("git diff"), bash(SUBMIT)],
    "raw_trace": [bash(f"sed -i '2s/return a [-*] b$/return a + b/' {MODULE}"), bash(SUBMIT)],
}


def script(request: dict, n: int) -> dict:
    messages = request["messages"]
    first = messages[1]["content"] if len(messages) > 1 else ""
    step = sum(1 for m in messages if m["role"] == "assistant")
    answers = PREDECESSOR
    if "<takeover_instructions>" in first:
        answers = SUCCESSOR["raw_trace" if '<previous_agent view="raw_trace">' in first else "repo_only"]
    return answers[min(step, len(answers) - 1)]


def _experiment(root, base_url: str):
    model = f'model = "scripted"\nbase_url = "{base_url}"\napi_key_env = "SCRIPTED_KEY"\nretries = 0\n'
    path = root / "study.toml"
    path.write_text(f"""
name = "study"
out_dir = "study"
mirror = "mirror"
offline = true
views = ["repo_only", "raw_trace"]
point_types = ["after_first_source_edit", "after_first_post_failure_edit"]
bootstrap_resamples = 200

[dataset]
path = "tasks.jsonl"
difficulties = ["15 min - 1 hour"]

[predecessor]
agent = {{ command_backend = "docker" }}
[predecessor.model]
{model}
[[successors]]
{model}agent = {{ command_backend = "docker" }}
[limits]
step_limit = 8
wall_time_limit_seconds = 300
command_timeout = 60

[grading]
backend = "docker"
timeout = 300
""")
    return path


@pytest.fixture
def own_task(tiny_docker_task):
    """The small task under an image name of this test's own: another session retagging the stand-in's shared
    name at the same moment (a test of a changed image) cannot change this study's verdicts."""
    with private_instance(tiny_docker_task) as (task, _name):
        yield task


def test_a_study_in_docker_end_to_end_and_a_daemon_gone_mid_study(tiny_docker_task, own_task, tmp_path, monkeypatch):
    task, stand_in = own_task, tiny_docker_task.stand_in
    monkeypatch.chdir(tmp_path)  # nothing of the study may land here (checked at the end)
    shutil.copytree(tiny_docker_task.source.mirror, tmp_path / "mirror")
    (tmp_path / "tasks.jsonl").write_text(task.model_copy(update={"difficulty": "15 min - 1 hour"}).model_dump_json() + "\n")
    with ScriptedServer(script) as srv:
        config = load_experiment(_experiment(tmp_path, srv.base_url))
        summary = run_experiment(config, progress=False, workers=2)  # units side by side on one daemon
        assert summary.problems == [], summary.problems_by_reason()
        out = config.out
        assert summary.counts["takeover"]["done"] == 4 and summary.counts["grade"]["done"] == 4
        report = json.loads((out / "report.json").read_text())
        assert report["table1"]["points"] == {"after_first_post_failure_edit": {"resolved_preserve": 1},
                                              "after_first_source_edit": {"needs_completion": 1}}
        solved = {e["view"]: e["solved_rate"] for e in report["summary"]}
        assert solved == {"repo_only": 0.5, "raw_trace": 1.0}
        runs = [json.loads(p.read_text()) for p in (out / "work").glob("*/*/run/run.json")]
        assert len(runs) == 5 and {r["command_backend"] for r in runs} == {"docker"}
        assert {r["environment"]["image_id"] for r in runs} == {stand_in.image_id}
        graded = [json.loads(p.read_text()) for p in (out / "work").glob("*/*/grading/*/*/result.json")]
        assert len(graded) == 6 and {g["image_id"] for g in graded} == {stand_in.image_id}
        assert all(g["backend"] == "docker" and g["error"] is None for g in graded)

        # The daemon goes away in the middle of the study: the takeover runs are done, their gradings not.
        shutil.rmtree(out / "units" / "grade")
        shutil.rmtree(out / "work" / "grade")
        monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
        gone = run_experiment(load_experiment(tmp_path / "study.toml"), progress=False)
        assert gone.counts["grade"]["failed"] == 4 and gone.counts["takeover"]["reused"] == 4
        reasons = {p.reason for p in gone.problems if p.stage == "grade"}
        assert len(reasons) == 1 and "no Docker daemon answers" in reasons.pop()
        monkeypatch.delenv("DOCKER_HOST")
        before = len(srv.requests)
        back = run_experiment(load_experiment(tmp_path / "study.toml"), progress=False, retry_failed=True)
    assert back.problems == [] and back.counts["grade"]["ran"] == 4 and back.counts["grade"]["done"] == 4
    assert all(back.counts[stage].get("ran", 0) == 0 for stage in back.counts if stage != "grade")
    assert len(srv.requests) == before  # no model call: only the gradings were redone
    assert json.loads((out / "report.json").read_text())["summary"] == report["summary"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mirror", "study", "study.toml", "tasks.jsonl"]
