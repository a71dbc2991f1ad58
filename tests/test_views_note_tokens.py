"""The note writer's token sums in views.json, asserted exactly from what the scripted server received:
its word counts where it reports usage, and where it reports none, the count of OpenAI's cookbook
("How to count tokens with tiktoken": 3 tokens per message, its role and content encoded, 3 to prime the
reply) done here with tiktoken itself on the logged requests."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
from _views_support import ID_1766, Replay, requests_1766_points_file
from conftest import DATASET, TRAJ
from typer.testing import CliRunner

from takeover.cli import app
from takeover.testing.scripted_server import count_words, prompt_words

SUMMARY = "- The agent quoted qop in requests/auth.py.\n- It has not re-run its reproduction script."
STRUCTURED = json.dumps({
    "problem_understanding": "Quote the qop value in the Digest Authorization header.",
    "work_completed": "Edited requests/auth.py to write qop=\"auth\".",
    "evidence_observed": "reproduce_issue.py printed qop=auth before the edit.",
    "observed_failures": "NONE OBSERVED",
    "remaining_uncertainty": "Effect of the edit not yet observed.",
    "rollback_notes": "NONE OBSERVED",
    "recommended_next_action": "Re-run reproduce_issue.py.",
})
BROKEN = '{"problem_understanding": "quote qop", "work_completed": '


@pytest.fixture(scope="module")
def cl100k():
    """tiktoken's cl100k_base from the copy litellm ships (no download)."""
    spec = importlib.util.find_spec("litellm")
    bundled = Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def cookbook_prompt_tokens(enc, messages: list[dict]) -> int:
    return 3 + sum(3 + len(enc.encode(m["role"])) + len(enc.encode(m["content"])) for m in messages)


def test_note_tokens_are_the_sums_of_what_the_server_received(tmp_path, cl100k):
    replay = Replay()
    with replay.server:
        # summary_notes: one answer without usage; structured_notes: a broken answer, then a valid one.
        replay.script([{"content": SUMMARY, "usage": None}, {"content": BROKEN}, {"content": STRUCTURED}])
        out = tmp_path / "views"
        result = CliRunner().invoke(app, [
            "views", str(TRAJ / "mini-swe-agent" / f"{ID_1766}.json"), "--dataset", str(DATASET),
            "--point-type", "after_first_source_edit", "--points-file", str(requests_1766_points_file(tmp_path)),
            "--out-dir", str(out), "--model", "writer", "--base-url", replay.base_url,
            "--api-key-env", "NO_SUCH_KEY_VAR"], catch_exceptions=False)
        requests = replay.requests
    assert result.exit_code == 0, result.output
    assert len(requests) == 3
    views = json.loads((out / "views.json").read_text())
    summary, structured = views["views"]["summary_notes"]["note_tokens"], views["views"]["structured_notes"]["note_tokens"]

    estimated_prompt = cookbook_prompt_tokens(cl100k, requests[0]["messages"])
    assert (summary["calls"], summary["estimated_calls"]) == (1, 1)
    assert (summary["prompt_tokens"], summary["completion_tokens"]) == (estimated_prompt, len(cl100k.encode(SUMMARY)))

    assert (structured["calls"], structured["failed_calls"], structured["estimated_calls"]) == (2, 0, 0)
    assert structured["prompt_tokens"] == prompt_words(requests[1]) + prompt_words(requests[2])
    assert structured["completion_tokens"] == count_words(BROKEN) + count_words(STRUCTURED)

    total = views["note_tokens_total"]
    assert (total["calls"], total["estimated_calls"]) == (3, 1)
    assert total["prompt_tokens"] == estimated_prompt + prompt_words(requests[1]) + prompt_words(requests[2])
    assert total["completion_tokens"] == len(cl100k.encode(SUMMARY)) + count_words(BROKEN) + count_words(STRUCTURED)
