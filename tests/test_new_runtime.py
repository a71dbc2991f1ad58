"""A new agent runtime with an option of its own touches its own folder and one registry line (docs/protocol.md
section 8.4): the test copies ``src/takeover`` into a scratch folder, adds the runtime there as a contributor
would (a folder with its module, two lines in ``agents/runtimes.py``), counts the files that changed, and
runs it through the command line of the copy, its option given with ``--agent-option`` and checked by the
runtime's own ``Options`` model.

A copy rather than a plug-in registered at run time (``RUNTIMES.add``, as ``test_agent_runtimes.py`` does):
only a copy shows which files of the source tree a new runtime needs, and that nothing else (the CLI, the
experiment file, the unit records, the run folder) has to learn its option."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_layout", ROOT / "benchmarks" / "check_layout.py")
check_layout = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("check_layout", check_layout)
_spec.loader.exec_module(check_layout)

ECHO_RUNTIME = '''"""The echo runtime: it writes its greeting into GREETING.txt, one recorded action, and submits."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from takeover.agents.command_backend import CommandBackend
from takeover.agents.runtime import AgentChoice, AgentRun, RuntimeOutcome
from takeover.limits import RunLimits
from takeover.vocabulary import ExitStatus


class EchoOptions(BaseModel):
    """The echo runtime's own options: ``greeting``, the text it writes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    greeting: str = "hello"


class EchoRuntime:
    """Writes its greeting (:class:`takeover.agents.runtime.AgentRuntime`)."""

    Options = EchoOptions

    def check(self, limits: RunLimits, choice: AgentChoice, commands: CommandBackend) -> None:
        """Nothing to refuse."""

    def run(self, run: AgentRun) -> RuntimeOutcome:
        """Write the greeting as one action and its observation."""
        options = EchoOptions.model_validate(run.spec.agent.options)
        rec = run.recorder
        run.start_clock()
        action = rec.add_event(kind="action", source="agent", type="file_edit", text=options.greeting,
                               path="GREETING.txt", edit="create", file_text=options.greeting)
        (run.workspace / "GREETING.txt").write_text(options.greeting + "\\\\n")
        action.snapshot = rec.take_snapshot()
        rec.add_event(kind="observation", source="environment", type="file_edit", text="wrote GREETING.txt",
                      cause=action.index, snapshot=rec.snapshot)
        rec.flush()
        return RuntimeOutcome(ExitStatus.submitted, submission="GREETING.txt")
'''


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _add_echo_runtime(package: Path) -> None:
    """What a contributor writes: the runtime's folder, and its line (with its import) in the registry."""
    (package / "agents" / "echo").mkdir()
    (package / "agents" / "echo" / "__init__.py").write_text('"""The echo runtime (``--agent echo``)."""\n')
    (package / "agents" / "echo" / "echo_runtime.py").write_text(ECHO_RUNTIME)
    registry = package / "agents" / "runtimes.py"
    text = registry.read_text()
    text = text.replace("from takeover.agents.mini_swe_agent.mswea_runtime import MiniSweAgentRuntime\n",
                        "from takeover.agents.echo.echo_runtime import EchoRuntime\n"
                        "from takeover.agents.mini_swe_agent.mswea_runtime import MiniSweAgentRuntime\n")
    text = text.replace('    "command": CommandRuntime(),\n', '    "command": CommandRuntime(),\n    "echo": EchoRuntime(),\n')
    registry.write_text(text)


def test_a_runtime_with_an_option_of_its_own_touches_its_folder_and_the_registry(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    package = tmp_path / "scratch" / "takeover"
    shutil.copytree(ROOT / "src" / "takeover", package, ignore=shutil.ignore_patterns("__pycache__"))
    before = _hashes(package)
    _add_echo_runtime(package)
    after = _hashes(package)
    touched = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert touched == ["agents/echo/__init__.py", "agents/echo/echo_runtime.py", "agents/runtimes.py"]
    assert len({Path(t).parent for t in touched}) == 2  # its own folder and the registry's
    # The copy still keeps every layout rule: the runtime's names, its closure, its layer.
    layout = check_layout.check(package, protocol=ROOT / "docs" / "protocol.md")
    assert layout.violations == [], check_layout.format_report(layout)

    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    env = {**os.environ, "PYTHONPATH": str(package.parent)}

    def agent_run(out: str, *flags: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "takeover", "agent", "run", "--dataset", str(dataset),
                               "--instance-id", task.instance_id, "--model", "none", "--api-key-env", "",
                               "--mirror", str(mirror), "--offline", "--out-dir", str(tmp_path / out), "--json",
                               *flags], env=env, capture_output=True, text=True, timeout=300, check=False)

    done = agent_run("run", "--agent", "echo", "--agent-option", "greeting=hi there")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["agent"] == "echo" and record["exit_status"] == "submitted"
    # The agent choice in its stable form: the fields at their default (the command backend, the protocol) left out.
    assert record["inputs"]["agent"] == {"runtime": "echo", "options": {"greeting": "hi there"}}
    assert "+hi there" in (tmp_path / "run" / "patch.diff").read_text()
    default = agent_run("default", "--agent", "echo")  # the option's default, left out of the inputs
    assert default.returncode == 0, default.stderr
    assert json.loads(default.stdout)["inputs"]["agent"] == {"runtime": "echo"}
    assert "+hello" in (tmp_path / "default" / "patch.diff").read_text()
    refused = agent_run("refused", "--agent", "echo", "--agent-option", "colour=red")
    assert refused.returncode == 2 and not (tmp_path / "refused").exists()
    assert refused.stderr == "error: agent echo: field 'options.colour': unknown option (its options: greeting)\n"
