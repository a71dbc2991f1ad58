"""The report's rediscovery section (docs/protocol.md section 9.1): per (successor, view) the
medians of the rediscovery figures with paired changes against ``repo_only``, where each view's events went
(a stacked bar chart, SVG on the page and ``plots/rediscovery.png``), and each drill-down step marked with
its label and the predecessor event it repeats.

The figures of each takeover unit come from :func:`takeover.rediscovery.study.study_figures` (stored with
the unit; computed once for a folder written before). Rules of the table:

- Medians are over the finished runs whose figures could be computed.
- Changes against ``repo_only`` are paired over the points where both runs have figures: the relative change
  of medians with a 95% percentile interval from the paired bootstrap of :mod:`takeover.report.stats`, as
  for agent events and prompt tokens.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from takeover.rediscovery import LABELS
from takeover.rediscovery.study import FIGURES_FILE, study_figures
from takeover.report.rows import order_views
from takeover.report.stats import median, paired_bootstraps
from takeover.vocabulary import BASE_VIEW

#: Figures with a median per (successor, view) and a paired change against ``repo_only``.
METRICS = ("rediscovery_actions", "rediscovery_share", "rediscovery_prompt_tokens", "events_until_first_new",
           "events_until_first_edit")
#: Colours of the labels in the stacked bars (rediscovery warm, new grey).
COLOURS = {"reread": "#d95f02", "research": "#e6ab02", "rerun": "#7570b3", "redo_edit": "#e7298a", "new": "#bbbbbb"}


def rediscovery_tables(out: Path, rows: list[dict], *, resamples: int, seed: int) -> dict[str, Any]:
    """The ``rediscovery`` section of ``report.json``: ``summary`` (one entry per successor x view: runs with
    figures, medians, ``events_by_label`` totals and ``vs_repo_only`` paired changes), ``not_computed``
    (takeover keys with why) and ``unrecognised`` (command parts no rule reads, with counts)."""
    figures = {f.key: f for f in study_figures(out)}
    by: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    for r in rows:
        f = figures.get(r["takeover_key"])
        if r["status"] == "done" and f is not None and f.figures is not None:
            by[(r["successor"], r["view"])][r["point_key"]] = f.figures
    pairs: list[tuple[list, list]] = []
    cells: list[dict] = []
    summary = []
    for succ in sorted({s for s, _ in by}):
        base = by.get((succ, BASE_VIEW), {})
        for view in order_views([v for s, v in by if s == succ]):
            runs = by[(succ, view)]
            entry: dict[str, Any] = {"successor": succ, "view": view, "runs": len(runs)}
            for m in METRICS:
                entry[f"median_{m}"] = median([f[m] for f in runs.values() if f.get(m) is not None])
            entry["events_by_label"] = {name: sum(f.get("events_by_label", {}).get(name, 0) for f in runs.values())
                                        for name in LABELS}
            if view != BASE_VIEW and base:
                changes: dict[str, Any] = {}
                for m in METRICS:
                    common = [p for p in sorted(set(runs) & set(base))
                              if runs[p].get(m) is not None and base[p].get(m) is not None]
                    cell = {"pairs": len(common), "relative_change": None, "ci95": [None, None]}
                    pairs.append(([base[p][m] for p in common], [runs[p][m] for p in common]))
                    cells.append(cell)
                    changes[m] = cell
                entry["vs_repo_only"] = changes
            summary.append(entry)
    for cell, (est, low, high) in zip(cells, paired_bootstraps(pairs, resamples=resamples, seed=seed)):
        cell["relative_change"], cell["ci95"] = est, [low, high]
    unrecognised: dict[str, int] = defaultdict(int)
    for f in figures.values():
        for text, n in (f.unrecognised or {}).items():
            unrecognised[text] += n
    return {
        "summary": summary,
        "not_computed": {f.key: f.reason for f in figures.values() if f.figures is None},
        "unrecognised": dict(sorted(unrecognised.items(), key=lambda kv: (-kv[1], kv[0]))[:50]),
    }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.0%}"


def _num(x: Any) -> str:
    if x is None:
        return "n/a"
    return f"{x:.2f}" if isinstance(x, float) and not float(x).is_integer() else f"{x:g}"


def rediscovery_markdown(section: dict[str, Any]) -> str:
    """The section as Markdown, appended to ``report.md``."""
    if not section.get("summary"):
        return ""
    lines = ["", "## Rediscovery", "",
             ("Successor actions that repeat what the predecessor knew at the cut (docs/protocol.md section 9.1): "
             "medians over runs; changes against repo_only are paired relative changes of medians with 95% "
             "bootstrap intervals."), "",
             ("| successor | view | runs | rediscovery actions | share of events | their prompt tokens | events to "
             "first new | events to first edit |"), "|---|---|---|---|---|---|---|---|"]
    for e in section["summary"]:
        cells = []
        for m in METRICS:
            text = _num(e[f"median_{m}"])
            change = (e.get("vs_repo_only") or {}).get(m)
            if change and change["relative_change"] is not None:
                low, high = change["ci95"]
                text += f" ({_pct(change['relative_change'])} [{_pct(low)}, {_pct(high)}])"
            cells.append(text)
        lines.append(f"| {e['successor']} | {e['view']} | {e['runs']} | " + " | ".join(cells) + " |")
    lines += ["", "Where the events went (all runs): " + "; ".join(
        f"{e['successor']}/{e['view']}: " + ", ".join(f"{k} {v}" for k, v in e["events_by_label"].items())
        for e in section["summary"]), ""]
    if section.get("unrecognised"):
        lines.append("Command parts no rule reads (most frequent): " + "; ".join(
            f"`{t[:60]}` ({n})" for t, n in list(section["unrecognised"].items())[:10]))
        lines.append("")
    return "\n".join(lines)


def rediscovery_chart(section: dict[str, Any]) -> str:
    """An inline SVG: one stacked bar per successor x view, the share of its events per label."""
    entries = [e for e in section.get("summary", []) if sum(e["events_by_label"].values())]
    if not entries:
        return ""
    bar, gap, left, top, height = 46, 18, 150, 34, 200
    width = left + len(entries) * (bar + gap) + 130
    body = [(f'<text x="{width / 2}" y="18" text-anchor="middle" font-weight="bold">Where each view\'s events '
            'went (rediscovery labels)</text>')]
    for i, e in enumerate(entries):
        total = sum(e["events_by_label"].values())
        x = left + i * (bar + gap)
        y = top + height
        for name in LABELS:
            n = e["events_by_label"].get(name, 0)
            h = height * n / total
            y -= h
            if n:
                body.append(f'<rect x="{x}" y="{y:.1f}" width="{bar}" height="{h:.1f}" fill="{COLOURS[name]}">'
                            f'<title>{html.escape(e["view"])}: {name} {n} of {total} events</title></rect>')
        label = html.escape(f"{e['view']}" if len({x['successor'] for x in entries}) == 1
                            else f"{e['successor']}/{e['view']}")
        body.append(f'<text x="{x + bar / 2}" y="{top + height + 14}" text-anchor="end" font-size="11" '
                    f'transform="rotate(-30 {x + bar / 2} {top + height + 14})">{label}</text>')
    for k, tick in enumerate((0, 0.25, 0.5, 0.75, 1.0)):
        y = top + height * (1 - tick)
        body.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{tick:.0%}</text>')
        body.append(f'<line x1="{left - 4}" x2="{left}" y1="{y:.1f}" y2="{y:.1f}" stroke="#555"/>')
    lx = left + len(entries) * (bar + gap) + 10
    for k, name in enumerate(reversed(LABELS)):
        body.append(f'<rect x="{lx}" y="{top + 16 * k}" width="12" height="12" fill="{COLOURS[name]}"/>'
                    f'<text x="{lx + 18}" y="{top + 16 * k + 10}" font-size="12">{name}</text>')
    h = top + height + 80
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {h}" width="{width}" height="{h}" '
            f'role="img" aria-label="where each view\'s events went" font-family="sans-serif" font-size="12">'
            + "".join(body) + "</svg>")


def write_rediscovery_plot(folder: Path, section: dict[str, Any]) -> dict[str, str]:
    """``plots/rediscovery.png``: the stacked bars of :func:`rediscovery_chart` (matplotlib); ``{}`` without
    figures."""
    entries = [e for e in section.get("summary", []) if sum(e["events_by_label"].values())]
    if not entries:
        return {}
    # Imported here, as the other plots do: only plots need matplotlib.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(4, 1.2 * len(entries) + 2), 4))
    ax = fig.subplots()
    names = [e["view"] if len({x["successor"] for x in entries}) == 1 else f"{e['successor']}/{e['view']}"
             for e in entries]
    bottom = [0.0] * len(entries)
    for label in LABELS:
        shares = [e["events_by_label"].get(label, 0) / sum(e["events_by_label"].values()) for e in entries]
        ax.bar(names, shares, bottom=bottom, color=COLOURS[label], label=label)
        bottom = [b + s for b, s in zip(bottom, shares)]
    ax.set_ylabel("share of agent events")
    ax.set_title("Where each view's events went")
    ax.legend(loc="center left", bbox_to_anchor=(1, 0.5))
    ax.tick_params(axis="x", labelrotation=30)
    fig.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rediscovery.png"
    fig.savefig(path, dpi=100)
    return {"plots/rediscovery.png": str(path)}


def mark_steps(section: Any, out: Path) -> None:
    """Mark each step of the drill-down ``section``'s runs with its rediscovery label and the predecessor
    event it repeats (from the figures stored with each takeover unit)."""
    for cell in getattr(section, "runs", []):
        stored = _stored_labels(out / "work" / "takeover" / cell.takeover_key / FIGURES_FILE)
        if not stored:
            continue
        for step in cell.steps or []:
            found = stored.get(step.index) if step.index is not None else None
            if found:
                step.rediscovery, step.repeats = found


def _stored_labels(path: Path) -> dict[int, tuple[str, int | None]]:
    try:
        record = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return {a["event"]: (a["label"], a.get("repeats")) for a in record.get("labels", [])}
