"""How long report.html takes to open in a browser, for a report over 1,000 takeover runs (target: 3 s).

Writes a synthetic experiment with ``--runs`` takeover runs (default 1,000: 2 successors x 4 views x 125
handoff points), each with a real run folder (``run.json``, ``events.jsonl``, ``calls.jsonl``,
``prompt.md``, ``patch.diff``) whose sizes follow real runs: about 25 steps per run (lognormal, at most
250), observations of a few hundred to 10,000 characters, a raw-trace prompt of 40,000 to 150,000
characters; texts are slices of Python's own sources, so they compress like real code and logs.
Then builds the report and opens ``report.html`` from disk in headless Chromium (the system's, driven by
Playwright), ``--repeat`` times in a fresh page: printed are the file size, the time to the load event and
to the page's scripts being ready (run table and point list built), and the time to open one handoff
point's drill-down.

    .venv/bin/python benchmarks/bench_report_page.py [--runs 1000] [--repeat 3] [--keep DIR] [--chromium PATH]

Needs ``pip install 'takeover[browser]'`` and a Chromium (``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

from takeover.limits import RunLimits
from takeover.report import build_report
from takeover.trajectories.takeover_run import RunRecord

VIEWS = ("repo_only", "raw_trace", "summary_notes", "structured_notes")
TYPES = ("after_first_source_edit", "after_first_verification_result", "after_first_post_failure_edit")
STATES = ("needs_completion", "resolved_preserve", "broke_existing")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-sync"]
TARGET_SECONDS = 3.0


class Corpus:
    """Slices of the standard library's sources: text that compresses like code and command output."""

    def __init__(self, rng: np.random.Generator):
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        text = "".join((stdlib / name).read_text(encoding="utf-8") for name in
                       ("argparse.py", "inspect.py", "typing.py", "pathlib.py", "subprocess.py", "tarfile.py"))
        self.text, self.rng = text, rng

    def take(self, chars: int) -> str:
        start = int(self.rng.integers(0, len(self.text) - chars - 1))
        return self.text[start:start + chars]

    def patch(self, lines: int, path: str) -> str:
        body = self.take(60 * lines).splitlines()[:lines]
        out = [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}", f"@@ -1,{lines} +1,{lines} @@"]
        out += [("+" if i % 5 == 0 else "-" if i % 7 == 0 else " ") + line for i, line in enumerate(body)]
        return "\n".join(out) + "\n"


def _unit(out: Path, stage: str, key: str, output: dict, inputs: dict | None = None) -> None:
    record = {"stage": stage, "key": key, "status": "done", "reason": None, "failure_kind": None, "labels": {},
              "inputs": inputs or {}, "output": output, "started_at": "2026-01-01T00:00:00+00:00", "seconds": 1.0,
              "prompt_tokens": 0, "completion_tokens": 0}
    (out / "units" / stage / f"{key}.json").write_text(json.dumps(record))


