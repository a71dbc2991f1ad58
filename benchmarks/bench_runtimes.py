"""Agent events and prompt tokens of the same takeover work under the mini-swe-agent and OpenHands runtimes.

    .venv/bin/python benchmarks/bench_runtimes.py [--out DIR]

One synthetic task (a calculator whose ``add`` subtracts, in a mirror built here), one mini-swe-agent
predecessor that edits it wrongly, one handoff point (``after_first_source_edit``) and the four views; two
successors that differ only in their runtime (``mini-swe-agent`` and ``openhands``), driven by the scripted
OpenAI-compatible server with the same moves in each runtime's own protocol: under every view the successor
looks at the diff (``git diff``), fixes ``calc.py`` and submits (mini-swe-agent's submission command,
OpenHands' ``finish``), so that the differences come from the runtimes alone. The scripted server counts one
token per word. Printed per view: each runtime's agent events, prompt tokens (cumulative, every call) and
initial prompt characters, and exit status. Needs bubblewrap and the OpenHands
environment (built on first use).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from takeover.experiments import load_experiment, run_experiment
from takeover.experiments.units import load_results
from takeover.testing.scripted_server import ScriptedServer, function_call

CALC = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
VIEWS = ("repo_only", "raw_trace", "summary_notes", "structured_notes")
SUMMARY = "- add() in calc.py subtracts.\n- The agent changed it to a * b: still wrong.\n- Next: make it a + b."
STRUCTURED = {
    "problem_understanding": "add() subtracts instead of adding.",
    "work_completed": "The agent edited add() in calc.py to return a * b.",
    "evidence_observed": "NONE OBSERVED",
    "observed_failures": "NONE OBSERVED",
    "remaining_uncertainty": "Whether a * b is right: it is not.",
    "rollback_notes": "NONE OBSERVED",
    "recommended_next_action": "Change add() to return a + b and run the tests.",
}


def _bash(command: str) -> dict:
    return {"content": f"THOUGHT: next step.\n\n```mswea_bash_command\n{command}\n```"}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _repo(path: Path, files: dict[str, str]) -> str:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        (path / name).write_text(text)
    _git(path, "add", "-A")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    return _git(path, "rev-parse", "HEAD").strip()


def reply(request: dict, n: int) -> dict:
    """The note writer, the predecessor, and both successors' moves, keyed on the request."""
    messages = request["messages"]
    if messages[0]["content"].startswith("You write handoff notes"):
        return {"content": json.dumps(STRUCTURED)} if "JSON object" in messages[1]["content"] else {"content": SUMMARY}
    turns = sum(m["role"] == "assistant" for m in messages)
    if "<function=" in messages[0]["content"]:  # OpenHands' text protocol
        moves = [function_call("terminal", command="git diff"),
                 function_call("file_editor", command="str_replace", path="/testbed/calc.py", old_str="a * b",
                               new_str="a + b"),
                 function_call("finish", message="add() adds")]
        return moves[min(turns, 2)]
    if "<takeover_instructions>" in messages[1]["content"]:
        moves = [_bash("git diff"), _bash("sed -i 's/a [*] b/a + b/' calc.py"),
                 _bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]
        return moves[min(turns, 2)]
    return [_bash("sed -i 's/a - b/a * b/' calc.py"), _bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")][min(turns, 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the experiment folder here (default: a temp dir)")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="bench-runtimes-"))
    root.mkdir(parents=True, exist_ok=True)
    sha = _repo(root / "src", {"calc.py": CALC})
    (root / "mirror").mkdir(exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(root / "src"), str(root / "mirror" / "acme__calc.git")],
                   check=True)
    _repo(root / "scratch", {"calc.py": CALC})
    (root / "scratch" / "test_calc.py").write_text(TESTS)
    _git(root / "scratch", "add", "-N", "test_calc.py")
    task = {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "version": "0.1",
            "problem_statement": "add() returns a - b; it must return a + b.", "patch": "",
            "test_patch": _git(root / "scratch", "diff"), "FAIL_TO_PASS": ["test_calc.py::test_add"],
            "PASS_TO_PASS": [], "difficulty": "15 min - 1 hour",
            "takeover_env_spec": {"python": None, "test_cmd": "pytest -rA", "log_parser": "pytest"}}
    (root / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    with ScriptedServer(reply) as srv:
        model = f'model = "scripted"\nbase_url = "{srv.base_url}"\napi_key_env = ""\nretries = 0\n'
        (root / "e.toml").write_text(
            f'out_dir = "out"\nmirror = "mirror"\noffline = true\npoint_types = ["after_first_source_edit"]\n'
            f'bootstrap_resamples = 50\n[dataset]\npath = "tasks.jsonl"\ndifficulties = ["15 min - 1 hour"]\n'
            f'[predecessor.model]\n{model}[notes.model]\n{model}'
            f'[[successors]]\n{model}[[successors]]\n{model}agent = "openhands"\n'
            f'[limits]\nstep_limit = 6\n[grading]\ntimeout = 120\n')
        config = load_experiment(root / "e.toml")
        summary = run_experiment(config, executor="inline", progress=False)
    if summary.problems:
        print("problems:", summary.problems_by_reason())
    rows: dict[tuple[str, str], dict] = {}
    for unit in load_results(config.out, "takeover").values():
        rows[(unit.inputs["view"], unit.inputs["agent"]["runtime"])] = unit.output
    print(f"{'view':<18}{'runtime':<16}{'events':>8}{'prompt tokens':>15}{'initial chars':>15}{'exit':>12}")
    for view in VIEWS:
        for agent in ("mini-swe-agent", "openhands"):
            out = rows.get((view, agent))
            if out is None:
                print(f"{view:<18}{agent:<16}{'-':>8}")
                continue
            print(f"{view:<18}{agent:<16}{out['agent_events']:>8}{out['prompt_tokens']:>15}"
                  f"{out['initial_prompt_chars']:>15}{out['exit_status']:>12}")
    print(f"(experiment folder: {root})")


if __name__ == "__main__":
    main()
