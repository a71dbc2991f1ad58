"""Hash seeds and flaky verdicts (docs/protocol.md section 6, extension): every grading runs its tests under a
recorded PYTHONHASHSEED; a test that passes with the reference patch and fails is graded again under another
seed, and a verdict that changes is flaky, never a failure. On a tiny package built here, graded locally."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_repo
from typer.testing import CliRunner

from takeover.cli import app
from takeover.grading import grade
from takeover.grading.evaluation import grading_key
from takeover.grading.seeds import MAX_SEED, first_seed, other_seed, printed_seed, seed_export
from takeover.grading.verdict import FlakyVerdict
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

MOD = "def add(a, b):\n    return a - b\n"
TESTS = ("import os\n\nfrom mod import add\n\n\ndef test_seed_seen():\n"
         "    assert os.environ['PYTHONHASHSEED'].isdigit()\n")
# test_add is FAIL_TO_PASS; test_order is PASS_TO_PASS and fails under the seeds named in BAD_SEED only (a test
# that fails on every other grading when the seeds alternate), or with "mod3" there under every seed not
# divisible by 3.
TEST_PATCH = """diff --git a/tests/test_mod.py b/tests/test_mod.py
--- a/tests/test_mod.py
+++ b/tests/test_mod.py
@@ -5,3 +5,13 @@ from mod import add
 
 def test_seed_seen():
     assert os.environ['PYTHONHASHSEED'].isdigit()
+
+
+def test_add():
+    assert add(2, 3) == 5
+
+
+def test_order():
+    rule = open(os.path.join(os.path.dirname(__file__), 'BAD_SEED')).read().split()
+    seed = os.environ['PYTHONHASHSEED']
+    assert int(seed) % 3 == 0 if rule[:1] == ['mod3'] else seed not in rule, 'RecursionError under this seed'
"""
GOLD = """diff --git a/mod.py b/mod.py
--- a/mod.py
+++ b/mod.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""
SPEC = {"python": None, "test_cmd": "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 pytest -rA -p no:cacheprovider",
        "log_parser": "pytest"}


def _task(tmp_path: Path, bad_seeds: str) -> tuple[dict, RepoSource]:
    mirror = tmp_path / "mirror"
    _, sha = make_repo(tmp_path / "src" / "mod", {"mod.py": MOD, "tests/test_mod.py": TESTS, "conftest.py": "",
                                                  "tests/BAD_SEED": bad_seeds + "\n"},
                       bare_mirror=mirror / "acme__mod.git")
    task = {"instance_id": "acme__mod-1", "repo": "acme/mod", "base_commit": sha, "problem_statement": "add subtracts",
            "version": "0.1", "patch": GOLD, "test_patch": TEST_PATCH, "takeover_env_spec": SPEC,
            "FAIL_TO_PASS": ["tests/test_mod.py::test_add"],
            "PASS_TO_PASS": ["tests/test_mod.py::test_order", "tests/test_mod.py::test_seed_seen"]}
    return task, RepoSource(mirror, offline=True)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))


def test_seeds_are_per_key_in_range_and_the_second_differs():
    task = SourceTask(instance_id="a__b-1", repo="a/b", base_commit="0" * 40, problem_statement="p",
                      takeover_env_spec=SPEC)
    key = grading_key(task, GOLD, GradingSettings(backend="local", network=False, timeout=60, options={"spec_file": None}))
    other = grading_key(task, "", GradingSettings(backend="local", network=False, timeout=60, options={"spec_file": None}))
    assert first_seed(key) == first_seed(key) != first_seed(other)
    assert 1 <= first_seed(key) <= MAX_SEED and other_seed(first_seed(key), key) != first_seed(key)
    assert seed_export(7) == "export PYTHONHASHSEED=7"
    assert printed_seed("hash randomization: on (PYTHONHASHSEED=1535730572)") == 1535730572
    with pytest.raises(ValueError, match="1 to 4294967295"):
        seed_export(0)


def test_a_test_that_fails_under_every_other_seed_is_flaky_not_failed(tmp_path):
    seed = 1535730572
    task, source = _task(tmp_path, str(seed))
    result = grade(task, GOLD, grading=GradingSettings(timeout=120, hash_seed=seed), repo_source=source, log_dir=tmp_path / "logs")
    second = other_seed(seed, result.grading_key)
    assert result.error is None and result.hash_seed == seed and result.hash_seeds == [seed, second]
    assert result.PASS_TO_PASS.failure == ["tests/test_mod.py::test_order"] and not result.resolved
    assert result.flaky == FlakyVerdict(seeds=[seed, second], resolved=[False, True],
                                        flipped=["tests/test_mod.py::test_order"],
                                        second_log=str(tmp_path / "logs" / "takeover" / "acme__mod-1" / f"seed-{second}"
                                                       / "test_output.txt"))
    assert any(w.startswith("flaky verdict: tests/test_mod.py::test_order flipped") for w in result.warnings)
    folder = tmp_path / "logs" / "takeover" / "acme__mod-1"
    assert f"export PYTHONHASHSEED={seed}\n" in (folder / "eval.sh").read_text()
    assert f"export PYTHONHASHSEED={second}\n" in (folder / f"seed-{second}" / "eval.sh").read_text()
    stored = json.loads((folder / "result.json").read_text())
    assert stored["flaky"]["seeds"] == [seed, second] and stored["hash_seed"] == seed

    # The same patch under its own seed (no --hash-seed) passes at once: graded once, not flaky.
    again = grade(task, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "again")
    assert again.resolved and again.flaky is None and again.hash_seeds == [first_seed(again.grading_key)]


