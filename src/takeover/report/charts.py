"""Charts of the HTML report as inline SVG (no script, no font or file to fetch; docs/protocol.md section 9).

- :func:`solved_rate_chart`: solved rate per view and successor with 95% Wilson intervals.
- :func:`work_chart`: median agent events or median cumulative prompt tokens per view and successor; the
  error bar is the paired 95% bootstrap interval of the change against ``repo_only``, drawn on the
  ``repo_only`` median (as in ``plots/events_tokens.png``).
- :func:`paired_differences_chart`: per view, the distribution over handoff points of the paired
  difference ``view - repo_only`` (box: quartiles; whiskers: 5th and 95th percentiles; the median marked).

Every function returns one ``<svg>`` element as text; numbers are rounded so the same tables always give
the same bytes. Each mark has a ``<title>`` with its exact figures (a tooltip in browsers).
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

from takeover.report.rows import order_views
from takeover.vocabulary import BASE_VIEW

#: Colours of successors, in successor order (colour-blind friendly, Tableau 10).
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7")
_W, _H = 560, 280
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 12, 30, 58


def _fmt(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.3g}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.3g}k"
    if x == int(x):
        return f"{int(x):,}"
    return f"{x:.3g}"


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[low, high]``."""
    if high <= low:
        high = low + 1
    raw = (high - low) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(low / step) * step
    ticks = []
    t = start
    while t <= high + step * 1e-9:
        ticks.append(round(t, 10))
        t += step
    if ticks[-1] < high:
        ticks.append(round(t, 10))
    return ticks


def _svg(title: str, body: list[str], *, width: int = _W, height: int = _H, label: str = "") -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{escape(label or title)}" class="chart">'
        f'<text x="{width / 2:.0f}" y="18" text-anchor="middle" class="chart-title">{escape(title)}</text>'
        + "".join(body) + "</svg>"
    )


def _legend(successors: list[str], x: float, y: float) -> list[str]:
    out = []
    for i, s in enumerate(successors):
        out.append(f'<rect x="{x:.1f}" y="{y + 14 * i - 8:.1f}" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>'
                   f'<text x="{x + 14:.1f}" y="{y + 14 * i + 1:.1f}" class="chart-legend">{escape(s)}</text>')
    return out


def _grouped_bars(groups: list[str], successors: list[str], values: dict, *, title: str, ylabel: str,
                  ymax: float | None = None, unit: str = "") -> str:
    """Bars per group (x) and successor (colour); ``values[(successor, group)] = (height, low, high,
    tooltip)`` with ``low``/``high`` ``None`` for no error bar."""
    top = max([h for h, _, _, _ in values.values()] + [hi for _, _, hi, _ in values.values() if hi is not None] + [0])
    ticks = _nice_ticks(0, ymax if ymax is not None else (top or 1))
    y_top = ticks[-1]
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def y(v: float) -> float:
        return _TOP + plot_h * (1 - v / y_top)

    mid_y = f"{_TOP + plot_h / 2:.0f}"
    body = [(f'<text x="14" y="{mid_y}" transform="rotate(-90 14 {mid_y})" text-anchor="middle" '
             f'class="chart-axis">{escape(ylabel)}</text>')]
    for t in ticks:
        body.append(f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y(t):.1f}" y2="{y(t):.1f}" class="grid"/>'
                    f'<text x="{_LEFT - 6}" y="{y(t) + 4:.1f}" text-anchor="end" class="chart-tick">{_fmt(t)}{unit}</text>')
    slot = plot_w / max(1, len(groups))
    bar = slot * 0.8 / max(1, len(successors))
    for g, group in enumerate(groups):
        x0 = _LEFT + g * slot + slot * 0.1
        body.append(f'<text x="{_LEFT + (g + 0.5) * slot:.1f}" y="{_H - _BOTTOM + 16}" text-anchor="middle" '
                    f'class="chart-tick">{escape(group)}</text>')
        for i, succ in enumerate(successors):
            if (succ, group) not in values:
                continue
            h, low, high, tip = values[(succ, group)]
            x = x0 + i * bar
            body.append(f'<rect x="{x:.1f}" y="{y(h):.1f}" width="{bar * 0.92:.1f}" height="{y(0) - y(h):.1f}" '
                        f'fill="{PALETTE[i % len(PALETTE)]}"><title>{escape(tip)}</title></rect>')
            if low is not None and high is not None:
                cx = x + bar * 0.46
                body.append(f'<path d="M{cx:.1f} {y(low):.1f}V{y(high):.1f}M{cx - 4:.1f} {y(low):.1f}h8'
                            f'M{cx - 4:.1f} {y(high):.1f}h8" class="errbar"/>')
    body.append(f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y(0):.1f}" y2="{y(0):.1f}" class="axis"/>')
    body += _legend(successors, _LEFT + 4, _H - 22 - 14 * (len(successors) - 1)) if len(successors) > 1 else []
    return _svg(title, body)


