"""``takeover views`` against each reply shape real endpoints send (scripted server, the real psf/requests
run): reasoning only, inline thinking with braces, a reply cut at the cap, 429 with Retry-After (seconds
and date), a prompt count of 0, cached and reasoning token details, a dropped connection. Each test reads
views.json back: validation, note attempts, HTTP attempts with their waits, and the note tokens
(docs/protocol.md section 7: notes validated, at most three attempts; thinking never enters a view)."""

from __future__ import annotations

import json

import pytest
from _views_support import Replay, requests_1766_points_file
from test_views_cli import STRUCTURED, SUMMARY, invoke

from takeover.llm import REASONING_ONLY

CAP = 0.2  # --max-retry-wait: the longest wait between attempts, so no test sleeps for seconds


@pytest.fixture
def points_file(tmp_path):
    return requests_1766_points_file(tmp_path)


def views(tmp_path, points_file, script: list[dict], view: str = "summary_notes") -> tuple[int, dict, Replay, str]:
    """Write ``view`` with the scripted writer; returns (exit code, views.json row, server, view text)."""
    out = tmp_path / "views"
    replay = Replay().script(script)
    with replay.server:
        result = invoke("--point-type", "after_first_source_edit", "--points-file", str(points_file), "--out-dir", str(out),
                        "--view", view, "--model", "writer", "--base-url", replay.base_url,
                        "--api-key-env", "NO_SUCH_KEY_VAR", "--max-retry-wait", str(CAP))
    row = json.loads((out / "views.json").read_text())["views"][view]
    text = (out / f"{view}.md").read_text() if row.get("file") else ""
    return result.exit_code, row, replay, text


def test_reasoning_only_blocks_the_view_and_names_the_cause(tmp_path, points_file):
    reply = {"content": None, "reasoning_content": "The agent edited auth.py and then I", "finish_reason": "length",
             "usage": {"prompt_tokens": 900, "completion_tokens": 1600, "reasoning_tokens": 1600}}
    code, row, replay, _ = views(tmp_path, points_file, [reply, {"content": SUMMARY}])
    assert code == 1 and row["file"] is None and row["validation"] == "model_error"
    assert REASONING_ONLY in row["error"] and replay.served == 1  # asking again would get the same reply
    notes = row["note_tokens"]
    assert (row["attempts"], notes["calls"], notes["reasoning_tokens"], notes["completion_tokens"]) == (1, 1, 1600, 1600)
    assert [a["status"] for a in notes["attempts"]] == ["reasoning_only"]


def test_thinking_with_braces_is_removed_before_validation_and_never_reaches_the_view(tmp_path, points_file):
    thinking = '<think>Should it be {"work_completed": "Fixed."}? No: nothing was verified {</think>\n'
    code, row, _, text = views(tmp_path, points_file, [{"content": thinking + STRUCTURED}], "structured_notes")
    assert code == 0 and (row["validation"], row["attempts"]) == ("valid", 1)
    assert "Quote the qop value" in text and "<think>" not in text and "nothing was verified" not in text
    code, row, _, text = views(tmp_path / "s", points_file, [{"content": f"<thinking>{{draft}}</thinking>{SUMMARY}"}])
    assert code == 0 and row["validation"] == "valid" and SUMMARY in text and "draft" not in text


def test_a_truncated_reply_is_retried_within_three_attempts(tmp_path, points_file):
    cut = {"content": SUMMARY[:40], "finish_reason": "length"}
    code, row, replay, text = views(tmp_path, points_file, [cut, {"content": SUMMARY}])
    assert code == 0 and (row["validation"], row["attempts"]) == ("retried", 2) and SUMMARY in text
    assert row["rejections"][0].startswith("attempt 1: truncated: the answer was cut at the completion token cap")
    assert "cut off at the length limit" in replay.requests[1]["messages"][-1]["content"]


def test_a_reply_that_stays_truncated_is_labelled(tmp_path, points_file):
    cut = {"content": SUMMARY, "finish_reason": "length"}
    code, row, replay, text = views(tmp_path, points_file, [cut] * 3)
    assert code == 0 and (row["validation"], row["attempts"], replay.served) == ("truncated", 3, 3)
    assert len(row["rejections"]) == 2 and all("truncated" in r for r in row["rejections"])
    assert SUMMARY in text


def test_truncated_json_that_never_completes_is_rejected_with_the_cause(tmp_path, points_file):
    cut = {"content": STRUCTURED[:60], "finish_reason": "length"}
    code, row, _, _ = views(tmp_path, points_file, [cut] * 3, "structured_notes")
    assert code == 1 and (row["validation"], row["attempts"]) == ("rejected", 3)
    assert all("truncated" in r and "not a JSON object" in r for r in row["rejections"])


@pytest.mark.parametrize(("limited", "asked"), [({"retry_after": 6}, (6.0, 6.0)),
                                                 ({"retry_after_date": 60}, (50.0, 60.0))])
def test_a_rate_limit_waits_as_asked_up_to_the_cap(tmp_path, points_file, limited, asked):
    code, row, _, _ = views(tmp_path, points_file, [{"status": 429, "error": "slow down", **limited},
                                                    {"content": SUMMARY}])
    assert code == 0 and (row["validation"], row["attempts"]) == ("valid", 1)  # one note attempt, two calls
    notes = row["note_tokens"]
    assert (notes["calls"], notes["failed_calls"], notes["wait_seconds"]) == (2, 1, CAP)
    first = notes["attempts"][0]
    assert first["status"] == "http_429" and asked[0] <= first["retry_after"] <= asked[1]
    assert first["wait_seconds"] == CAP and notes["attempts"][1]["wait_seconds"] == 0.0


def test_a_zero_prompt_count_is_estimated_and_flagged(tmp_path, points_file):
    reply = {"content": SUMMARY, "usage": {"prompt_tokens": 0, "completion_tokens": 25, "cached_tokens": 0}}
    code, row, replay, _ = views(tmp_path, points_file, [reply])
    notes = row["note_tokens"]
    assert code == 0 and notes["estimated"] and notes["estimated_calls"] == 1
    assert notes["completion_tokens"] == 25 and notes["cached_tokens"] == 0
    # the evidence prompt holds thousands of words; its estimate is of that order, never the reported 0
    words = sum(len(m["content"].split()) for m in replay.requests[0]["messages"])
    assert words / 2 < notes["prompt_tokens"] < words * 4


def test_cached_and_reasoning_tokens_are_recorded_apart(tmp_path, points_file):
    usage = {"prompt_tokens": 3000, "completion_tokens": 500, "cached_tokens": 2800, "reasoning_tokens": 400}
    code, row, _, text = views(tmp_path, points_file, [{"content": SUMMARY, "reasoning_content": "the qop edit",
                                                        "usage": usage}])
    notes = row["note_tokens"]
    assert code == 0 and row["validation"] == "valid" and "the qop edit" not in text
    assert (notes["prompt_tokens"], notes["cached_tokens"], notes["completion_tokens"], notes["reasoning_tokens"]) == (
        3000, 2800, 500, 400)
    assert notes["estimated_calls"] == 0 and not notes["estimated"]


def test_a_dropped_connection_is_retried(tmp_path, points_file):
    code, row, replay, _ = views(tmp_path, points_file, [{"drop": True}, {"content": SUMMARY}])
    notes = row["note_tokens"]
    assert code == 0 and (row["validation"], row["attempts"], replay.served) == ("valid", 1, 2)
    assert [a["status"] for a in notes["attempts"]] == ["connection_error", "ok"]
    assert 0 < notes["attempts"][0]["wait_seconds"] <= CAP
