"""``--verbose`` of every command: other libraries' loggers (httpx, litellm, matplotlib,
swebench) go from WARNING to INFO, and worker processes learn the choice through ``TAKEOVER_VERBOSE``.
Without the flag they stay at WARNING (the subprocess tests of ``test_progress_lines.py`` check the output
side: no INFO lines when nobody asked for them)."""

from __future__ import annotations

import logging
import os

import pytest
from typer.testing import CliRunner

from takeover.cli import app

# Written out rather than read from takeover._util.logs: these are the libraries whose INFO lines users saw.
LIBRARY_LOGGERS = ("httpx", "LiteLLM", "matplotlib.font_manager")


@pytest.fixture
def logging_state(monkeypatch):
    """Put the loggers, the root handlers and TAKEOVER_VERBOSE back as they were after the test."""
    monkeypatch.delenv("TAKEOVER_VERBOSE", raising=False)
    monkeypatch.setenv("LITELLM_LOG", "ERROR")
    root = logging.getLogger()
    handlers, root_level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in LIBRARY_LOGGERS}
    yield
    root.handlers[:] = handlers
    root.setLevel(root_level)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.parametrize("argv", [
    ["grade", "--verbose", "--dataset", "missing.jsonl", "--gold", "--instance-id", "x"],
    ["points", "--verbose", "missing-runs", "--dataset", "missing.jsonl"],
    ["views", "-v", "missing-run.json", "--dataset", "missing.jsonl"],
    ["run", "--verbose", "missing.toml"],
    ["quickstart", "-v", "--dataset", "missing.jsonl", "--out-dir", "qs"],
    ["checkpoint", "-v", "missing-run.json", "--dataset", "missing.jsonl", "--point-type", "x", "--out-dir", "cp"],
    ["inspect", "--verbose", "missing-run.json"],
    ["tasks", "select", "--verbose", "--dataset", "missing.jsonl", "--out-dir", "sel"],
    ["tasks", "images", "--verbose", "--dataset", "missing.jsonl"],
    ["agent", "run", "-v", "--dataset", "missing.jsonl", "--instance-id", "x", "--model", "m", "--out-dir", "r"],
    ["report", "--verbose", "missing-out"],
    ["serve-model", "--verbose", "--model-path", "missing.gguf"],
    ["doctor", "--verbose", "--mirror", "missing-mirror", "--strict"],
    ["show", "--verbose", "missing-run.json"],
    ["handoff", "--verbose", "missing-session.jsonl"],
    ["export", "atif", "--verbose", "missing-run.json"],
    ["resume", "-v", "missing-session.jsonl", "--model", "m"],
    ["rediscovery", "-v", "missing-a.jsonl", "missing-b.jsonl", "--event", "1"],
    ["claims", "--verbose", "missing-out"],
    ["export", "harbor", "--verbose", "missing-checkpoint", "--dataset", "missing.jsonl"],
], ids=lambda argv: " ".join(argv[:2]) if argv[0] in ("tasks", "agent", "export") else argv[0])
def test_verbose_lets_other_libraries_log_at_info(argv, logging_state, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code != 0  # the inputs do not exist; the flag took effect before they were read
    assert [logging.getLogger(name).level for name in LIBRARY_LOGGERS] == [logging.INFO] * len(LIBRARY_LOGGERS)
    assert os.environ["TAKEOVER_VERBOSE"] == "1"


def test_without_verbose_other_libraries_stay_at_warning(logging_state, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["grade", "--dataset", "missing.jsonl", "--gold", "--instance-id", "x"])
    assert result.exit_code == 2
    assert [logging.getLogger(name).level for name in LIBRARY_LOGGERS] == [logging.WARNING] * len(LIBRARY_LOGGERS)
    assert "TAKEOVER_VERBOSE" not in os.environ
