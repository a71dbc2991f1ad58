"""Plots of the report (PNG through matplotlib's object API: no pyplot state, no display needed).

- ``events_tokens.png``: median agent events and median cumulative prompt tokens per view, one bar per
  successor, with the paired bootstrap interval of the change against ``repo_only`` drawn as error bars
  scaled onto the ``repo_only`` median.
- ``solved_rate.png``: solved rate per view and successor with 95% Wilson intervals.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from takeover.report.rows import order_views
from takeover.vocabulary import BASE_VIEW


def _grid(summary: list[dict]) -> tuple[list[str], list[str]]:
    successors = sorted({e["successor"] for e in summary})
    views = order_views(list({e["view"] for e in summary}))
    return successors, views


def _bars(ax, summary: list[dict], metric: str, change_key: str, title: str, ylabel: str) -> None:
    successors, views = _grid(summary)
    index = {(e["successor"], e["view"]): e for e in summary}
    width = 0.8 / max(1, len(successors))
    x = np.arange(len(views))
    for i, succ in enumerate(successors):
        heights, lows, highs = [], [], []
        base = index.get((succ, BASE_VIEW), {}).get(metric)
        for view in views:
            e = index.get((succ, view), {})
            h = e.get(metric)
            heights.append(h if h is not None else 0.0)
            ch = (e.get("vs_repo_only") or {}).get(change_key) or {}
            ci = ch.get("ci95") or [None, None]
            if view == BASE_VIEW:
                lows.append(np.nan)  # the reference has no change interval: draw no error bar
                highs.append(np.nan)
            elif base is not None and h is not None and ci[0] is not None:
                lows.append(max(0.0, h - base * (1 + ci[0])))
                highs.append(max(0.0, base * (1 + ci[1]) - h))
            else:
                lows.append(0.0)
                highs.append(0.0)
        ax.bar(x + i * width - 0.4 + width / 2, heights, width, label=succ, yerr=[lows, highs], capsize=3)
    ax.set_xticks(x, views, rotation=15)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def write_plots(folder: Path | str, summary: list[dict]) -> dict[str, str]:
    """Write ``events_tokens.png`` and ``solved_rate.png`` into ``folder`` (created when missing).

    ``summary`` is the ``summary`` table of ``report.json`` (:func:`takeover.report.tables.summarize`).
    Returns ``{file name: path}``.
    """
    # Imported here: matplotlib costs a few hundred milliseconds and 20-30 MiB that only plots need, and
    # the report frees its unit records before this point so that memory is reused.
    from matplotlib.figure import Figure

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}

    fig = Figure(figsize=(11, 4.2))
    axes = fig.subplots(1, 2)
    _bars(axes[0], summary, "median_agent_events", "agent_events", "Median agent events", "events")
    _bars(axes[1], summary, "median_prompt_tokens", "prompt_tokens", "Median cumulative prompt tokens", "tokens")
    axes[1].legend(title="successor", fontsize=8)
    fig.suptitle("Work per view (error bars: paired 95% bootstrap interval of the change vs repo_only)", fontsize=9)
    fig.tight_layout()
    path = folder / "events_tokens.png"
    fig.savefig(path, dpi=110)
    files["events_tokens.png"] = str(path)

    successors, views = _grid(summary)
    index = {(e["successor"], e["view"]): e for e in summary}
    fig = Figure(figsize=(7, 4.2))
    ax = fig.subplots()
    width = 0.8 / max(1, len(successors))
    x = np.arange(len(views))
    for i, succ in enumerate(successors):
        rates, lows, highs = [], [], []
        for view in views:
            e = index.get((succ, view), {})
            r = e.get("solved_rate")
            lo, hi = e.get("solved_rate_ci95") or [None, None]
            rates.append(100 * r if r is not None else 0.0)
            lows.append(100 * (r - lo) if r is not None and lo is not None else 0.0)
            highs.append(100 * (hi - r) if r is not None and hi is not None else 0.0)
        ax.bar(x + i * width - 0.4 + width / 2, rates, width, label=succ, yerr=[lows, highs], capsize=3)
    ax.set_xticks(x, views, rotation=15)
    ax.set_ylim(0, 100)
    ax.set_ylabel("solved (%)")
    ax.set_title("Solved rate per view (95% Wilson interval)")
    ax.legend(title="successor", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path = folder / "solved_rate.png"
    fig.savefig(path, dpi=110)
    files["solved_rate.png"] = str(path)
    return files
