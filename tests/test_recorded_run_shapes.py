"""Shapes of real recorded runs, each written by mini-swe-agent 2.4's own ``DefaultAgent``,
``LocalEnvironment`` and tool-calling model (its deterministic ``DeterministicToolcallModel`` returns what
``LitellmModel.query`` stores: the choice's message with ``extra.actions`` and the whole response with its
usage) on a small repository, then read and replayed in a fresh checkout: the verdict, the state after every
event and the points are asserted (docs/protocol.md sections 3-5).

- a helper script written at the top level and run to edit the source: the run that executes it is the
  first source edit (section 3.2, new top-level files);
- a here-document whose script failed in the recorded run (a module missing there) and whose traceback
  names it: its write stands; a script that failed there and edits the source here does not (section 5.3);
- several tool calls in one turn, replayed in their recorded order, one event each, the program the
  recording machine lacked missing here too (sections 1 and 5.3);
- a run that crashed without submitting, one that reverted a file after writing ``patch.txt``, and one whose
  submission is a diff against its own commit (refused, saying so)
  (section 5.4);
- real pytest summaries (``xfailed``, skips) and a backup copied back, which is an undo (section 4).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import make_repo

from takeover.points import detect_points, verifications
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.replay import replay_trajectory
from takeover.repository_states.snapshots import top_level_names
from takeover.trajectories import read_trajectories

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
pytest.importorskip("minisweagent")
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.test_models import DeterministicToolcallModel

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"
TEMPLATES = {"system_template": "You are a helpful assistant.", "instance_template": "Fix: {{task}}"}
BASE = {"pkg/__init__.py": "", "pkg/mod.py": "x = 1\n", "setup.py": "from setuptools import setup\nsetup()\n"}


@pytest.fixture(autouse=True)
def _mini_config(tmp_path, monkeypatch):
    monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "mini-config"))


def completion(n: int, calls: list[str], usage: tuple[int, int] = (1000, 50)) -> dict:
    """What ``LitellmModel.query`` stores for a response with ``calls`` (one ``bash`` tool call each)."""
    tool_calls = [{"function": {"arguments": json.dumps({"command": c}), "name": "bash"}, "id": f"call_{n}_{k}",
                   "type": "function"} for k, c in enumerate(calls)]
    prompt, out = usage
    response = {"id": f"chatcmpl-{n}", "created": 1767225600 + n, "model": "gpt-5-mini", "object": "chat.completion",
                "choices": [{"finish_reason": "tool_calls", "index": 0,
                             "message": {"content": f"Step {n}.", "role": "assistant", "tool_calls": tool_calls}}],
                "usage": {"completion_tokens": out, "prompt_tokens": prompt, "total_tokens": prompt + out}}
    message = dict(response["choices"][0]["message"], function_call=None, provider_specific_fields=None)
    actions = [{"command": c, "tool_call_id": f"call_{n}_{k}"} for k, c in enumerate(calls)]
    return {**message, "extra": {"actions": actions, "response": response, "cost": 0.001, "timestamp": 1767225600.0}}


def record(tmp_path: Path, turns: list[list[str]], *, files: dict[str, str] = BASE, env: dict | None = None,
           model=None) -> tuple[Path, list]:
    """Run mini-swe-agent on a new repository with one turn per entry of ``turns``; returns the repository
    and the run read back."""
    repo, _ = make_repo(tmp_path / "recorded", files)
    model = model or DeterministicToolcallModel(outputs=[completion(n, calls) for n, calls in enumerate(turns, 1)])
    agent = DefaultAgent(model, LocalEnvironment(cwd=str(repo), timeout=30, env=env or {}),
                         output_path=tmp_path / "run.traj.json", **TEMPLATES)
    try:
        agent.run("change x in pkg/mod.py")
    except RuntimeError:
        pass  # a crash: mini-swe-agent saves the run, then re-raises
    return repo, read_trajectories(tmp_path / "run.traj.json")


def replay(tmp_path: Path, traj, files: dict[str, str] = BASE, **kwargs):
    ws, sha = make_repo(tmp_path / "replay", files)
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=60), **kwargs)
    return ws, sha, result


def changed(result) -> list[list[str]]:
    return [sorted(d) for d in result.diffs]


def test_a_helper_script_at_the_top_level_is_no_source_edit_the_run_that_executes_it_is(tmp_path):
    script = ("cat > fix_x.py << 'EOF'\np = 'pkg/mod.py'\ns = open(p).read().replace('x = 1', 'x = 2')\n"
              "open(p, 'w').write(s)\nEOF")
    turns = [[script], ["python3 fix_x.py"], ["git diff -- pkg/mod.py > patch.txt"], [SUBMIT]]
    _, (traj,) = record(tmp_path, turns)
    assert [e.type for e in traj.events] == ["command"] * 6 + ["finish"] * 2
    ws, sha, result = replay(tmp_path, traj)
    assert result.verdict.verified and result.verdict.rule == "submitted_files", result.verdict
    assert changed(result) == [["fix_x.py"]] * 2 + [["fix_x.py", "pkg/mod.py"]] * 2 + [
        ["fix_x.py", "patch.txt", "pkg/mod.py"]] * 4
    top = top_level_names(ws, sha)
    points = {p.type: p for p in detect_points(traj.events, result.diffs, base_top_level=top)[0]}
    first = points["after_first_source_edit"]
    assert first.event_index == 2 and first.changed_source_files == ["pkg/mod.py"]
    assert first.non_source_artifacts == ["fix_x.py"]
    # Without base_commit's top-level names a new top-level file cannot be told from the project's own.
    unknown = detect_points(traj.events, result.diffs, base_top_level=None)[0]
    assert unknown[0].event_index == 0 and unknown[0].changed_source_files == ["fix_x.py"]


def test_a_heredoc_write_the_recorded_traceback_names_stands_a_script_edit_it_does_not_prove_is_refused(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "helperlib.py").write_text("VALUE = 2\n")
    probe = "cat > probe.py << 'EOF'\nimport helperlib\nprint(helperlib.VALUE)\nEOF\npython3 probe.py"
    turns = [[probe], ["sed -i s/1/2/ pkg/mod.py"], ["git diff -- pkg/mod.py > patch.txt"], [SUBMIT]]
    _, (traj,) = record(tmp_path, turns, env={"PYTHONPATH": ""})  # the recording machine lacks helperlib
    assert traj.events[1].exit_code == 1 and 'probe.py", line 1' in traj.events[1].text
    assert "ModuleNotFoundError" in traj.events[1].text
    _, _, result = replay(tmp_path, traj, env_vars={"PYTHONPATH": str(lib)})
    assert result.steps[0].exit_code == 0  # here the script runs
    assert result.verdict.verified, result.verdict
    assert any("here-document wrote probe.py" in n for n in result.verdict.notes)
    assert changed(result)[:2] == [["probe.py"]] * 2

    # The same shape, but the script edits the source: that change is not proven by the recording.
    fixer = ("cat > fix.py << 'EOF'\nimport helperlib\np = 'pkg/mod.py'\n"
             "open(p, 'w').write(f'x = {helperlib.VALUE}\\n')\nEOF\npython3 fix.py")
    other = tmp_path / "other"
    other.mkdir()
    _, (traj,) = record(other, [[fixer], ["git diff -- pkg/mod.py > patch.txt"], [SUBMIT]], env={"PYTHONPATH": ""})
    _, _, result = replay(other, traj, env_vars={"PYTHONPATH": str(lib)})
    assert not result.verdict.verified
    assert result.verdict.reason.startswith("command at event 0 exited 0 in the replay but 1 in the recorded run, "
                                            "and changed pkg/mod.py:")


def test_parallel_tool_calls_replay_in_their_recorded_order_with_the_recording_machines_programs(tmp_path):
    # The recording machine has no sed: only these programs are on its PATH.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("cat", "git", "python3"):
        (bin_dir / program).symlink_to(__import__("shutil").which(program))
    turns = [["sed -i s/1/2/ pkg/mod.py", "cat pkg/mod.py", "echo 'y = 3' > pkg/extra.py"],
             ["echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"]]
    model = DeterministicToolcallModel(outputs=[completion(1, turns[0], (1200, 80)), completion(2, turns[1], (1500, 20))])
    _, (traj,) = record(tmp_path, turns, env={"PATH": str(bin_dir)}, model=model)
    kinds = [(e.kind, e.type, e.cause, e.exit_code, e.llm_call) for e in traj.events]
    assert kinds == [
        ("action", "command", None, None, 0), ("action", "command", None, None, 0),
        ("action", "command", None, None, 0),
        ("observation", "command", 0, 127, None), ("observation", "command", 1, 0, None),
        ("observation", "command", 2, 0, None),
        ("action", "finish", None, None, 1), ("observation", "finish", 6, None, None),
    ]
    assert "sed: not found" in traj.events[3].text and traj.events[4].text.endswith("x = 1\n</output>")
    assert [(c.usage.prompt_tokens, c.usage.completion_tokens) for c in traj.llm_calls] == [(1200, 80), (1500, 20)]
    assert traj.final_patch_files == ["pkg/extra.py"]

    ws, _, result = replay(tmp_path, traj)
    assert result.verdict.verified and result.verdict.rule == "whole_tree", result.verdict
    assert result.steps[0].missing == ["sed"] and result.steps[0].exit_code == 127
    assert (ws / "pkg" / "mod.py").read_text() == "x = 1\n"
    assert changed(result) == [[]] * 2 + [["pkg/extra.py"]] * 6
    assert result.verdict.notes == ["event 0: sed was not found where the run was recorded (exit 127); replayed as missing"]


class RateLimitError(RuntimeError):
    """Stands for litellm's error of an endpoint that refuses more requests."""


