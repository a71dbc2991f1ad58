"""``takeover inspect`` of a run where only some model calls record their usage: the totals are over those
calls, and the output says how many they are (docs/protocol.md section 1: where the counts come from)."""

from __future__ import annotations

import json

from _mini_swe_agent import write_1x
from typer.testing import CliRunner

from takeover.cli import app


def test_a_total_over_some_calls_says_it_is_partial(tmp_path):
    path = write_1x(tmp_path / "run.traj.json", "acme__calc-1", [("ls", "a.py", 0), ("cat a.py", "x = 1", 0)], "")
    doc = json.loads(path.read_text())
    assistant = [m for m in doc["messages"] if m["role"] == "assistant"]
    del assistant[1]["extra"]  # this call's response (and usage) was not kept
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    assert (row["llm_calls"], row["calls_with_usage"], row["prompt_tokens"]) == (3, 2, 200)
    table = CliRunner().invoke(app, ["inspect", str(path)], terminal_width=200)
    assert "200 (2 of 3 calls)" in table.stdout
    assert "(N of M calls): partial totals, over the calls that record usage" in table.stdout