def _grid(summary: list[dict]) -> tuple[list[str], list[str], dict]:
    successors = sorted({e["successor"] for e in summary})
    views = order_views(list({e["view"] for e in summary}))
    return successors, views, {(e["successor"], e["view"]): e for e in summary}


def solved_rate_chart(summary: list[dict]) -> str:
    """Solved rate (%) per view and successor with 95% Wilson intervals; ``summary`` is the ``summary``
    table of ``report.json``."""
    successors, views, index = _grid(summary)
    values = {}
    for (succ, view), e in index.items():
        r = e.get("solved_rate")
        lo, hi = e.get("solved_rate_ci95") or [None, None]
        if r is None:
            continue
        tip = f"{succ} · {view}: {e['solved']}/{e['points']} solved ({100 * r:.1f}%"
        tip += f", 95% CI {100 * lo:.1f}-{100 * hi:.1f}%)" if lo is not None else ")"
        values[(succ, view)] = (100 * r, None if lo is None else 100 * lo, None if hi is None else 100 * hi, tip)
    return _grouped_bars(views, successors, values, title="Solved rate per view (95% Wilson interval)",
                         ylabel="solved (%)", ymax=100, unit="%")


def work_chart(summary: list[dict], metric: str) -> str:
    """Median ``agent_events`` or ``prompt_tokens`` per view and successor, with the paired 95% bootstrap
    interval of the change against ``repo_only`` drawn on the ``repo_only`` median."""
    successors, views, index = _grid(summary)
    title = {"agent_events": "Median agent events per view",
             "prompt_tokens": "Median cumulative prompt tokens per view"}[metric]
    values = {}
    for (succ, view), e in index.items():
        h = e.get(f"median_{metric}")
        if h is None:
            continue
        base = index.get((succ, BASE_VIEW), {}).get(f"median_{metric}")
        ch = (e.get("vs_repo_only") or {}).get(metric) or {}
        ci = ch.get("ci95") or [None, None]
        low = high = None
        tip = f"{succ} · {view}: median {_fmt(h)}"
        if view != BASE_VIEW and base is not None and ci[0] is not None:
            low, high = base * (1 + ci[0]), base * (1 + ci[1])
            tip += (f"; change vs {BASE_VIEW} {100 * ch['relative_change']:+.0f}% "
                    f"[{100 * ci[0]:+.0f}, {100 * ci[1]:+.0f}] over {ch.get('pairs')} points")
        values[(succ, view)] = (h, low, high, tip)
    return _grouped_bars(views, successors, values, title=title,
                         ylabel="events" if metric == "agent_events" else "tokens")


def paired_differences(rows: list[dict], metric: str) -> dict[tuple[str, str], list[float]]:
    """``{(successor, view): [view - repo_only per handoff point]}`` of ``metric`` over the points where
    both runs finished (the pairs of the summary's paired changes)."""
    by: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        by.setdefault((r["successor"], r["view"]), {})[r["point_key"]] = r
    out: dict[tuple[str, str], list[float]] = {}
    for (succ, view), runs in by.items():
        base = by.get((succ, BASE_VIEW))
        if view == BASE_VIEW or not base:
            continue
        diffs = [float(runs[p][metric]) - float(base[p][metric]) for p in sorted(set(runs) & set(base))
                 if runs[p]["status"] == "done" and base[p]["status"] == "done"
                 and runs[p][metric] is not None and base[p][metric] is not None]
        out[(succ, view)] = diffs
    return out