class CrashingModel(DeterministicToolcallModel):
    def query(self, messages, **kwargs):
        if self.current_index + 1 >= len(self.config.outputs):
            raise RateLimitError("You exceeded your current quota")
        return super().query(messages, **kwargs)


def test_a_run_that_crashed_without_submitting_has_no_final_patch(tmp_path):
    turns = [["cat > check.py << 'EOF'\nprint(1)\nEOF"], ["sed -i s/1/2/ pkg/mod.py"]]
    model = CrashingModel(outputs=[completion(n, calls) for n, calls in enumerate(turns, 1)])
    _, (traj,) = record(tmp_path, turns, model=model)
    doc = json.loads((tmp_path / "run.traj.json").read_text())
    assert doc["info"]["exit_status"] == "RateLimitError" and doc["info"]["submission"] == ""
    assert traj.exit_status == "RateLimitError" and traj.final_patch is None
    _, _, result = replay(tmp_path, traj)
    assert not result.verdict.verified
    assert result.verdict.reason == ("the run records no final patch to verify against (it ended with exit status "
                                     "RateLimitError)")
    assert changed(result) == [["check.py"]] * 2 + [["check.py", "pkg/mod.py"]] * 2


def test_a_file_reverted_after_patch_txt_was_written_is_verified_against_that_state(tmp_path):
    turns = [["sed -i s/1/2/ pkg/mod.py && echo 'y = 1' > pkg/other.py"],
             ["git diff -- pkg/mod.py > patch.txt && git add -N pkg/other.py && git diff -- pkg/other.py >> patch.txt"],
             ["sed -i s/2/1/ pkg/mod.py"],  # reverted after the patch was written
             [SUBMIT]]
    _, (traj,) = record(tmp_path, turns)
    assert traj.final_patch_files == ["pkg/mod.py", "pkg/other.py"]
    _, _, result = replay(tmp_path, traj)
    assert result.verdict.verified and result.verdict.rule == "submitted_files", result.verdict
    assert changed(result) == [["pkg/mod.py", "pkg/other.py"]] * 2 + [
        ["patch.txt", "pkg/mod.py", "pkg/other.py"]] * 2 + [["patch.txt", "pkg/other.py"]] * 4


