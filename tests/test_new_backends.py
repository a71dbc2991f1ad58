"""A new grading backend and a new command backend, each with an option of its own, touch their own folder and
one registry entry (docs/protocol.md sections 6 and 8.4), as a new agent runtime does (test_new_runtime.py):
the test copies ``src/takeover`` into a scratch folder, adds both there as a contributor would, counts the files
that changed, checks the copy's layout, and runs them through the command line of the copy, their options given
with ``--backend-option`` and ``--command-backend-option`` and checked by their own ``Options`` models. Nothing
else (the CLI, the experiment file, the grading entry points, the unit records) has to learn their options.

- ``logfile``, a grading backend: it runs no test; it grades the test log its option ``log`` names, as if the
  tests had printed it (a stand-in for a backend that runs them somewhere else).
- ``journal``, a command backend: the ``local`` backend's commands, each also written to the file its option
  ``journal`` names.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from test_agents import bash, settings
from test_new_runtime import check_layout

from takeover.testing.scripted_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[1]

LOGFILE_BACKEND = '''"""The ``logfile`` grading backend: it runs no test, and grades the test log its option ``log`` names."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from takeover._util.io import sha256_text
from takeover.grading.predictions import Prediction
from takeover.grading.reuse import EnvironmentKey, GradingKey
from takeover.grading.verdict import GradeResult, grade_log
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask


class LogfileOptions(BaseModel):
    """The ``logfile`` backend's own options: ``log``, the test log to grade."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    log: Path


class LogfileBackend:
    """Grades a given test log (:class:`takeover.grading.backend.GradingBackend`)."""

    name = "logfile"
    description = "a given test log"
    writes_report = False
    uses_sandbox = False
    Options = LogfileOptions

    def tests_network(self, asked: bool) -> bool:
        """As asked: no test runs."""
        return asked

    def environment_key(self, task: SourceTask, options: LogfileOptions) -> EnvironmentKey:
        """The log's digest: another log is another verdict."""
        return EnvironmentKey(env_spec_sha256=sha256_text(options.log.read_text()))

    def grade(self, task: SourceTask, prediction: Prediction, key: GradingKey, log_dir: Path,
              grading: GradingSettings, options: LogfileOptions, repo_source: RepoSource) -> GradeResult:
        """The log graded under the key's rules, copied to ``log_dir`` as the test log."""
        text = options.log.read_text()
        (log_dir / "test_output.txt").write_text(text)
        result = grade_log(text, task, backend=self.name, rules=key.grading_rules)
        result.model_name_or_path, result.log_path = prediction.model_name_or_path, str(log_dir / "test_output.txt")
        return result
'''

JOURNAL_COMMANDS = '''"""The ``journal`` command backend: ``local``'s commands, each also written to the file its option names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from takeover.agents.command_backend import CommandSession
from takeover.agents.local_commands import LocalCommands


class JournalOptions(BaseModel):
    """The ``journal`` backend's own options: ``journal``, the file every command is appended to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    journal: Path


class JournalCommands(LocalCommands):
    """``local``, with a journal of the commands."""

    Options = JournalOptions

    def environment(self, session: CommandSession, options: JournalOptions) -> Any:
        """``local``'s environment whose ``execute`` first appends the command to ``options.journal``."""
        environment = super().environment(session, LocalCommands.Options())
        execute = environment.execute

        def journalled(action: dict, *args: Any, **kwargs: Any) -> dict:
            with open(options.journal, "a", encoding="utf-8") as fh:
                fh.write(action.get("command", "") + "\\n")
            return execute(action, *args, **kwargs)

        environment.execute = journalled
        return environment
