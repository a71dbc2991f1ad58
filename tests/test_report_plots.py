"""The report's plots checked through the data they draw: the bars and error bars of the PNG figures (the
matplotlib artists) and of the inline SVG charts of report.html, against values computed here from the
runs by the rules of docs/protocol.md section 9 (medians, Wilson intervals from scipy, the paired
bootstrap recomputed with numpy one resample at a time)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure
from scipy.stats import binomtest

from takeover.report import build_report

RESAMPLES, SEED = 400, 11
POINTS = ("p1", "p2", "p3", "p4")
# (agent events, prompt tokens, resolved) per view and point; every run finished.
RUNS = {
    "repo_only": {"p1": (100, 1000, True), "p2": (200, 2600, True), "p3": (300, 3000, False), "p4": (400, 5000, False)},
    "raw_trace": {"p1": (60, 700, True), "p2": (170, 1500, True), "p3": (150, 2500, True), "p4": (330, 2000, False)},
}


def _unit(out: Path, stage: str, key: str, output: dict) -> None:
    path = out / "units" / stage / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"stage": stage, "key": key, "status": "done", "output": output, "started_at": "t",
                                "seconds": 1.0, "labels": {}, "inputs": {}}))


def write_experiment(out: Path) -> None:
    plan: dict = {"name": "plots", "bootstrap": {"resamples": RESAMPLES, "seed": SEED},
                  "stages": {"points": [], "handoff_state": [], "view": [], "takeover": [], "grade": []}}
    for p in POINTS:
        plan["stages"]["handoff_state"].append(
            {"key": f"hs-{p}", "labels": {"point_key": p, "point_type": "after_first_source_edit"}})
        _unit(out, "handoff_state", f"hs-{p}", {"handoff_state": "needs_completion"})
    for view, runs in RUNS.items():
        for p, (events, tokens, resolved) in runs.items():
            tk, gk = f"t-{view}-{p}", f"g-{view}-{p}"
            plan["stages"]["takeover"].append({"key": tk, "labels": {
                "successor": "m", "instance_id": f"i-{p}", "point_type": "after_first_source_edit", "point_key": p,
                "view": view}})
            plan["stages"]["grade"].append({"key": gk, "labels": {"takeover_key": tk}})
            _unit(out, "takeover", tk, {"agent_events": events, "prompt_tokens": tokens, "completion_tokens": 1,
                                        "initial_prompt_chars": 10, "exit_status": "submitted"})
            _unit(out, "grade", gk, {"resolved": resolved, "fail_to_pass_rate": 1.0 if resolved else 0.0})
    (out / "plan.json").write_text(json.dumps(plan))


def change_interval(metric: int) -> tuple[float, float]:
    """The 95% percentile interval of median(raw_trace) / median(repo_only) - 1, resampling points in
    pairs: default_rng(seed).integers(0, n, n), one resample after another; a base median of 0 is
    dropped (none here)."""
    base = np.array([RUNS["repo_only"][p][metric] for p in POINTS], float)
    new = np.array([RUNS["raw_trace"][p][metric] for p in POINTS], float)
    rng = np.random.default_rng(SEED)
    stats = []
    for _ in range(RESAMPLES):
        idx = rng.integers(0, len(POINTS), len(POINTS))
        stats.append(np.median(new[idx]) / np.median(base[idx]) - 1)
    return float(np.quantile(stats, 0.025)), float(np.quantile(stats, 0.975))


def expected() -> dict:
    """Per view: bar heights (events median, tokens median, solved %) and the error bars' ends."""
    out = {}
    for view, runs in RUNS.items():
        solved = sum(r[2] for r in runs.values())
        ci = binomtest(solved, len(POINTS)).proportion_ci(confidence_level=0.95, method="wilson")
        out[view] = {"events": float(np.median([r[0] for r in runs.values()])),
                     "tokens": float(np.median([r[1] for r in runs.values()])),
                     "solved": 100 * solved / len(POINTS), "solved_ci": (100 * ci.low, 100 * ci.high)}
    for metric, name in ((0, "events"), (1, "tokens")):
        low, high = change_interval(metric)
        base = out["repo_only"][name]
        out["raw_trace"][f"{name}_ci"] = (base * (1 + low), base * (1 + high))
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of the experiment, with every matplotlib figure it saves kept for inspection (the
    figures are matplotlib's; nothing of takeover is replaced)."""
    out = tmp_path_factory.mktemp("exp")
    write_experiment(out)
    drawn: list[Figure] = []
    save = Figure.savefig

    def keep(self, *args, **kwargs):
        drawn.append(self)
        return save(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", keep)
        build_report(out)
    return out, drawn


def _bars(ax) -> tuple[list[float], list[tuple[float, float] | None]]:
    """Heights of the bars of an axes and the (low, high) ends of each bar's error bar (``None`` when
    none is drawn)."""
    from matplotlib.container import BarContainer

    (container,) = [c for c in ax.containers if isinstance(c, BarContainer)]
    heights = [rect.get_height() for rect in container.patches]
    segments = container.errorbar.lines[2][0].get_segments()
    ends = [None if s.size == 0 or np.isnan(s).any() else (float(min(s[:, 1])), float(max(s[:, 1]))) for s in segments]
    return heights, ends


def test_png_plots_draw_the_medians_rates_and_intervals(report):
    out, figures = report
    assert sorted(Path(p).name for p in (out / "plots").iterdir()) == ["events_tokens.png", "solved_rate.png"]
    want = expected()
    work, solved = figures
    events_ax, tokens_ax = work.axes
    assert [t.get_text() for t in events_ax.get_xticklabels()] == ["repo_only", "raw_trace"]
    heights, ends = _bars(events_ax)
    assert heights == pytest.approx([want["repo_only"]["events"], want["raw_trace"]["events"]])
    assert ends[0] is None  # the reference view has no change interval
    assert ends[1] == pytest.approx(want["raw_trace"]["events_ci"])
    heights, ends = _bars(tokens_ax)
    assert heights == pytest.approx([want["repo_only"]["tokens"], want["raw_trace"]["tokens"]])
    assert ends[1] == pytest.approx(want["raw_trace"]["tokens_ci"])
    (ax,) = solved.axes
    heights, ends = _bars(ax)
    assert heights == pytest.approx([want["repo_only"]["solved"], want["raw_trace"]["solved"]])
    assert ends[0] == pytest.approx(want["repo_only"]["solved_ci"])
    assert ends[1] == pytest.approx(want["raw_trace"]["solved_ci"])


def _svg_bars(html: str, title: str) -> dict[str, tuple[float, tuple[float, float] | None]]:
    """``{tooltip: (value, error bar ends)}`` read back from the chart titled ``title``: bar heights and
    error-bar ends in pixels, turned into values with the chart's own top tick."""
    svg = next(s for s in re.findall(r"<svg .*?</svg>", html, re.DOTALL) if f">{title}</text>" in s)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    axis = next(el for el in root.iter(f"{ns}line") if el.get("class") == "axis")
    zero = float(axis.get("y1"))
    ticks = [el for el in root.iter(f"{ns}text") if el.get("class") == "chart-tick" and el.get("text-anchor") == "end"]
    top_tick = max(ticks, key=lambda el: -float(el.get("y")))
    top_value = float(top_tick.text.rstrip("%").replace(",", "").replace("k", "e3"))
    top_y = float(top_tick.get("y")) - 4

    def value(y: float) -> float:
        return (zero - y) / (zero - top_y) * top_value

    bars = [el for el in root.iter(f"{ns}rect") if el.find(f"{ns}title") is not None]
    errbars = [el.get("d") for el in root.iter(f"{ns}path") if el.get("class") == "errbar"]
    out = {}
    for rect in bars:
        tip = rect.find(f"{ns}title").text
        x = float(rect.get("x")) + float(rect.get("width")) / 2
        ends = None
        for d in errbars:
            m = re.match(r"M([\d.]+) ([\d.]+)V([\d.]+)", d)
            if abs(float(m.group(1)) - x) < 0.2:
                ends = tuple(sorted((value(float(m.group(2))), value(float(m.group(3))))))
        out[tip.split(":")[0]] = (value(float(rect.get("y"))), ends)
    return out


def test_html_charts_draw_the_same_data(report):
    out, _ = report
    html = (out / "report.html").read_text(encoding="utf-8")
    want = expected()
    solved = _svg_bars(html, "Solved rate per view (95% Wilson interval)")
    events = _svg_bars(html, "Median agent events per view")
    tolerance = 0.8  # SVG coordinates are rounded to 0.1 px of a ~190 px plot
    for view in RUNS:
        height, ends = solved[f"m · {view}"]
        assert height == pytest.approx(want[view]["solved"], abs=tolerance)
        assert ends == pytest.approx(want[view]["solved_ci"], abs=tolerance)
        height, ends = events[f"m · {view}"]
        assert height == pytest.approx(want[view]["events"], abs=tolerance * 3)
    assert events["m · repo_only"][1] is None
    assert events["m · raw_trace"][1] == pytest.approx(want["raw_trace"]["events_ci"], abs=tolerance * 3)
