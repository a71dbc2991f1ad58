"""The paper views' prompts and keys on the shared run of psf__requests-1766, as digests: what
``test_view_registry.py`` compares with the table computed before views became a registry.

Only API that both sides have is used (``build_view(name, ..., view_budgets=)``, ``write_views``,
``Planner.views``), so the same function ran on the earlier source (``git archive``) to make the table:

    PYTHONPATH=<earlier>/src:tests python -c "import _paper_view_digests as d, json; print(json.dumps(d.digests()))"
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

from _views_support import real_run, real_run_path, real_task, requests_1766_patches, requests_1766_points

from takeover.experiments.config import ExperimentConfig
from takeover.experiments.planning import DoneCheckpoint, Planner
from takeover.llm import ModelSettings
from takeover.results.records import CheckpointOutput, ImportOutput, TaskInputs, UnitLabels
from takeover.sources.repos import RepoSource
from takeover.testing.scripted_server import ScriptedServer
from takeover.view_budgets import ViewBudgets
from takeover.views import ViewInputs, build_view, write_views

ID = "psf__requests-1766"
PAPER = ("repo_only", "raw_trace", "summary_notes", "structured_notes")
SUMMARY = """- The issue asks requests to send the Digest auth qop value in double quotes, as RFC 2617 and curl do.
- The agent located the header construction in requests/auth.py, in build_digest_header.
- It wrote reproduce_issue.py, which prints the Authorization header for a fixed challenge.
- The script's output was read after the run; whether the header is right is not yet confirmed.
- Next: run python3 reproduce_issue.py and compare the header with the RFC."""
STRUCTURED = {
    "problem_understanding": "Digest auth must send the qop value in double quotes, as RFC 2617 and curl do.",
    "work_completed": "Wrote reproduce_issue.py; worked in requests/auth.py on the Authorization header.",
    "evidence_observed": "reproduce_issue.py printed the Authorization header for a fixed challenge.",
    "observed_failures": "UNKNOWN",
    "remaining_uncertainty": "Whether the header is right is not confirmed; the test suite was not checked.",
    "rollback_notes": "UNKNOWN",
    "recommended_next_action": "Run python3 reproduce_issue.py and check the qop value in the header.",
}
#: The budgets each digest is taken under: the defaults, and every budget set.
BUDGETS = {"default": ViewBudgets(),
           "budgets": ViewBudgets(raw_trace_max_chars=6000, raw_trace_max_tokens=1500, note_max_tokens=800)}


def _answer(body: dict, n: int) -> dict:
    return {"content": json.dumps(STRUCTURED) if "JSON object" in body["messages"][1]["content"] else SUMMARY}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _unit_keys(budgets: ViewBudgets) -> dict[str, str]:
    """The view units' keys of one checkpoint, as a study plans them (fixed paths and hashes: keys only)."""
    model = {"model": "scripted", "base_url": "http://127.0.0.1:9/v1"}
    config = ExperimentConfig(out_dir="/study", dataset={"path": "/tasks.jsonl"},
                              predecessor={"trajectories": ["/runs"]}, successors=[model], view_budgets=budgets)
    planner = Planner(config, {ID: TaskInputs(instance_id=ID, task="/study/tasks/t.json", task_sha256="0" * 64)},
                      RepoSource(None, offline=True))
    trajectory = ImportOutput(file="/runs/r.json", record=None, format="mini-swe-agent", agent_events=30,
                              prompt_tokens=None, completion_tokens=None, exit_status=None, final_patch_files=[])
    checkpoint = DoneCheckpoint(
        UnitLabels(instance_id=ID, point_type="after_first_source_edit", point_key="cp"),
        CheckpointOutput(checkpoint_dir="/study/cp", patch_sha256="1" * 64, files=[], method="verified_replay",
                         event_index=14, trajectory=trajectory), "cp")
    return {spec.labels["view"]: spec.key for spec in planner.views([checkpoint])}


def digests() -> dict[str, str]:
    """``{"<budgets>/<point type>/<view>/<what>": digest}``: ``prompt`` (the prompt's sha256, first 16 hex
    digits), ``views_key`` (its ``views.json`` key) and ``unit_key`` (its view unit's key)."""
    run, task = real_run(ID), real_task(ID)
    points, patches = requests_1766_points(), requests_1766_patches()
    out: dict[str, str] = {}
    with ScriptedServer(_answer) as server, tempfile.TemporaryDirectory() as tmp:
        model = ModelSettings(model="scripted", base_url=server.base_url, retries=0)
        for label, budgets in BUDGETS.items():
            for view, key in _unit_keys(budgets).items():
                out[f"{label}/{view}/unit_key"] = key
            for point_type, point in points.items():
                for view in PAPER:
                    result = build_view(view, run, point, task, patches[point_type], model=model,
                                        view_budgets=budgets)
                    out[f"{label}/{point_type}/{view}/prompt"] = _sha(result.prompt)
                inputs = ViewInputs(trajectory=run, task=task, point_type=point_type, point=point,
                                    checkpoint_patch=patches[point_type])
                folder = Path(tmp) / label / point_type
                summary = write_views(inputs, list(PAPER), folder, model=model, view_budgets=budgets)
                for view, row in summary["views"].items():
                    out[f"{label}/{point_type}/{view}/views_key"] = row["key"]
    assert real_run_path(ID).is_file()
    return dict(sorted(out.items()))
