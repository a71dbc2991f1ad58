"""``takeover inspect`` through the real CLI (typer's CliRunner and one subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import TRAJ
from prerequisites import requires
from typer.testing import CliRunner

from takeover.cli import app

KEYS = [
    "format",
    "instance_id",
    "agent_events",
    "actions",
    "observations",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
    "usage_estimated",
    "exit_status",
    "final_patch_files",
    "usage_per_call",
    "calls_with_usage",
]
MINI = TRAJ / "mini-swe-agent" / "psf__requests-1766.json"
V0 = TRAJ / "openhands" / "v0" / "multi_swe_bench_examples.output.jsonl"
#: Every test here reads the real mini-swe-agent run; some the OpenHands v0 file too.
pytestmark = requires("shared:trajectories/mini-swe-agent/psf__requests-1766.json")
NEEDS_V0 = requires("shared:trajectories/openhands/v0/multi_swe_bench_examples.output.jsonl")


def runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 always keeps stderr apart
        return CliRunner()


@NEEDS_V0
def test_inspect_json_lines():
    result = runner().invoke(app, ["inspect", "--json", str(MINI), str(V0)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [list(r) for r in rows] == [KEYS] * 4
    doc = json.loads(MINI.read_text())
    assistant = [m for m in doc["messages"] if m["role"] == "assistant"]
    assert rows[0] == {
        "format": "mini-swe-agent",
        "instance_id": "psf__requests-1766",
        "agent_events": len(doc["messages"]) - 2,
        "actions": len(assistant),
        "observations": len(doc["messages"]) - 2 - len(assistant),
        "llm_calls": len(assistant),
        "prompt_tokens": sum(m["extra"]["response"]["usage"]["prompt_tokens"] for m in assistant),
        "completion_tokens": sum(m["extra"]["response"]["usage"]["completion_tokens"] for m in assistant),
        "cached_tokens": sum(m["extra"]["response"]["usage"]["prompt_tokens_details"]["cached_tokens"] for m in assistant),
        "cache_creation_tokens": None,
        "reasoning_tokens": sum(
            m["extra"]["response"]["usage"]["completion_tokens_details"]["reasoning_tokens"] for m in assistant
        ),
        "usage_estimated": False,
        "exit_status": "Submitted",
        "final_patch_files": ["requests/auth.py"],
        "usage_per_call": True,
        "calls_with_usage": len(assistant),
    }
    pony = [json.loads(line) for line in V0.read_text().splitlines()]
    assert [r["instance_id"] for r in rows[1:]] == [p["instance_id"] for p in pony]
    assert [r["prompt_tokens"] for r in rows[1:]] == [
        p["metrics"]["accumulated_token_usage"]["prompt_tokens"] for p in pony
    ]


def test_inspect_table():
    result = runner().invoke(app, ["inspect", str(MINI)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "psf__requests-1766" in result.stdout and "requests/auth.py" in result.stdout
    assert "mini-swe-agent" in result.stdout and "Submitted" in result.stdout


@NEEDS_V0
def test_bad_files_are_reported_and_good_ones_still_printed(tmp_path):
    cut = tmp_path / "cut.json"
    text = MINI.read_text()
    cut.write_text(text[:5000])
    try:
        json.loads(text[:5000])
    except json.JSONDecodeError as exc:
        line = exc.lineno
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"hello": "world"}))
    missing = tmp_path / "missing.jsonl"
    rows = [json.loads(x) for x in V0.read_text().splitlines()]
    del rows[2]["instance_id"]
    missing.write_text("".join(json.dumps(r) + "\n" for r in rows))

    result = runner().invoke(app, ["inspect", "--json", str(cut), str(MINI), str(unknown), str(missing)])
    assert result.exit_code == 2
    assert [json.loads(x)["instance_id"] for x in result.stdout.splitlines()] == ["psf__requests-1766"]
    errors = result.stderr.splitlines()
    assert len(errors) == 3
    assert errors[0].startswith(f"error: {cut}: line {line}: not valid JSON")
    assert errors[1].startswith(f"error: {unknown}: top-level object: unknown trajectory format")
    assert errors[2] == f"error: {missing}: line 3: field 'instance_id': missing required field"


def test_single_bad_file_exit_status_through_subprocess(tmp_path):
    doc = json.loads(MINI.read_text())
    del doc["messages"][4]["role"]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    proc = subprocess.run(
        [sys.executable, "-m", "takeover", "inspect", str(path)], check=False, capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {path}: messages[4]: field 'role': missing required field"
    assert proc.stdout == ""