def paired_differences_chart(diffs: dict[tuple[str, str], list[float]], metric: str) -> str:
    """Horizontal box plots, one per (successor, view), of the per-point differences against
    ``repo_only`` (from :func:`paired_differences`); left of zero the view needed less."""
    rank = {v: i for i, v in enumerate(order_views(list({v for _, v in diffs})))}
    keys = sorted(diffs, key=lambda k: (k[0], rank[k[1]]))
    successors = sorted({s for s, _ in keys})
    name = {"agent_events": "agent events", "prompt_tokens": "prompt tokens"}.get(metric, metric)
    row_h = 26
    height = _TOP + 20 + row_h * max(1, len(keys)) + 30
    left = 170
    stats = {}
    for k in keys:
        v = np.asarray(diffs[k], dtype=float)
        if v.size:
            p5, q1, med, q3, p95 = np.percentile(v, [5, 25, 50, 75, 95])
            stats[k] = (p5, q1, med, q3, p95, v.size, int((v < 0).sum()), int((v > 0).sum()))
    span = max([abs(s[0]) for s in stats.values()] + [abs(s[4]) for s in stats.values()] + [1])
    ticks = _nice_ticks(-span, span, 6)
    lo, hi = ticks[0], ticks[-1]
    plot_w = _W - left - _RIGHT

    def x(v: float) -> float:
        return left + plot_w * (v - lo) / (hi - lo)

    body = []
    for t in ticks:
        body.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{_TOP + 10}" y2="{height - 30}" class="grid"/>'
                    f'<text x="{x(t):.1f}" y="{height - 16}" text-anchor="middle" class="chart-tick">{_fmt(t)}</text>')
    body.append(f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{_TOP + 10}" y2="{height - 30}" class="axis"/>')
    for i, k in enumerate(keys):
        succ, view = k
        cy = _TOP + 20 + row_h * i + row_h / 2
        label = view if len(successors) == 1 else f"{succ} · {view}"
        body.append(f'<text x="{left - 8}" y="{cy + 4:.1f}" text-anchor="end" class="chart-tick">{escape(label)}</text>')
        if k not in stats:
            body.append(f'<text x="{x(0) + 6:.1f}" y="{cy + 4:.1f}" class="chart-tick">no pairs</text>')
            continue
        p5, q1, med, q3, p95, n, fewer, more = stats[k]
        colour = PALETTE[successors.index(succ) % len(PALETTE)]
        tip = (f"{succ} · {view} - {BASE_VIEW}, {name} per point over {n} points: median {_fmt(med)}, "
               f"quartiles {_fmt(q1)} to {_fmt(q3)}, 5-95% {_fmt(p5)} to {_fmt(p95)}; "
               f"{fewer} points needed fewer, {more} more")
        body.append(f'<g><title>{escape(tip)}</title>'
                    f'<path d="M{x(p5):.1f} {cy:.1f}H{x(q1):.1f}M{x(q3):.1f} {cy:.1f}H{x(p95):.1f}" class="errbar"/>'
                    f'<rect x="{x(q1):.1f}" y="{cy - 8:.1f}" width="{max(1.0, x(q3) - x(q1)):.1f}" height="16" '
                    f'fill="{colour}" fill-opacity="0.55" stroke="{colour}"/>'
                    f'<line x1="{x(med):.1f}" x2="{x(med):.1f}" y1="{cy - 9:.1f}" y2="{cy + 9:.1f}" class="median"/></g>')
    return _svg(f"Paired per-point difference in {name} (view - {BASE_VIEW})", body, height=int(height),
                label=f"box plots of per-point differences in {name}")
