"""The optional model judge of the claims the rules leave unsupported (docs/protocol.md section 7.6): asked
once per note with the evidence the note writer had, its verdicts are recorded apart and never change the
rules' figures; `takeover claims --judge-model` judges a study's notes, and the report shows them apart."""

from __future__ import annotations

import json

from test_claims import CHECKPOINT, crafted_run
from test_report_claims import _with_notes
from test_report_page import experiment  # noqa: F401  (the hand-written study with real run folders)
from test_report_rediscovery import _with_predecessor
from typer.testing import CliRunner

from takeover.claims import check_note, trace_facts
from takeover.claims.claims_judge import judge_unsupported
from takeover.cli import app
from takeover.llm import ModelClient, ModelSettings
from takeover.report import build_report
from takeover.testing.scripted_server import ScriptedServer


def _check() -> dict:
    facts = trace_facts(crafted_run(), 11, checkpoint_patch=CHECKPOINT)
    note = "- It read src/helpers.py.\n- test_add failed.\n- It saw a KeyError."
    check = check_note(note, facts)
    return {"cut_event": 11, "note": note, "fields": None, **check.to_json()}


def test_the_judge_is_asked_about_the_unsupported_claims_only_and_recorded_apart():
    check = _check()
    assert [(c["text"], c["verdict"]) for c in check["claims"]] == [
        ("src/helpers.py", "unsupported"), ("test_add failed", "supported"), ("KeyError", "unsupported")]
    figures = dict(check["figures"])
    answer = {"verdicts": [{"claim": 0, "verdict": "contradicted", "step": 2, "reason": "cat showed calc.py only"},
                           {"claim": 7, "verdict": "supported", "step": None, "reason": "out of range"}]}
    with ScriptedServer([{"content": json.dumps(answer)}]) as server:
        client = ModelClient(ModelSettings(model="judge", base_url=server.base_url, api_key_env=None))
        record = judge_unsupported(check, crafted_run(), "add() must return a + b.", client)
        client.close()
        request = server.requests[0]
    prompt = request["messages"][0]["content"]
    assert '0. "src/helpers.py" in: It read src/helpers.py.' in prompt and '1. "KeyError" in: It saw a KeyError.' in prompt
    assert "test_add failed" not in prompt.split("The claims, each")[1]  # a supported claim is not asked about
    assert "[step 10 | environment | command]" in prompt and request["temperature"] == 0.0
    # Claim numbers are those of the note's claims; step 2 is event 1; a verdict for no asked claim is dropped.
    assert record["model"] == "judge" and record["verdicts"] == [
        {"claim": 0, "verdict": "contradicted", "event": 1, "reason": "cat showed calc.py only"},
        {"claim": 2, "verdict": "no_answer", "event": None, "reason": ""}]
    assert record["usage"]["calls"] == 1
    assert check["figures"] == figures  # the rules' figures are untouched


def test_an_endpoint_that_fails_leaves_every_asked_claim_without_an_answer():
    with ScriptedServer([{"status": 400, "error": "bad request"}]) as server:
        client = ModelClient(ModelSettings(model="judge", base_url=server.base_url, api_key_env=None, retries=0))
        record = judge_unsupported(_check(), crafted_run(), "", client)
        client.close()
    assert [v["verdict"] for v in record["verdicts"]] == ["no_answer", "no_answer"] and "400" in record["error"]


