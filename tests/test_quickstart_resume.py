"""A finished quickstart run again in its folder resumes: its embedded model is served on another free port,
yet no unit is redone (no model call, no replay, no grading), because unit keys name the embedded model by
its weights' sha256 and settings, not by its address. The embedded model is played by the stand-in for
llama-cpp-python's server (tests/standin_llama.py) on the synthetic task of test_experiment_e2e.py. The
same run shows the per-call progress lines and the notice that every report of the folder carries."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from standin_llama import install, logged_argv
from test_cli_quickstart_flags import common_flags
from test_experiment_e2e import synthetic  # noqa: F401  (a fixture)
from typer.testing import CliRunner

from takeover.cli import app

TIME = r"\d\d:\d\d:\d\d"


def _quickstart(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "takeover", "quickstart", *args], env=env, capture_output=True,
                          text=True, timeout=580, check=False)


def _unit_files(out: Path) -> dict[str, int]:
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in sorted((out / "units").rglob("*.json"))}


@pytest.mark.slow
def test_a_finished_quickstart_resumes_with_no_model_call_replay_or_grading(synthetic, tmp_path):  # noqa: F811
    out = synthetic / "qs"
    weights = tmp_path / "tiny.gguf"
    weights.write_bytes(b"GGUF")
    env = {**os.environ, **install(tmp_path / "standin", tmp_path / "argv.json"), "COLUMNS": "300",
           "TAKEOVER_CACHE": str(tmp_path / "cache")}
    env.pop("TAKEOVER_MIRROR", None)
    args = [*common_flags(synthetic), "--step-limit", "3", "--model-path", str(weights), "--out-dir", str(out)]
    first = _quickstart(args, env)
    assert first.returncode == 0, first.stdout + first.stderr
    port = int(logged_argv(tmp_path / "argv.json")["--port"])
    calls = (out / "model-calls.jsonl").read_text().splitlines()
    units = _unit_files(out)
    assert {json.loads(c)["unit"]["stage"] for c in calls} == {"view", "takeover"}
    assert len([u for u in units if u.startswith("units/grade/")]) == 4

    # One line per model call, with the unit it serves, its tokens and seconds (stderr is a pipe here).
    lines = [line for line in first.stderr.splitlines() if " model call " in line]
    assert len(lines) == len(calls)
    assert any(re.fullmatch(rf"{TIME} model call 1 of view structured_notes \(acme__calc-1 after_first_source_edit\): "
                            r"[\d,]+ prompt tokens, [\d,]+ completion tokens, \d+\.\d s, json_object", line)
               for line in lines), lines
    assert any(re.fullmatch(rf"{TIME} model call 2 of takeover raw_trace \(acme__calc-1 after_first_source_edit\): "
                            r"[\d,]+ prompt tokens, [\d,]+ completion tokens, \d+\.\d s", line) for line in lines), lines
    # The user's own weights are named as such; the speed is measured at the server's start, and no estimate
    # is made for work that is not the defaults'.
    assert re.search(rf"^{TIME} done model weights: \d+\.\d s — your file {weights} \(--model-path\)$",
                     first.stderr, re.MULTILINE), first.stderr
    assert re.search(rf"^{TIME} This machine, measured now: prompt [\d,]+ tokens/s, generation [\d,.]+ tokens/s\. "
                     r"No estimate of the run's duration: the known work is the quickstart's with its defaults; this "
                     r"run differs in instance_ids, model\.$", first.stderr, re.MULTILINE), first.stderr
    saved = json.loads((out / "quickstart.json").read_text())
    assert saved["weights"] == f"your file {weights} (--model-path)" and saved["speed"]["generated_tokens"] > 0
    assert saved["estimate"] is None and saved["run_seconds"] > 0
    config = json.loads((out / "config.resolved.json").read_text())
    identity = config["successors"][0]["extra"]["identity"]
    assert f"gguf-sha256:{hashlib.sha256(b'GGUF').hexdigest()}" in identity

    with socket.socket() as busy:  # the first run's port is taken: the second server gets another one
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the first server's closed sockets wait
        busy.bind(("127.0.0.1", port))
        busy.listen()
        second = _quickstart(args, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert int(logged_argv(tmp_path / "argv.json")["--port"]) != port
    assert (out / "model-calls.jsonl").read_text().splitlines() == calls  # not one model call
    assert _unit_files(out) == units  # not one unit redone: no note, takeover run, replay or grading
    for stage, count in (("points", 1), ("handoff_state", 1), ("view", 4), ("takeover", 4), ("grade", 4)):
        assert re.search(rf"^{TIME} {stage}: stage done in \d+\.\d s: {count} done, 0 failed \({count} reused\), ",
                         second.stderr, re.MULTILINE), (stage, second.stderr)
    assert " model call " not in second.stderr

    # The notice lives with the results: a report rebuilt later still says it is a demonstration.
    (out / "report.md").unlink()
    rebuilt = CliRunner().invoke(app, ["report", str(out)])
    assert rebuilt.exit_code == 0, rebuilt.output
    report_md = (out / "report.md").read_text()
    assert "**This is a demonstration, not a measurement.** The successor and the note writer were the embedded" \
        in report_md and "under a 3-step limit" in report_md
    html = (out / "report.html").read_text()
    assert '<div class="notice" id="notice"><p><strong>This is a demonstration, not a measurement.</strong>' in html
