"""`takeover report` checks the claims of a study's model-written notes (docs/protocol.md section 7.6): computed
from the files the study holds, stored with each view unit, read back while the prompt is the same; the
summary tables carry claims per note and the shares unsupported and contradicted beside solved, events and
tokens; the drill-down marks each note's claims with the events they cite."""

from __future__ import annotations

import json
import shutil

from test_report_page import _run_folder as _successor_folder
from test_report_page import (
    _unit,
    experiment,  # noqa: F401  (the hand-written study with real run folders)
)
from test_report_rediscovery import _with_predecessor, report_section

from takeover.claims import study_claims
from takeover.claims.unit_claims import stored_path
from takeover.report import build_report

NOTE = ("- Edited calc.py so that add returns a + b.\n- Ran `python repro.py`, which failed with an AssertionError.\n"
        "- Read utils.py.")


def _with_notes(out):
    """Add a summary_notes view (the note above) and its takeover run at both points of the study."""
    plan = json.loads((out / "plan.json").read_text())
    # The fixture's own summary_notes unit at p1 (note-writing tokens only) gives way to these.
    plan["stages"]["view"] = [u for u in plan["stages"]["view"] if u["key"] != "v-notes-p1"]
    (out / "units" / "view" / "v-notes-p1.json").unlink()
    for p in ("p1", "p2"):
        cp_dir = out / "work" / "checkpoint" / p / "checkpoint"
        prompt = cp_dir / "views" / "summary_notes.md"
        prompt.write_text("<takeover_instructions>x</takeover_instructions>\n\n<previous_agent view=\"summary_notes\">\n"
                          f"Notes about the previous agent's work, written from its event log:\n\n{NOTE}\n</previous_agent>")
        ptype = "after_first_source_edit" if p == "p1" else "after_first_post_failure_edit"
        labels = {"instance_id": "acme__calc-1", "point_type": ptype, "point_key": p, "view": "summary_notes"}
        plan["stages"]["view"].append({"key": f"v-summary_notes-{p}", "labels": labels})
        _unit(out, "view", f"v-summary_notes-{p}", {"path": str(prompt), "characters": 200})
        tkey = f"t-summary_notes-{p}"
        plan["stages"]["takeover"].append({"key": tkey, "labels": {**labels, "successor": "m"}})
        plan["stages"]["grade"].append({"key": f"g-summary_notes-{p}", "labels": {**labels, "successor": "m",
                                                                                  "takeover_key": tkey}})
        run_dir = out / "work" / "takeover" / tkey / "run"
        _successor_folder(run_dir, view="summary_notes", checkpoint_dir=cp_dir, estimated=False)
        _unit(out, "takeover", tkey, {"run_dir": str(run_dir), "exit_status": "submitted", "agent_events": 5,
                                      "llm_calls": 3, "prompt_tokens": 420, "completion_tokens": 17,
                                      "initial_prompt_chars": 200, "patch_path": str(run_dir / "patch.diff")})
        _unit(out, "grade", f"g-summary_notes-{p}", {"resolved": p == "p2", "handoff_state": "resolved_preserve",
                                                    "fail_to_pass_rate": 1.0, "pass_to_pass_rate": 1.0})
    (out / "plan.json").write_text(json.dumps(plan))


def test_report_checks_the_notes_claims_and_stores_them_with_the_view_units(experiment):  # noqa: F811
    out = experiment
    pred = _with_predecessor(out)  # edit calc.py (0), git diff (2), python repro.py (4, output "ok"), ls (6)
    _with_notes(out)
    report = build_report(out, plots=False, html=True)
    checks = {c.key: c for c in study_claims(out, store=False)}
    # At p1 (cut after event 0) the edit is there, nothing ran yet; at p2 (cut at event 6) repro.py ran and
    # passed: "failed" is contradicted by its output. utils.py was never read, no AssertionError was seen.
    got = {k: [(c["kind"], c["text"], c["verdict"], c["event"]) for c in checks[k].claims] for k in checks
           if checks[k].claims is not None}
    assert got == {
        "v-summary_notes-p1": [("edit", "calc.py", "supported", 0),
                               ("outcome", "`python repro.py`, which failed", "unsupported", None),
                               ("error", "AssertionError", "unsupported", None), ("file", "utils.py", "unsupported", None)],
        "v-summary_notes-p2": [("edit", "calc.py", "supported", 0),
                               ("outcome", "`python repro.py`, which failed", "contradicted", 5),
                               ("error", "AssertionError", "unsupported", None), ("file", "utils.py", "unsupported", None)],
    }
    section = report.data["claims"]
    assert [(v["view"], v["notes"], v["claims"], v["claims_per_note"], v["supported"], v["unsupported"],
             v["contradicted"]) for v in section["views"]] == [("summary_notes", 2, 8, 4.0, 2, 5, 1)]
    # The summary tables: beside solved, events and tokens; repo_only and raw_trace have no notes.
    summary = {e["view"]: e for e in report.data["summary"]}
    assert summary["summary_notes"]["claims"]["unsupported_share"] == 0.625
    assert summary["summary_notes"]["claims"]["contradicted_share"] == 0.125
    assert "claims" not in summary["repo_only"]
    by_type = {k: {e["view"]: e for e in v} for k, v in report.data["by_point_type"].items()}
    assert by_type["after_first_post_failure_edit"]["summary_notes"]["claims"]["contradicted"] == 1
    assert by_type["after_first_source_edit"]["summary_notes"]["claims"]["contradicted"] == 0
    assert "| m | summary_notes | 2 | 50.0% |" in report.markdown and "| 4 | 62% | 12% |" in report.markdown
    assert "## Claims of the notes checked against the trace" in report.markdown
    page = (out / "report.html").read_text()
    assert '<section id="claims">' in page and "claims per note" in page
    # The drill-down: the note, its claims with verdicts, and the events they cite.
    marked = report_section(out, "p2")["claims"]["summary_notes"]
    assert marked["note"] == NOTE and marked["figures"]["contradicted"] == 1
    assert marked["events"]["5"].startswith("[step 6 | environment | command]")

    # The next report reads the stored checks: no predecessor needed any more.
    assert stored_path(out, "v-summary_notes-p1").exists()
    shutil.rmtree(pred)
    again = build_report(out, plots=False, html=False)
    assert again.data["claims"]["views"] == section["views"] and again.data["claims"]["not_computed"] == {}
    # A view written again (another prompt) is checked again: here its predecessor is gone, so it says why.
    prompt = out / "work" / "checkpoint" / "p1" / "checkpoint" / "views" / "summary_notes.md"
    prompt.write_text(prompt.read_text().replace("Read utils.py.", "Read calc.py."))
    redone = build_report(out, plots=False, html=False).data["claims"]
    assert redone["not_computed"] == {"v-summary_notes-p1": f"the predecessor's run folder {pred} is gone"}


def test_a_note_that_cannot_be_checked_is_listed_with_why(experiment):  # noqa: F811
    report = build_report(experiment, plots=False, html=False)
    assert report.data["claims"]["views"] == []
    # The summary_notes unit of the fixture has no prompt file: listed with why.
    assert report.data["claims"]["not_computed"] == {"v-notes-p1": "the view's prompt file is gone"}
    assert "Not checked: v-notes-p1: the view's prompt file is gone" in report.markdown
    assert all("claims" not in e for e in report.data["summary"])
