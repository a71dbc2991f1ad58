"""Report statistics against values computed by hand, and the report built from unit files only."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from takeover.report import build_report
from takeover.report.stats import (
    mcnemar_exact,
    median,
    paired_bootstrap_relative_median_change,
    paired_bootstraps,
    relative_change,
    wilson_interval,
)


def test_mcnemar_exact_matches_hand_computed_binomial():
    # b = 1 pair solved only by the base, c = 7 only by the new view: p = 2 * P(X <= 1 | n=8, 1/2)
    # = 2 * (1 + 8) / 256.
    base = [True] + [False] * 7 + [True, True, False]
    new = [False] + [True] * 7 + [True, True, False]
    r = mcnemar_exact(base, new)
    assert (r["base_only"], r["new_only"], r["n"]) == (1, 7, 11)
    assert r["p_value"] == pytest.approx(18 / 256)
    assert r["difference"] == pytest.approx(6 / 11)
    # Symmetric: swapping the views gives the same p and the opposite difference.
    s = mcnemar_exact(new, base)
    assert s["p_value"] == pytest.approx(18 / 256) and s["difference"] == pytest.approx(-6 / 11)
    # No discordant pair: p = 1.
    assert mcnemar_exact([True, False], [True, False])["p_value"] == 1.0
    # b=0, c=3: p = 2 * (1/2)^3.
    assert mcnemar_exact([False] * 3, [True] * 3)["p_value"] == pytest.approx(0.25)


def test_medians_and_relative_change():
    assert median([10, 30, 20]) == 20
    assert median([1, 2, 3, 4]) == 2.5
    assert median([]) is None
    assert relative_change(10, 20) == pytest.approx(-0.5)
    assert relative_change(30, 20) == pytest.approx(0.5)
    assert relative_change(5, 0) is None


def test_bootstrap_equals_direct_numpy_recomputation():
    base = [10, 20, 30, 40, 50]
    new = [5, 12, 30, 20, 25]
    est, low, high = paired_bootstrap_relative_median_change(base, new, resamples=200, seed=7)
    assert est == pytest.approx(20 / 30 - 1)
    # Direct recomputation: one resample at a time, point indices drawn with replacement.
    rng = np.random.default_rng(7)
    a, b = np.array(base, float), np.array(new, float)
    stats = []
    for _ in range(200):
        idx = rng.integers(0, 5, 5)
        stats.append(np.median(b[idx]) / np.median(a[idx]) - 1)
    assert low == pytest.approx(np.quantile(stats, 0.025))
    assert high == pytest.approx(np.quantile(stats, 0.975))
    assert low <= est <= high
    # Same seed, same interval; pairs are kept together (a constant ratio gives a zero-width interval).
    assert paired_bootstrap_relative_median_change(base, new, resamples=200, seed=7) == (est, low, high)
    e2, l2, h2 = paired_bootstrap_relative_median_change([2, 4, 6], [1, 2, 3], resamples=300, seed=1)
    assert (e2, l2, h2) == pytest.approx((-0.5, -0.5, -0.5))
    with pytest.raises(ValueError):
        paired_bootstrap_relative_median_change([1, 2], [1], resamples=10)
    assert paired_bootstrap_relative_median_change([], []) == (None, None, None)


def test_bootstrap_matches_scipy_paired_percentile_bootstrap():
    """Our paired bootstrap draws the same point indices as scipy.stats.bootstrap(paired=True) with the
    same seed, so the percentile intervals agree (data without zero medians: we drop those resamples)."""
    from scipy.stats import bootstrap

    rng = np.random.default_rng(11)
    for n in (5, 40, 300):  # 300: ranks above 8 bits take the 16-bit path
        base = rng.integers(20, 400, n).astype(float)
        new = np.round(base * rng.uniform(0.3, 1.4, n))
        est, low, high = paired_bootstrap_relative_median_change(base, new, resamples=999, seed=5)
        ref = bootstrap((base, new), lambda a, b, axis: np.median(b, axis=axis) / np.median(a, axis=axis) - 1,
                        paired=True, vectorized=True, n_resamples=999, method="percentile",
                        confidence_level=0.95, rng=np.random.default_rng(5))
        assert est == pytest.approx(np.median(new) / np.median(base) - 1)
        assert (low, high) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), rel=1e-12)


def test_batched_bootstraps_equal_one_by_one():
    """Pairs of one length share their index draws and equal vectors their medians; every pair still
    gets exactly the numbers it gets alone (the report batches all its comparisons)."""
    rng = np.random.default_rng(3)
    base = list(rng.integers(1, 50, 30))
    pairs = [(base, list(rng.integers(1, 50, 30))), (base, list(rng.integers(1, 50, 30))),
             (list(rng.integers(0, 2, 9)), list(rng.integers(1, 9, 9))), ([], []), ([0, 0, 5], [1, 2, 3]),
             (list(rng.integers(1, 50, 600)), list(rng.integers(1, 50, 600)))]
    batched = paired_bootstraps(pairs, resamples=700, seed=9)
    assert batched == [paired_bootstrap_relative_median_change(a, b, resamples=700, seed=9) for a, b in pairs]
    assert batched[3] == (None, None, None) and batched[4] == (None, None, None)  # no pairs; base median 0


def test_wilson_interval_is_scipys_and_equals_the_score_formula():
    from scipy.stats import norm

    z = norm.ppf(0.975)
    for k, n in ((0, 5), (3, 10), (84, 181), (181, 181)):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        assert wilson_interval(k, n) == pytest.approx((max(0.0, centre - half), min(1.0, centre + half)), abs=1e-15)


def test_wilson_interval_known_values():
    low, high = wilson_interval(5, 10)
    assert (low, high) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(0, 0) == (None, None)
    low, high = wilson_interval(0, 4)
    assert low == 0.0 and high == pytest.approx(0.4899, abs=1e-4)


# --- a report from hand-written unit files ----------------------------------------------------------


def _unit(out: Path, stage: str, key: str, status: str = "done", output: dict | None = None, **extra) -> None:
    path = out / "units" / stage / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"stage": stage, "key": key, "status": status, "output": output or {}, "started_at": "t",
              "seconds": 1.0, "labels": {}, "inputs": {}, **extra}
    path.write_text(json.dumps(record))


def _write_experiment(out: Path) -> None:
    """3 points x 2 views for one successor. repo_only: events 100/200/300, tokens 1000/2000/3000,
    solved p1,p2. raw_trace: events 50/100/-, tokens 400/1000/-, solved p1,p3... except p3's run failed
    for infrastructure (endpoint) reasons, so it is not solved and has no metrics."""
    plan: dict = {"name": "hand", "bootstrap": {"resamples": 300, "seed": 3}, "stages": {
        "points": [], "handoff_state": [], "view": [], "takeover": [], "grade": []}}
    states = {"p1": "needs_completion", "p2": "resolved_preserve", "p3": "needs_completion"}
    types = {"p1": "after_first_source_edit", "p2": "after_first_source_edit", "p3": "after_first_verification_result"}
    for p, state in states.items():
        plan["stages"]["handoff_state"].append({"key": f"hs-{p}", "labels": {"point_key": p, "point_type": types[p]}})
        _unit(out, "handoff_state", f"hs-{p}", output={"handoff_state": state})
    _unit(out, "view", "v-p1", output={"characters": 1000}, prompt_tokens=70, completion_tokens=30)
    plan["stages"]["view"].append({"key": "v-p1", "labels": {"view": "summary_notes"}})
    runs = {
        ("repo_only", "p1"): (100, 1000, True),
        ("repo_only", "p2"): (200, 2000, True),
        ("repo_only", "p3"): (300, 3000, False),
        ("raw_trace", "p1"): (50, 400, True),
        ("raw_trace", "p2"): (100, 1000, False),
    }
    for view in ("repo_only", "raw_trace"):
        for p in ("p1", "p2", "p3"):
            tk, gk = f"t-{view}-{p}", f"g-{view}-{p}"
            labels = {"successor": "m", "instance_id": f"inst-{p}", "point_type": types[p], "point_key": p,
                      "view": view}
            plan["stages"]["takeover"].append({"key": tk, "labels": labels})
            plan["stages"]["grade"].append({"key": gk, "labels": {"takeover_key": tk}})
            if (view, p) in runs:
                ev, tok, solved = runs[(view, p)]
                _unit(out, "takeover", tk, output={"agent_events": ev, "prompt_tokens": tok,
                      "completion_tokens": ev, "initial_prompt_chars": 10 if view == "repo_only" else 30,
                      "exit_status": "submitted"})
                _unit(out, "grade", gk, output={"resolved": solved, "fail_to_pass_rate": 1.0 if solved else 0.0})
            else:
                _unit(out, "takeover", tk, status="failed", failure_kind="infrastructure",
                      reason="APIConnectionError: endpoint refused")
    (out / "plan.json").write_text(json.dumps(plan))


def test_report_tables_from_unit_files(tmp_path):
    out = tmp_path / "exp"
    _write_experiment(out)
    report = build_report(out)

    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["view"] == "raw_trace" and failed[0]["failure_kind"] == "infrastructure"
    assert failed[0]["resolved"] == "False"
    assert rows[0]["successor"] == "m" and rows[0]["view"] == "repo_only" and rows[0]["handoff_state"] == "needs_completion"

    summary = {e["view"]: e for e in report.data["summary"]}
    base, raw = summary["repo_only"], summary["raw_trace"]
    assert (base["points"], base["solved"], base["solved_rate"]) == (3, 2, pytest.approx(2 / 3))
    # The infrastructure failure stays in the denominator: 1 solved of 3 points.
    assert (raw["points"], raw["solved"], raw["infrastructure_failures"]) == (3, 1, 1)
    assert base["median_agent_events"] == 200 and raw["median_agent_events"] == 75
    assert base["median_prompt_tokens"] == 2000 and raw["median_prompt_tokens"] == 700
    vs = raw["vs_repo_only"]
    # Paired over p1, p2 (both finished): repo_only median events 150, raw_trace 75 -> -50%.
    assert vs["agent_events"]["pairs"] == 2
    assert vs["agent_events"]["relative_change"] == pytest.approx(-0.5)
    assert vs["prompt_tokens"]["relative_change"] == pytest.approx(700 / 1500 - 1)
    assert vs["initial_prompt_chars"]["relative_change"] == pytest.approx(2.0)
    # Solved: p2 lost (base only), p3 lost for both: b=1, c=0 -> p = 1, difference -1/3.
    assert vs["solved_rate"]["base_only"] == 1 and vs["solved_rate"]["new_only"] == 0
    assert vs["solved_rate"]["p_value"] == 1.0 and vs["solved_rate"]["difference"] == pytest.approx(-1 / 3)
    # Breakdowns and Table 1.
    by_state = report.data["by_handoff_state"]
    assert set(by_state) == {"needs_completion", "resolved_preserve"}
    assert {e["view"]: e["points"] for e in by_state["needs_completion"]} == {"repo_only": 2, "raw_trace": 2}
    assert report.data["table1"]["points"] == {
        "after_first_source_edit": {"needs_completion": 1, "resolved_preserve": 1},
        "after_first_verification_result": {"needs_completion": 1},
    }
    assert report.data["note_writing"]["summary_notes"] == {"units": 1, "prompt_tokens": 70, "completion_tokens": 30,
                                                            "characters_total": 1000}
    assert report.data["units"]["takeover"] == {"done": 5, "failed": 1, "failed_infrastructure": 1}
    assert "| m | raw_trace | 3 | 33.3% | -33.3 pp (p=1) | 75 | -50%" in report.markdown
    assert (out / "plots" / "events_tokens.png").stat().st_size > 1000
    assert (out / "plots" / "solved_rate.png").stat().st_size > 1000
    # Deterministic: a second build gives byte-identical files.
    first = (out / "report.json").read_bytes(), (out / "results.csv").read_bytes()
    build_report(out, plots=False)
    assert ((out / "report.json").read_bytes(), (out / "results.csv").read_bytes()) == first


def test_report_and_run_commands(tmp_path):
    import subprocess
    import sys

    from typer.testing import CliRunner

    from takeover.cli import app

    out = tmp_path / "exp"
    _write_experiment(out)
    result = CliRunner().invoke(app, ["report", str(out), "--no-plots"])
    assert result.exit_code == 0, result.output
    assert "| m | raw_trace | 3 | 33.3%" in result.output and (out / "results.csv").exists()
    # Through the console entry point, bad input is one line on stderr and exit status 2.
    bad = tmp_path / "bad.toml"
    bad.write_text('out_dir = "o"\n[dataset]\npath = "d.jsonl"\n[predecessor]\ntrajectories = ["t"]\n'
                   '[[successors]]\nmodel = "m"\ntemprature = 0.5\n')
    proc = subprocess.run([sys.executable, "-m", "takeover", "run", str(bad)], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {bad}: field 'successors[0].temprature': unknown key"


def test_an_unusable_unit_file_is_said_and_counts_as_missing(tmp_path):
    import json

    from typer.testing import CliRunner

    from takeover.cli import app

    out = tmp_path / "exp"
    _write_experiment(out)
    assert CliRunner().invoke(app, ["report", str(out), "--no-plots"]).exit_code == 0
    missing_before = json.loads((out / "report.json").read_text())["units"]["grade"].get("missing", 0)
    graded = min((out / "units" / "grade").glob("*.json"))
    graded.write_text('{"bad')
    result = CliRunner().invoke(app, ["report", str(out), "--no-plots"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "1 unit file(s) could not be used and count as missing (rerun takeover run to redo them), e.g. " \
           "unreadable unit file" in said
    assert str(graded) in result.output.replace("\n", "")  # the console folds the long path
    data = json.loads((out / "report.json").read_text())
    assert [u.split(":")[0] for u in data["unusable_unit_files"]] == [f"unreadable unit file {graded}"]
    assert data["units"]["grade"]["missing"] == missing_before + 1


def test_solved_change_is_na_without_comparable_pairs_and_warnings_are_listed(tmp_path):
    """Every run of both views failed for infrastructure reasons: no point compares them, so the
    solved-rate change is n/a (null in report.json), not "+0.0 pp (p=1)". Grading warnings (tests that
    need the network, graded without it) are listed per instance in report.md and report.json."""
    out = tmp_path / "exp"
    plan: dict = {"name": "na", "bootstrap": {"resamples": 50, "seed": 1}, "stages": {
        "points": [], "handoff_state": [], "view": [], "takeover": [], "grade": []}}
    warning = "psf/requests: its tests call httpbin.org; graded without network"
    for p in ("p1", "p2"):
        plan["stages"]["handoff_state"].append(
            {"key": f"hs-{p}", "labels": {"point_key": p, "point_type": "t", "instance_id": f"psf__requests-{p}"}})
        _unit(out, "handoff_state", f"hs-{p}", output={"handoff_state": "needs_completion", "warnings": [warning]})
        for view in ("repo_only", "raw_trace"):
            tk = f"t-{view}-{p}"
            plan["stages"]["takeover"].append({"key": tk, "labels": {
                "successor": "m", "instance_id": f"psf__requests-{p}", "point_type": "t", "point_key": p,
                "view": view}})
            plan["stages"]["grade"].append({"key": f"g-{view}-{p}", "labels": {"takeover_key": tk}})
            _unit(out, "takeover", tk, status="failed", failure_kind="infrastructure", reason="endpoint refused")
    (out / "plan.json").write_text(json.dumps(plan))
    report = build_report(out, plots=False)
    raw = {e["view"]: e for e in report.data["summary"]}["raw_trace"]
    solved = raw["vs_repo_only"]["solved_rate"]
    assert solved["comparable_pairs"] == 0 and solved["difference"] is None and solved["p_value"] is None
    on_disk = json.loads((out / "report.json").read_text())
    assert on_disk["summary"][1]["vs_repo_only"]["solved_rate"]["difference"] is None
    assert "| m | raw_trace | 2 | 0.0% | n/a |" in report.markdown
    assert "pp (p=1)" not in report.markdown
    assert on_disk["warnings"] == {"psf__requests-p1": [warning], "psf__requests-p2": [warning]}
    assert "## Warnings" in report.markdown and f"- psf__requests-p1: {warning}" in report.markdown
    # `takeover report` points at the warnings (report.md's Warnings section is below what it prints).
    from typer.testing import CliRunner

    from takeover.cli import app

    result = CliRunner().invoke(app, ["report", str(out), "--no-plots"])
    assert result.exit_code == 0, result.output
    assert "2 instance(s) have grading warnings" in " ".join(result.output.split())


def test_verdicts_decided_under_different_rules_are_never_pooled_silently(tmp_path):
    """docs/protocol.md section 6, extension "Grading rules": a report whose gradings were decided under
    swebench-4.1 and swebench-5.0 rules says so, with the count of each; one rule set says nothing."""
    out = tmp_path / "exp"
    plan: dict = {"name": "rules", "bootstrap": {"resamples": 50, "seed": 1}, "stages": {
        "points": [], "handoff_state": [], "view": [], "takeover": [], "grade": []}}
    for p, rules in (("p1", None), ("p2", "swebench-5.0"), ("p3", "swebench-5.0")):
        plan["stages"]["handoff_state"].append(
            {"key": f"hs-{p}", "labels": {"point_key": p, "point_type": "t", "instance_id": f"o__r-{p}"}})
        output = {"handoff_state": "needs_completion", "resolved": False, "warnings": []}
        _unit(out, "handoff_state", f"hs-{p}", output=output | ({"grading_rules": rules} if rules else {}))
    (out / "plan.json").write_text(json.dumps(plan))
    report = build_report(out, plots=False)
    assert report.data["grading_rules"] == {"swebench-4.1": 1, "swebench-5.0": 2}  # unrecorded = 4.1
    assert ("## Verdicts decided under different rules\n\nThe verdicts below pool gradings decided under "
            "swebench-4.1 (1 grading(s)), swebench-5.0 (2 grading(s))") in report.markdown
    _unit(out, "handoff_state", "hs-p1", output={"handoff_state": "needs_completion", "resolved": False,
                                                 "warnings": [], "grading_rules": "swebench-5.0"})
    again = build_report(out, plots=False)
    assert again.data["grading_rules"] == {"swebench-5.0": 3}
    assert "different rules" not in again.markdown
