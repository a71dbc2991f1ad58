"""``takeover run`` flags on the synthetic experiment of test_experiment_e2e.py, cut to one point type and
one view: --mirror fills in a file that names none, --workers/--executor run units in worker processes,
--no-report/--report, and --retry-failed redoes the units that failed (docs/protocol.md section 10: every
stage runs as resumable units of work)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from test_experiment_e2e import script, synthetic  # noqa: F401  (synthetic is a fixture)
from typer.testing import CliRunner

from takeover.cli import app
from takeover.testing.scripted_server import ScriptedServer


def small_experiment(root: Path, port: int) -> Path:
    """One point type, one view, no mirror named in the file (``--mirror`` gives it)."""
    model = f'model = "scripted"\nbase_url = "http://127.0.0.1:{port}/v1"\napi_key_env = "SCRIPTED_KEY"\nretries = 0\n'
    path = root / "small.toml"
    path.write_text(f"""
name = "small"
out_dir = "small"
offline = true
point_types = ["after_first_source_edit"]
views = ["repo_only"]
bootstrap_resamples = 50

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
""")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def units(out: Path, stage: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "units" / stage).glob("*.json"))]


def run(*args: str):
    return CliRunner().invoke(app, ["run", *args, "--no-progress"])


def test_run_flags_mirror_workers_executor_report_and_retry_failed(synthetic, monkeypatch):  # noqa: F811
    monkeypatch.chdir(synthetic)
    monkeypatch.delenv("TAKEOVER_MIRROR", raising=False)
    port = free_port()
    exp = small_experiment(synthetic, port)
    out = synthetic / "small"
    mirror = ["--mirror", str(synthetic / "mirror")]

    # The endpoint fails every call: the predecessor fails, the stages after it are blocked.
    with ScriptedServer(lambda body, n: {"status": 500, "error": "down"}, port=port):
        failed = run(str(exp), *mirror, "--workers", "2", "--executor", "local", "--no-report")
    assert failed.exit_code == 1, failed.output
    assert "rerun them with --retry-failed" in failed.stdout
    assert json.loads((out / "config.resolved.json").read_text())["mirror"] == str((synthetic / "mirror").resolve())
    (predecessor,) = units(out, "predecessor")
    assert predecessor["status"] == "failed" and predecessor["pid"] != os.getpid()  # ran in a worker process
    assert not (out / "report.md").exists()  # --no-report

    with ScriptedServer(script, port=port) as srv:
        kept = run(str(exp), *mirror, "--no-report")
        assert kept.exit_code == 1 and srv.served == 0  # a plain re-run keeps the failure
        redone = run(str(exp), *mirror, "--retry-failed", "--report", "-w", "1")
    assert redone.exit_code == 0, redone.output
    assert "Every planned unit is done." in redone.stdout
    (predecessor,) = units(out, "predecessor")
    # One worker is still a worker process: units never run in the coordinator, which must outlive them.
    assert predecessor["status"] == "done" and predecessor["pid"] != os.getpid()
    assert (out / "report.md").exists() and "report.md" in redone.stdout  # --report

    bad = run(str(exp), *mirror, "--executor", "threads")
    assert bad.exit_code == 2 and "local or ray" in bad.output