def test_a_pass_to_pass_test_failing_under_two_seeds_gets_a_third(tmp_path):
    task, source = _task(tmp_path, "mod3")
    key = grading_key(SourceTask.model_validate(task), GOLD, GradingSettings(backend="local", network=False, timeout=120))

    def chain(seed: int) -> tuple[int, int, int]:
        return seed, other_seed(seed, key), other_seed(other_seed(seed, key), key)

    # a first seed whose first two seeds make test_order fail and whose third makes it pass
    seed, second, third = next(c for c in map(chain, range(1, 10**4)) if [s % 3 == 0 for s in c] == [False, False, True])
    result = grade(task, GOLD, grading=GradingSettings(timeout=120, hash_seed=seed), repo_source=source, log_dir=tmp_path / "logs")
    assert result.grading_key == key and result.hash_seeds == [seed, second, third]
    assert result.flaky is not None and result.flaky.seeds == [seed, third]
    assert result.flaky.flipped == ["tests/test_mod.py::test_order"]


def test_a_test_that_fails_under_every_seed_is_a_failure_not_flaky(tmp_path):
    task, source = _task(tmp_path, "")
    result = grade(task, "", grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "logs")
    assert result.FAIL_TO_PASS.failure == ["tests/test_mod.py::test_add"] and not result.resolved
    assert result.flaky is None and len(result.hash_seeds) == 2 and result.hash_seeds[0] == result.hash_seed
    assert not any("flaky" in w for w in result.warnings)


def test_cli_grade_hash_seed_reports_flaky(tmp_path):
    seed = 12345
    task, _ = _task(tmp_path, str(seed))
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    done = CliRunner().invoke(app, ["grade", "--dataset", str(dataset), "--instance-id", "acme__mod-1", "--gold",
                                    "--mirror", str(tmp_path / "mirror"), "--offline", "--out-dir", str(tmp_path / "out"),
                                    "--hash-seed", str(seed), "--json"])
    assert done.exit_code == 0, done.output
    line = json.loads(done.stdout.splitlines()[0])
    assert line["hash_seed"] == seed and line["flaky"]["flipped"] == ["tests/test_mod.py::test_order"]
    bad = CliRunner().invoke(app, ["grade", "--dataset", str(dataset), "--instance-id", "acme__mod-1", "--gold",
                                   "--out-dir", str(tmp_path / "out"), "--hash-seed", "0"])
    assert bad.exit_code == 2 and "hash seed is 1 to 4294967295" in bad.output


def _row(point: str, view: str, resolved: bool, flaky: str | None = None) -> dict:
    return {"successor": "m", "view": view, "point_key": point, "resolved": resolved, "status": "done",
            "failure_kind": None, "exit_status": "submitted", "agent_events": 3, "prompt_tokens": 10,
            "initial_prompt_chars": 5, "handoff_state": "needs_completion", "point_type": "after_first_source_edit",
            "flaky": flaky}


def test_the_report_keeps_a_flaky_verdict_out_of_the_solved_rate_and_counts_it():
    from takeover.report.markdown import _table
    from takeover.report.tables import summary_tables

    flip = "tests/t.py::test_x flipped with the hash seed (PYTHONHASHSEED=1: not resolved; PYTHONHASHSEED=2: resolved)"
    rows = [_row("p1", "repo_only", True), _row("p2", "repo_only", False), _row("p3", "repo_only", True),
            _row("p1", "raw_trace", True), _row("p2", "raw_trace", False, flip), _row("p3", "raw_trace", False)]
    summary = {e["view"]: e for e in summary_tables(rows, resamples=50)["summary"]}
    raw = summary["raw_trace"]
    assert (raw["points"], raw["flaky"], raw["solved"], raw["solved_rate"]) == (3, 1, 1, 0.5)
    assert raw["agent_failures"] == 0 and raw["infrastructure_failures"] == 0
    assert summary["repo_only"]["flaky"] == 0 and summary["repo_only"]["solved_rate"] == 2 / 3
    pairs = raw["vs_repo_only"]["solved_rate"]
    assert pairs["difference"] == -0.5  # over p1 and p3 only: the flaky point p2 is no pair
    assert "| ended unsubmitted | flaky |" in _table(list(summary.values()))


def test_the_experiment_files_grading_hash_seed_is_one_setting_left_out_of_the_key_when_unset():
    from pydantic import ValidationError

    from takeover._util.io import stable_form
    from takeover.results import GradeOutput

    # unset: the record's stable form (and so every study's unit key) leaves it out, as every default
    assert stable_form(GradingSettings()) == {} and stable_form(GradingSettings(hash_seed=7)) == {"hash_seed": 7}
    assert GradingSettings.model_validate({"hash_seed": 7}).hash_seed == 7
    with pytest.raises(ValidationError, match="a hash seed is 1 to 4294967295, got 0"):
        GradingSettings(hash_seed=0)
    base = {"resolved": False, "handoff_state": None, "fail_to_pass_rate": None, "pass_to_pass_rate": None,
            "network": False}
    assert "flaky" not in stable_form(GradeOutput(**base))
    assert stable_form(GradeOutput(**base, flaky="t flipped"))["flaky"] == "t flipped"