def test_claims_command_judges_a_study_and_the_report_shows_it_apart(experiment):  # noqa: F811
    out = experiment
    _with_predecessor(out)
    _with_notes(out)
    rules = build_report(out, plots=False, html=False).data["claims"]["views"]

    def judge(body: dict, n: int) -> dict:
        asked = body["messages"][0]["content"].split("The claims, each")[1]
        count = sum(1 for line in asked.splitlines() if line[:1].isdigit())
        return {"content": json.dumps({"verdicts": [{"claim": i, "verdict": "unsupported", "step": None, "reason": "no"}
                                                    for i in range(count)]})}

    with ScriptedServer(judge) as server:
        args = ["claims", str(out), "--judge-model", "judge", "--base-url", server.base_url, "--api-key-env", "NO_KEY"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        assert server.served == 2  # one call per note
        again = CliRunner().invoke(app, args)
        assert again.exit_code == 0 and server.served == 2  # judged notes are not judged again
    assert "summary_notes" in result.stdout and "5 unsupported" in result.stdout
    report = build_report(out, plots=False, html=True)
    views = report.data["claims"]["views"]
    assert [{k: v for k, v in e.items() if k != "judge"} for e in views] == rules  # the rules' figures: unchanged
    assert views[0]["judge"] == {"notes": 2, "model": "judge", "judged": 5, "supported": 0, "unsupported": 5,
                                 "contradicted": 0, "no_answer": 0}
    assert "A model judge's verdicts" in report.markdown
    listed = CliRunner().invoke(app, ["claims", str(out), "--json"])
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert {r["view"] for r in rows} == {"summary_notes"} and all(r["judge"]["model"] == "judge" for r in rows)


def test_claims_command_judges_again_under_the_request_flags(experiment):  # noqa: F811
    """--again judges judged notes again; --timeout, --retries and --max-retry-wait are the judge's requests'
    (the first request times out after 3 s and is retried once, at once)."""
    out = experiment
    _with_predecessor(out)
    _with_notes(out)
    answer = {"content": json.dumps({"verdicts": []})}
    with ScriptedServer([answer, answer]) as server:
        first = CliRunner().invoke(app, ["claims", str(out), "--judge-model", "judge", "--base-url", server.base_url,
                                         "--api-key-env", "NO_KEY"])
        assert first.exit_code == 0 and server.served == 2
    with ScriptedServer([{"delay": 6, **answer}, answer, answer]) as server:
        again = CliRunner().invoke(app, ["claims", str(out), "--judge-model", "judge", "--base-url", server.base_url,
                                         "--api-key-env", "NO_KEY", "--again", "--timeout", "3", "--retries", "1",
                                         "--max-retry-wait", "0.01", "--json"])
        assert again.exit_code == 0, again.output
        assert server.served == 3  # the timed-out request and its retry, then the second note
    rows = [json.loads(line) for line in again.stdout.splitlines()]
    calls = sorted(r["judge"]["usage"]["calls"] for r in rows)
    assert calls == [1, 2] and all(v["verdict"] == "no_answer" for r in rows for v in r["judge"]["verdicts"])
    missing = CliRunner().invoke(app, ["claims", str(out / "nothing-here")])
    assert missing.exit_code != 0


def test_views_judge_model_judges_the_notes_of_one_point(tmp_path):
    """``takeover views --judge-model``: the judge at the same endpoint as the note writer, recorded apart."""
    from _views_support import real_run, requests_1766_patches, requests_1766_points_file
    from conftest import DATASET, TRAJ

    from takeover.testing.restating_notes import restating_writer

    point_type = "after_first_source_edit"
    points_file = requests_1766_points_file(tmp_path, point_type)
    writer = restating_writer(real_run("psf__requests-1766"), 14, requests_1766_patches()[point_type])
    judged: list[str] = []

    def script(body: dict, n: int) -> dict:
        if body["messages"][0]["content"].startswith("The notes below were written"):
            judged.append(body["messages"][0]["content"])
            return {"content": json.dumps({"verdicts": [{"claim": 0, "verdict": "supported", "step": 1, "reason": "r"}]})}
        reply = writer(body, n)
        # One claim the rules cannot support: a file the predecessor never named.
        return {"content": reply["content"] + "\n- It read docs/api.rst."} if "JSON" not in body["messages"][1]["content"] else reply

    with ScriptedServer(script) as server:
        result = CliRunner().invoke(app, [
            "views", str(TRAJ / "mini-swe-agent" / "psf__requests-1766.json"), "--dataset", str(DATASET),
            "--point-type", point_type, "--points-file", str(points_file), "--out-dir", str(tmp_path / "v"),
            "--view", "summary_notes", "--model", "writer", "--judge-model", "judge", "--base-url", server.base_url,
            "--api-key-env", "NO_KEY", "--json"])
    assert result.exit_code == 0, result.output
    check = json.loads(result.stdout)["claims"]["summary_notes"]
    assert check["figures"]["unsupported"] == 1 and len(judged) == 1 and "docs/api.rst" in judged[0]
    assert check["judge"]["model"] == "judge" and [v["verdict"] for v in check["judge"]["verdicts"]] == ["supported"]
