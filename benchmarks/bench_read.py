"""Read time of every shared trajectory file (``takeover.trajectories.read_trajectories``).

    /work/venv/bin/python benchmarks/bench_read.py [DATA_DIR]

Prints one line per file (format, runs, agent events, best-of-3 seconds) and the totals per format.
Target: the 16 mini-swe-agent files are read in well under a second.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

from takeover.trajectories import read_trajectories

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "data" / "trajectories"
SUPPORT = {"index.json", "run_results_summary.json"}


def files(base: Path) -> list[Path]:
    return sorted(
        p
        for p in base.rglob("*")
        if p.is_file() and p.name not in SUPPORT and "eval_reports" not in p.parts and p.suffix != ".md"
    )


def main() -> None:
    base = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    per_format: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0])
    grand = 0.0
    print(f"{'file':<80} {'format':<22} {'runs':>4} {'events':>6} {'seconds':>8}")
    for path in files(base):
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            trajs = read_trajectories(path)
            best = min(best, time.perf_counter() - start)
        fmt = trajs[0].format if trajs else "-"
        events = sum(t.agent_events for t in trajs)
        stats = per_format[fmt]
        stats[0] += 1
        stats[1] += len(trajs)
        stats[2] += best
        stats[3] += events
        grand += best
        print(f"{path.relative_to(base)!s:<80} {fmt:<22} {len(trajs):>4} {events:>6} {best:>8.4f}")
    print()
    print(f"{'format':<22} {'files':>5} {'runs':>5} {'events':>7} {'seconds':>8}")
    for fmt, (n_files, runs, seconds, events) in sorted(per_format.items()):
        print(f"{fmt:<22} {n_files:>5} {runs:>5} {events:>7} {seconds:>8.4f}")
    print(f"{'all':<22} {sum(s[0] for s in per_format.values()):>5} {'':>5} {'':>7} {grand:>8.4f}")


if __name__ == "__main__":
    main()