'''

LOG = (">>>>> Start Test Output\nPASSED test_calc.py::test_add\n>>>>> End Test Output\n")


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _add_backends(package: Path) -> None:
    """What a contributor writes: each backend's folder, and its entry (with its import) in its registry."""
    (package / "grading" / "logfile").mkdir()
    (package / "grading" / "logfile" / "__init__.py").write_text('"""The logfile grading backend."""\n')
    (package / "grading" / "logfile" / "logfile_backend.py").write_text(LOGFILE_BACKEND)
    registry = package / "grading" / "backends.py"
    text = registry.read_text()
    text = text.replace("from takeover.grading.local import LocalBackend\n",
                        "from takeover.grading.local import LocalBackend\n"
                        "from takeover.grading.logfile.logfile_backend import LogfileBackend\n")
    text = text.replace("(LocalBackend(), DockerBackend())", "(LocalBackend(), DockerBackend(), LogfileBackend())")
    registry.write_text(text)

    (package / "agents" / "journal").mkdir()
    (package / "agents" / "journal" / "__init__.py").write_text('"""The journal command backend."""\n')
    (package / "agents" / "journal" / "journal_commands.py").write_text(JOURNAL_COMMANDS)
    registry = package / "agents" / "command_backends.py"
    text = registry.read_text()
    text = text.replace("from takeover.agents.docker_commands import DockerCommands\n",
                        "from takeover.agents.docker_commands import DockerCommands\n"
                        "from takeover.agents.journal.journal_commands import JournalCommands\n")
    text = text.replace('"docker": DockerCommands()}', '"docker": DockerCommands(), "journal": JournalCommands()}')
    registry.write_text(text)


def test_backends_with_options_of_their_own_touch_their_folders_and_their_registries(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    package = tmp_path / "scratch" / "takeover"
    shutil.copytree(ROOT / "src" / "takeover", package, ignore=shutil.ignore_patterns("__pycache__"))
    before = _hashes(package)
    _add_backends(package)
    after = _hashes(package)
    touched = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert touched == ["agents/command_backends.py", "agents/journal/__init__.py", "agents/journal/journal_commands.py",
                       "grading/backends.py", "grading/logfile/__init__.py", "grading/logfile/logfile_backend.py"]
    # Per backend: its own folder and its registry's module, and in the registry one entry and its import.
    for registry in ("grading/backends.py", "agents/command_backends.py"):
        changed = subprocess.run(["git", "diff", "--no-index", "--numstat", str(ROOT / "src" / "takeover" / registry),
                                  str(package / registry)], capture_output=True, text=True, check=False).stdout
        added, removed = map(int, changed.split()[:2])
        assert (added, removed) == (2, 1), (registry, changed)
    layout = check_layout.check(package, protocol=ROOT / "docs" / "protocol.md")
    assert layout.violations == [], check_layout.format_report(layout)

    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_copy(update={"FAIL_TO_PASS": ["test_calc.py::test_add"]}).model_dump_json() + "\n")
    log = tmp_path / "test_output.log"
    log.write_text(LOG)
    env = {**os.environ, "PYTHONPATH": str(package.parent)}

    def takeover(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "takeover", *args], env=env, capture_output=True, text=True,
                              timeout=300, check=False)

    # The grading backend, from the command line: its option reaches it, its key and its result.
    graded = takeover("grade", "--dataset", str(dataset), "--instance-id", task.instance_id, "--empty", "--json",
                      "--backend", "logfile", "--backend-option", f"log={log}", "--out-dir", str(tmp_path / "grades"))
    assert graded.returncode == 0, graded.stderr
    row = json.loads(graded.stdout)
    assert (row["backend"], row["resolved"], row["FAIL_TO_PASS"]) == (
        "logfile", True, {"success": ["test_calc.py::test_add"], "failure": []})
    refused = takeover("grade", "--dataset", str(dataset), "--instance-id", task.instance_id, "--empty",
                       "--backend", "logfile", "--backend-option", "colour=red", "--out-dir", str(tmp_path / "g2"))
    assert refused.returncode == 2
    assert refused.stderr == "error: --backend-option: unknown option (its options: log)\n"
    # ... and from an experiment file, its options checked when the file is read.
    (tmp_path / "e.toml").write_text(f'out_dir = "o"\n[dataset]\npath = "{dataset}"\n[predecessor]\n'
                                     f'trajectories = ["runs"]\n[[successors]]\nmodel = "m"\n[grading]\n'
                                     f'backend = "logfile"\noptions = {{ log = "{log.name}" }}\n')
    probe = ("from takeover.experiments import load_experiment; import sys; "
             "print(load_experiment(sys.argv[1]).grading.model_dump_json())")
    loaded = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "e.toml")], env=env, capture_output=True,
                            text=True, check=True)
    assert json.loads(loaded.stdout)["options"] == {"log": str(log)}  # a relative path is the file's folder's

    # The command backend, from the command line: its option reaches the commands' environment.
    journal = tmp_path / "journal.txt"
    with ScriptedServer([bash("ls"), bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]) as srv:
        run = takeover("agent", "run", "--dataset", str(dataset), "--instance-id", task.instance_id, "--model",
                       settings(srv).model, "--base-url", srv.base_url, "--api-key-env", "", "--mirror", str(mirror),
                       "--offline", "--out-dir", str(tmp_path / "run"), "--json", "--command-backend", "journal",
                       "--command-backend-option", f"journal={journal}")
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout)
    assert record["command_backend"] == "journal"
    assert record["inputs"]["agent"] == {"command_backend": "journal", "command_backend_options": {"journal": str(journal)}}
    # The run's isolation probe runs first in the same environment (docs/protocol.md section 8.6), then the agent.
    assert journal.read_text().splitlines()[-2:] == ["ls", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
    refused = takeover("agent", "run", "--dataset", str(dataset), "--instance-id", task.instance_id, "--model", "m",
                       "--mirror", str(mirror), "--offline", "--out-dir", str(tmp_path / "run2"),
                       "--command-backend", "journal")
    assert refused.returncode == 2 and not (tmp_path / "run2").exists()
    assert refused.stderr == ("error: command backend journal: field 'command_backend_options.journal': Field "
                              "required (its options: journal)\n")