def test_real_pytest_summaries_and_a_backup_copied_back(tmp_path):
    tests = ("import pytest\nfrom pkg.mod import x\n\n\ndef test_x():\n    assert x == 3\n\n\n"
             "@pytest.mark.xfail(reason='known')\ndef test_known():\n    assert False\n\n\n"
             "@pytest.mark.skip(reason='later')\ndef test_later():\n    pass\n\n\ndef test_ok():\n    assert True\n")
    files = {**BASE, "tests/test_mod.py": tests}
    run_tests = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    turns = [["cp pkg/mod.py pkg/mod.py.orig && sed -i s/1/2/ pkg/mod.py"], [run_tests],
             ["cp pkg/mod.py.orig pkg/mod.py"], ["sed -i s/1/3/ pkg/mod.py && rm pkg/mod.py.orig"], [run_tests],
             ["git diff -- pkg/mod.py > patch.txt"], [SUBMIT]]
    _, (traj,) = record(tmp_path, turns, files=files)
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed in" in traj.events[3].text
    assert "2 passed, 1 skipped, 1 xfailed in" in traj.events[9].text
    ws, sha, result = replay(tmp_path, traj, files=files)
    assert result.verdict.verified, result.verdict
    assert [(v.event_index, v.result) for v in verifications(traj.events)] == [(3, "failed"), (9, "passed")]
    points = {p.type: p.event_index for p in detect_points(traj.events, result.diffs,
                                                            base_top_level=top_level_names(ws, sha))[0]}
    # Event 4 copies the backup back (an undo, like git checkout): the fix attempt is event 6.
    assert points == {"after_first_source_edit": 0, "after_first_verification_result": 3,
                      "after_first_post_failure_edit": 6}


def test_a_run_whose_submission_is_against_its_own_commit_is_refused_saying_so(tmp_path):
    turns = [["sed -i s/1/2/ pkg/mod.py"], ["git -c user.name=a -c user.email=a@b commit -qam wip"],
             ["sed -i s/2/3/ pkg/mod.py"],
             ["echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"]]
    _, (traj,) = record(tmp_path, turns)
    assert "-x = 2\n+x = 3" in traj.final_patch  # against the agent's commit, not base_commit
    _, _, result = replay(tmp_path, traj)
    assert not result.verdict.verified
    assert result.verdict.reason == (
        "replayed final state differs from the run's final patch, first at pkg/mod.py (the run committed at event 2: "
        "a submission made after that is a diff against the agent's own commit, not the starting state)")
