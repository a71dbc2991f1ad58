"""`takeover report` adds the rediscovery figures to a study folder written before they existed: computed from
the run folders the study holds (no model call, no grading), stored with each takeover unit, read back the
next time; the HTML page shows the table and the stacked bars, and marks each drill-down step."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from test_rediscovery_labels import _run, _run_folder, cmd, edit
from test_report_page import experiment  # noqa: F401  (the hand-written study with real run folders)

from takeover.rediscovery.study import FIGURES_FILE, study_figures
from takeover.report import build_report
from takeover.report.page import decode_section


def _with_predecessor(out):
    """Give the study's checkpoint units the predecessor trajectory they were cut from (as a study writes
    them): edit calc.py (0), git diff (2), python repro.py (4), ls (6)."""
    (out / "work" / "predecessor" / "pred-1").mkdir(parents=True)
    pred = _run_folder(out / "work" / "predecessor" / "pred-1" / "run",
                       _run([edit("calc.py", "a - b", "a + b"), cmd("git diff"), cmd("python repro.py"), cmd("ls")]))
    for key in ("p1", "p2"):
        path = out / "units" / "checkpoint" / f"{key}.json"
        unit = json.loads(path.read_text())
        unit["inputs"]["trajectory"] = {"run_dir": str(pred)}
        path.write_text(json.dumps(unit))
    return pred


def test_report_adds_the_figures_to_a_folder_written_before(experiment):  # noqa: F811
    out = experiment
    pred = _with_predecessor(out)
    assert not list((out / "work" / "takeover").glob(f"*/{FIGURES_FILE}"))
    report = build_report(out, plots=True, html=True)
    section = report.data["rediscovery"]
    # The successor runs: git diff (0), the fix calc.py a - b -> a + b (2), submit (4). At p1 (cut after the
    # predecessor's edit) the diff was never seen; at p2 (cut at event 6) it was, on the same state.
    stored = {f.key: f for f in study_figures(out, store=False)}
    assert [(a["event"], a["label"], a["repeats"]) for a in stored["t-repo_only-p1"].labels] == [
        (0, "new", None), (2, "redo_edit", 0), (4, "new", None)]
    assert [(a["event"], a["label"], a["repeats"]) for a in stored["t-repo_only-p2"].labels] == [
        (0, "reread", 2), (2, "redo_edit", 0), (4, "new", None)]
    assert stored["t-raw_trace-p1"].figures["rediscovery_actions"] == 1  # its recorded folder moved: found under OUT
    summary = {e["view"]: e for e in section["summary"]}
    assert summary["repo_only"]["runs"] == 2 and summary["repo_only"]["median_rediscovery_actions"] == 1.5
    assert summary["repo_only"]["events_by_label"] == {"reread": 2, "research": 0, "rerun": 0, "redo_edit": 4,
                                                       "new": 4}
    assert summary["raw_trace"]["runs"] == 1
    change = summary["raw_trace"]["vs_repo_only"]["rediscovery_actions"]
    assert change["pairs"] == 1 and change["relative_change"] == 0.0  # p1 against p1: 1 and 1
    assert "## Rediscovery" in report.markdown and "| scripted" not in report.markdown
    assert (out / "plots" / "rediscovery.png").exists()
    page = (out / "report.html").read_text()
    assert '<section id="rediscovery">' in page and "Where each view" in page
    # The drill-down marks each step with its label and the predecessor event it repeats.
    units_section = report_section(out, "p2")
    steps = {s["index"]: (s.get("rediscovery"), s.get("repeats")) for s in units_section["runs"][0]["steps"]}
    assert steps == {0: ("reread", 2), 2: ("redo_edit", 0), 4: ("new", None)}

    # The next report reads the stored figures: no predecessor needed any more.
    shutil.rmtree(pred)
    again = build_report(out, plots=False, html=False)
    assert again.data["rediscovery"]["summary"] == section["summary"]
    assert again.data["rediscovery"]["not_computed"] == {}

    # A unit run again is computed again (here: its predecessor is gone, so it says why).
    unit_path = out / "units" / "takeover" / "t-repo_only-p2.json"
    unit = json.loads(unit_path.read_text())
    unit["started_at"] = "later"
    unit_path.write_text(json.dumps(unit))
    redone = build_report(out, plots=False, html=False).data["rediscovery"]
    assert redone["not_computed"] == {"t-repo_only-p2": f"the predecessor's run folder {pred} is gone"}


def report_section(out, point_key: str) -> dict:
    """The drill-down section of ``point_key`` as the page carries it."""
    from takeover.report.page import build_drilldown
    from takeover.report.rows import collect_rows, read_units

    units = read_units(out)
    drill = build_drilldown(units, collect_rows(units))
    return decode_section(drill.blobs[point_key])


def test_units_without_a_trajectory_are_listed_with_why(experiment):  # noqa: F811
    report = build_report(experiment, plots=False, html=False)
    section = report.data["rediscovery"]
    assert section["summary"] == []
    assert set(section["not_computed"]) == {"t-repo_only-p1", "t-repo_only-p2", "t-raw_trace-p1"}
    assert all("names no trajectory" in why for why in section["not_computed"].values())


def test_report_on_the_folder_of_an_earlier_version(tmp_path):
    """tests/data/earlier_version: unit files and run folders written before agent runtimes had names (and
    before rediscovery). Its run folders are put where the study keeps them (the unit files name a /tmp
    folder that is gone); the report finds them under OUT/work and adds the figures."""
    data = Path(__file__).parent / "data" / "earlier_version"
    out = tmp_path / "experiment"
    shutil.copytree(data / "experiment", out)
    shutil.copytree(data / "run", out / "work" / "predecessor" / "bea18768a5f009a0" / "run")
    for key in ("62d37a76ca388d93", "5db6e86e14b094cc"):
        shutil.copytree(data / "takeover_run", out / "work" / "takeover" / key / "run")
    report = build_report(out, plots=False, html=False)
    section = report.data["rediscovery"]
    assert section["not_computed"] == {}
    # The cut is after the predecessor's sed on calc.py (event 0); the successor's `cat calc.py` reads a file
    # the predecessor never read: new.
    stored = {f.key: f for f in study_figures(out, store=False)}
    assert {k: [(a["event"], a["label"]) for a in f.labels] for k, f in stored.items()} == {
        "62d37a76ca388d93": [(0, "new")], "5db6e86e14b094cc": [(0, "new")]}
    assert [(e["view"], e["runs"], e["median_rediscovery_actions"]) for e in section["summary"]] == [
        ("repo_only", 1, 0), ("summary_notes", 1, 0)]


def test_a_record_stored_by_an_earlier_version_is_computed_again(experiment):  # noqa: F811
    """Records of version 1 (before the repeat rule: no reasons, unrecognised parts as a list) are not read."""
    out = experiment
    _with_predecessor(out)
    first = build_report(out, plots=False, html=False).data["rediscovery"]
    path = out / "work" / "takeover" / "t-repo_only-p1" / FIGURES_FILE
    record = json.loads(path.read_text())
    assert record["version"] == 2 and record["unrecognised"] == {}
    assert [a["reason"] for a in record["labels"]] == ["read", None, "message"]
    record.update(version=1, unrecognised=["python -c 1", "python -c 1"])
    path.write_text(json.dumps(record))
    again = build_report(out, plots=False, html=False).data["rediscovery"]
    assert again == first and json.loads(path.read_text())["unrecognised"] == {}
