"""Mutation score of the modules that define the protocol's rules and statistics.

Runs mutmut (``pip install mutmut``; 3.x) once per module, each in a scratch copy of the project, with
only the tests that exercise that module, and prints one row per module: mutants, killed, timeouts,
survivors, mutants no selected test reaches, and the score ``(killed + timeout) / (mutants - skipped)``
(mutmut's own definition; a mutant no test reaches counts as not killed).

    .venv/bin/python benchmarks/mutation_score.py                     # every module, 2 workers
    .venv/bin/python benchmarks/mutation_score.py classify patches    # some of them
    .venv/bin/python benchmarks/mutation_score.py points --survivors  # and name each survivor

Slow on purpose (minutes per module on 2 cores): run it in the background, one module at a time, after
changing a module or its tests. The tests read the real shared data from ``../shared`` (or
``$TAKEOVER_SHARED``), as the suite does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# module -> (files mutated, tests that exercise them). The tests are restricted so that mutmut's first
# full run (it records which test reaches which function) stays short; each mutant then runs only the
# selected tests that reach the mutated function.
MODULES: dict[str, tuple[list[str], list[str]]] = {
    "classify": (["src/takeover/repository_states/file_classes.py", "src/takeover/points/verification.py",
                  "src/takeover/commands/runners.py", "src/takeover/commands/effects.py",
                  "src/takeover/commands/grammar.py"],
                 ["tests/test_classify.py", "tests/test_classify_protocol.py", "tests/test_points.py",
                  "tests/test_commands_grammar.py"]),
    "points": (
        ["src/takeover/points/detection.py", "src/takeover/points/event_states.py", "src/takeover/points/run_points.py"],
        ["tests/test_points.py", "tests/test_points_rules.py", "tests/test_points_sources.py", "tests/test_checkpoints.py"],
    ),
    "patches": (["src/takeover/_util/patches.py"], ["tests/test_patches.py", "tests/test_snapshots.py",
    "tests/test_foundation.py"]),
    "snapshots": (["src/takeover/repository_states/snapshots.py"],
                  ["tests/test_snapshots.py", "tests/test_snapshot_states.py", "tests/test_checkpoints.py"]),
    "report.stats": (["src/takeover/report/stats.py"], ["tests/test_report.py", "tests/test_report_stats_edges.py"]),
    "grading.verdict": (["src/takeover/grading/verdict.py"],
                        ["tests/test_grading_verdict.py", "tests/test_grading_logs.py", "tests/test_grading.py"]),
    "grading.log_parsing": (["src/takeover/grading/log_parsing.py"],
                            ["tests/test_grading_log_parsing.py", "tests/test_grading_logs.py", "tests/test_grading.py"]),
}

def _mutmut() -> str:
    found = Path(sys.executable).with_name("mutmut")
    if not found.exists():
        sys.exit("mutmut is not installed in this interpreter's environment: pip install mutmut")
    return str(found)


def _shared() -> str:
    return os.environ.get("TAKEOVER_SHARED") or str((ROOT.parent / "shared").resolve())


def prepare(module: str, work: Path) -> Path:
    """A scratch copy of the project for ``module`` with mutmut's configuration (setup.cfg)."""
    files, tests = MODULES[module]
    folder = work / module
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    shutil.copytree(ROOT / "src", folder / "src", ignore=ignore)
    shutil.copytree(ROOT / "tests", folder / "tests", ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", folder / "pyproject.toml")
    lines = ["[mutmut]", "source_paths = src", "only_mutate ="]
    lines += [f"    {f}" for f in files]
    lines += ["pytest_add_cli_args_test_selection ="] + [f"    {t}" for t in tests]
    lines += ["pytest_add_cli_args =", "    -p", "    no:cacheprovider", "    -q"]
    (folder / "setup.cfg").write_text("\n".join(lines) + "\n")
    return folder


def statuses(folder: Path) -> dict[str, str]:
    """``{mutant name: status}`` as ``mutmut results --all true`` prints them."""
    out = subprocess.run([_mutmut(), "results", "--all", "true"], cwd=folder, capture_output=True, text=True,
                         check=True).stdout
    result = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            result[name] = status
    return result


def run(module: str, work: Path, max_children: int) -> tuple[dict[str, str], float]:
    folder = prepare(module, work)
    env = {**os.environ, "TAKEOVER_SHARED": _shared(), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    start = time.monotonic()
    with open(folder / "mutmut.log", "w") as log:
        proc = subprocess.run([_mutmut(), "run", "--max-children", str(max_children)], cwd=folder, env=env,
                              stdout=log, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        sys.exit(f"mutmut failed on {module} (exit {proc.returncode}); see {folder / 'mutmut.log'}")
    return statuses(folder), time.monotonic() - start


def score(counts: Counter) -> float:
    tested = sum(counts.values()) - counts["skipped"]
    return 100.0 * (counts["killed"] + counts["timeout"]) / tested if tested else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", metavar="module",
                        help=f"modules to mutate (default: all of {', '.join(MODULES)})")
    parser.add_argument("--max-children", type=int, default=2, help="parallel mutant runs (default 2)")
    parser.add_argument("--work-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "takeover-mutation",
                        help="scratch folder (one copy of the project per module; kept for `mutmut show`)")
    parser.add_argument("--survivors", action="store_true", help="also list every mutant not killed")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)}; expected some of {', '.join(MODULES)}")
    header = f"{'module':<20} {'mutants':>7} {'killed':>6} {'timeout':>7} {'survived':>8} {'no tests':>8} {'score':>6} {'seconds':>7}"
    rows = []
    for module in args.modules or list(MODULES):
        result, seconds = run(module, args.work_dir, args.max_children)
        counts = Counter(result.values())
        rows.append(f"{module:<20} {len(result):>7} {counts['killed']:>6} {counts['timeout']:>7} {counts['survived']:>8} "
                    f"{counts['no tests']:>8} {score(counts):>5.1f}% {seconds:>7.0f}")
        print(rows[-1] if len(rows) > 1 else f"{header}\n{rows[-1]}", flush=True)
        if args.survivors:
            for name, status in sorted(result.items()):
                if status not in ("killed", "timeout"):
                    print(f"    {status:<10} {name}   (mutmut show {name}, in {args.work_dir / module})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
