"""Regenerate the folders in ``tests/data/earlier_version/``: a run folder and an experiment's unit files
written by takeover *before* agent runtimes were chosen by name (``RunSpec.backend`` was then the command
backend's field, and run folders and unit inputs knew no ``agent``). ``test_agent_runtimes.py`` checks that
today's code reuses both without a model call.

It must run with that earlier code, for example the commit before the runtime seam::

    git archive 97febed src | tar -x -C /tmp/earlier
    PYTHONPATH=/tmp/earlier/src .venv/bin/python tests/data/earlier_version/make_earlier_version.py

Writes ``run/`` (a predecessor run of the calculator task of ``tests/conftest.py``, 2 steps: run.json,
events.jsonl, calls.jsonl, prompt.md, patch.diff; the workspace is left out), ``takeover_run/`` (a takeover
run from the checkpoint ``test_agents._checkpoint`` builds) and ``experiment/`` (``experiment.toml``,
``plan.json`` and ``units/``: the synthetic experiment of ``test_experiment_e2e.py`` with two views and one
point type). About a minute.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parents[1]
sys.path.insert(0, str(TESTS))

from conftest import CALC_BUGGY, CALC_ENV_SPEC, CALC_TEST, make_repo
from test_agent_runs import _checkpoint_folder
from test_experiment_e2e import _experiment, _test_patch, script

import takeover
from takeover.agents import RunLimits
from takeover.agents.runs import run_predecessor, run_takeover
from takeover.experiments import load_experiment, run_experiment
from takeover.llm import ModelSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.testing.scripted_server import ScriptedServer

RUN_FILES = ("run.json", "events.jsonl", "calls.jsonl", "prompt.md", "patch.diff")


def bash(command: str) -> dict:
    return {"content": f"THOUGHT: next step\n\n```mswea_bash_command\n{command}\n```"}


def _keep(run_dir: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for name in RUN_FILES:
        if (run_dir / name).exists():
            shutil.copy2(run_dir / name, dest / name)


def runs(tmp: Path) -> None:
    _, sha = make_repo(tmp / "src" / "calc", {"calc.py": CALC_BUGGY, "test_calc.py": CALC_TEST},
                       bare_mirror=tmp / "mirror" / "acme__calc.git")
    task = SourceTask(instance_id="acme__calc-1", repo="acme/calc", base_commit=sha,
                      problem_statement="add() subtracts instead of adding", takeover_env_spec=CALC_ENV_SPEC)
    source = RepoSource(tmp / "mirror")
    with ScriptedServer([bash("sed -i 's/a - b/a + b/' calc.py"), bash("ls")]) as srv:
        model = ModelSettings(model="scripted", base_url=srv.base_url, api_key_env=None, retries=0)
        run_predecessor(task, model, tmp / "run", repo_source=source, limits=RunLimits(step_limit=2))
    _keep(tmp / "run", HERE / "run")

    folder = _checkpoint_folder(tmp, task)
    with ScriptedServer([bash("cat calc.py")]) as srv:
        model = ModelSettings(model="scripted", base_url=srv.base_url, api_key_env=None, retries=0)
        run_takeover(folder, "repo_only", model, tmp / "takeover", task=task, repo_source=source,
                     limits=RunLimits(step_limit=1))
    _keep(tmp / "takeover", HERE / "takeover_run")


def experiment(tmp: Path) -> None:
    _, sha = make_repo(tmp / "src" / "calc", {"calc.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n"
                                              "    return a - b\n"}, bare_mirror=tmp / "mirror" / "acme__calc.git")
    row = {
        "instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "version": "0.1",
        "problem_statement": "add() returns a - b; it must return the sum a + b.",
        "patch": "", "test_patch": _test_patch(tmp), "FAIL_TO_PASS": ["test_calc.py::test_add"],
        "PASS_TO_PASS": ["test_calc.py::test_sub"], "difficulty": "15 min - 1 hour",
        "takeover_env_spec": {"python": None, "test_cmd": "pytest -rA", "log_parser": "pytest"},
    }
    (tmp / "tasks.jsonl").write_text(json.dumps(row) + "\n")
    with ScriptedServer(script) as srv:
        path = _experiment(tmp, "earlier", srv.base_url)
        text = path.read_text().replace('point_types = ["after_first_source_edit", "after_first_post_failure_edit"]',
                                        'point_types = ["after_first_source_edit"]\n'
                                        'views = ["repo_only", "summary_notes"]')
        path.write_text(text)
        config = load_experiment(path)
        summary = run_experiment(config, executor="inline", progress=False, report=False)
        assert summary.problems == [], summary.problems
    dest = HERE / "experiment"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(config.out / "units", dest / "units")
    shutil.copy2(config.out / "plan.json", dest / "plan.json")
    # The file as it was run, paths resolved (unit keys hold absolute paths, and so does this file).
    resolved = text.replace('out_dir = "earlier"', f'out_dir = "{config.out}"').replace(
        'mirror = "mirror"', f'mirror = "{tmp / "mirror"}"').replace('path = "tasks.jsonl"',
                                                                     f'path = "{tmp / "tasks.jsonl"}"')
    (dest / "experiment.toml").write_text(resolved)


if __name__ == "__main__":
    print("takeover from", takeover.__file__)
    with tempfile.TemporaryDirectory(prefix="takeover-earlier-") as d:
        runs(Path(d) / "runs")
        experiment(Path(d) / "experiment")