def _run_folder(folder: Path, corpus: Corpus, rng: np.random.Generator, template: dict, view: str) -> dict:
    steps = int(min(250, max(2, rng.lognormal(np.log(25), 0.7))))
    events, calls, prompt_tokens = [], [], 0
    context = 3000
    for s in range(steps):
        command = corpus.take(int(rng.integers(20, 200))).replace("\n", " ")
        thought = "THOUGHT: " + corpus.take(int(rng.integers(80, 600)))
        obs = corpus.take(int(min(10_000, max(20, rng.lognormal(np.log(800), 1.2)))))
        events.append({"index": 2 * s, "kind": "action", "source": "agent", "type": "command",
                       "text": f"{thought}\n\n```bash\n{command}\n```", "thought": thought, "command": command,
                       "llm_call": s})
        events.append({"index": 2 * s + 1, "kind": "observation", "source": "environment", "type": "command",
                       "text": f"<returncode>0</returncode>\n<output>\n{obs}\n</output>", "cause": 2 * s, "exit_code": 0})
        context += len(thought) // 4 + len(obs) // 4
        prompt_tokens += context
        calls.append({"index": s, "usage": {"prompt_tokens": context, "completion_tokens": len(thought) // 4,
                                            "cached_tokens": int(context * 0.8), "estimated": False}})
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (folder / "calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    (folder / "prompt.md").write_text(f"prompt of {view}")
    (folder / "patch.diff").write_text(corpus.patch(int(rng.integers(10, 200)), "src/module.py"))
    (folder / "run.json").write_text(json.dumps({**template, "workspace": str(folder / "workspace")}))
    return {"agent_events": len(events), "llm_calls": steps, "prompt_tokens": prompt_tokens,
            "completion_tokens": sum(c["usage"]["completion_tokens"] for c in calls),
            "cached_tokens": sum(c["usage"]["cached_tokens"] for c in calls)}


def write_experiment(out: Path, runs: int, seed: int = 7) -> None:
    """The synthetic experiment with run folders (see the module docstring)."""
    rng = np.random.default_rng(seed)
    corpus = Corpus(rng)
    successors = ("model-a", "model-b")
    points = runs // (len(successors) * len(VIEWS))
    for stage in ("checkpoint", "handoff_state", "view", "takeover", "grade"):
        (out / "units" / stage).mkdir(parents=True, exist_ok=True)
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    template = json.loads(RunRecord(run_id="run", kind="takeover", instance_id="x", repo="acme/x", base_commit="0" * 40,
                                    workspace="w", model={"model": "m"}, limits=RunLimits(), started_at="t",
                                    finished=True, exit_status="submitted").model_dump_json())
    plan: dict = {"name": "page-benchmark", "bootstrap": {"resamples": 1000, "seed": 1},
                  "stages": {s: [] for s in ("checkpoint", "handoff_state", "view", "takeover", "grade")}}
    for p in range(points):
        iid, pkey, ptype = f"acme__x-{p // 3}", f"p{p:05d}", TYPES[p % 3]
        task = out / "tasks" / f"{iid}.json"
        if not task.exists():
            task.write_text(json.dumps({"instance_id": iid, "repo": "acme/x", "base_commit": "0" * 40,
                                        "problem_statement": corpus.take(1500)}))
        labels = {"instance_id": iid, "point_type": ptype}
        cp_dir = out / "work" / "checkpoint" / pkey / "checkpoint"
        (cp_dir / "views").mkdir(parents=True)
        (cp_dir / "checkpoint.patch").write_text(corpus.patch(int(rng.integers(10, 80)), "src/module.py"))
        point = {"type": ptype, "event_index": int(rng.integers(0, 60)), "changed_source_files": ["src/module.py"],
                 "changed_test_files": [], "non_source_artifacts": [], "validation_after_latest_source_change": "none"}
        plan["stages"]["checkpoint"].append({"key": pkey, "labels": labels})
        _unit(out, "checkpoint", pkey, {"checkpoint_dir": str(cp_dir), "method": "recorded_snapshot"},
              {"point": point, "task": str(task)})
        plan["stages"]["handoff_state"].append({"key": f"h{pkey}", "labels": {**labels, "point_key": pkey}})
        _unit(out, "handoff_state", f"h{pkey}", {"handoff_state": STATES[p % 3], "resolved": False})
        for v, view in enumerate(VIEWS):
            size = {"repo_only": 1500, "raw_trace": int(rng.integers(40_000, 150_000))}.get(view, 5000)
            path = cp_dir / "views" / f"{view}.md"
            path.write_text(corpus.take(size))
            vlabels = {**labels, "point_key": pkey, "view": view}
            plan["stages"]["view"].append({"key": f"v{pkey}{v}", "labels": vlabels})
            _unit(out, "view", f"v{pkey}{v}", {"path": str(path), "characters": size})
            for s, succ in enumerate(successors):
                tkey, gkey = f"t{pkey}{v}{s}", f"g{pkey}{v}{s}"
                plan["stages"]["takeover"].append({"key": tkey, "labels": {**vlabels, "successor": succ}})
                plan["stages"]["grade"].append({"key": gkey, "labels": {**vlabels, "successor": succ,
                                                                       "takeover_key": tkey}})
                run_dir = out / "work" / "takeover" / tkey / "run"
                counts = _run_folder(run_dir, corpus, rng, template, view)
                _unit(out, "takeover", tkey, {"run_dir": str(run_dir), "exit_status": "submitted",
                                              "initial_prompt_chars": size, **counts})
                _unit(out, "grade", gkey, {"resolved": bool(rng.random() < 0.45), "fail_to_pass_rate": 1.0,
                                           "pass_to_pass_rate": 1.0})
    (out / "plan.json").write_text(json.dumps(plan))


def open_in_browser(html: Path, chromium: str, repeat: int) -> list[dict]:
    """Open ``html`` ``repeat`` times, each in a fresh page; per time: load event and scripts-ready
    times and the time to open the first handoff point (seconds)."""
    from playwright.sync_api import sync_playwright

    found = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            for _ in range(repeat):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                errors: list[str] = []
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                page.goto(html.as_uri(), wait_until="load", timeout=120_000)
                page.wait_for_function("window.takeoverPageReady !== undefined")
                timing = page.evaluate("""() => ({
                    load: performance.getEntriesByType('navigation')[0].loadEventEnd / 1000,
                    ready: window.takeoverPageReady / 1000})""")
                start = time.perf_counter()
                page.locator("details.point summary").first.click()
                page.locator("details.point .run-col").first.wait_for()
                timing["open_point"] = time.perf_counter() - start
                timing["errors"] = errors
                found.append(timing)
                page.close()
        finally:
            browser.close()
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="write the synthetic experiment here and keep it")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="takeover-bench-page-"))
    try:
        if not (out / "plan.json").exists():
            t0 = time.perf_counter()
            write_experiment(out, args.runs)
            print(f"wrote {args.runs} takeover runs with run folders in {time.perf_counter() - t0:.1f} s: {out}")
        t0 = time.perf_counter()
        report = build_report(out, plots=False)
        html = Path(report.files["report.html"])
        print(f"takeover report: {time.perf_counter() - t0:.1f} s; report.html {html.stat().st_size / 2**20:.1f} MiB "
              f"for {len(report.rows)} runs")
        timings = open_in_browser(html, args.chromium, args.repeat)
        for i, t in enumerate(timings, 1):
            print(f"  open {i}: load event {t['load']:.2f} s, scripts ready {t['ready']:.2f} s, "
                  f"first point opened in {t['open_point']:.2f} s" + (f", errors: {t['errors']}" if t["errors"] else ""))
        ready = statistics.median(max(t["load"], t["ready"]) for t in timings)
        print(f"report.html over {len(report.rows)} takeover runs opens in {ready:.2f} s (median of {len(timings)}; "
              f"target < {TARGET_SECONDS:g} s): {'yes' if ready < TARGET_SECONDS else 'NO'}")
    finally:
        if args.keep is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
