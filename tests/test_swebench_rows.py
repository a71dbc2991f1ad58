"""Dataset rows in either format (takeover.environments.row_grading): a swebench 5.x row is graded with its
own image, eval_script, log_parser and eval_type; a 4.1 row gets them derived, its eval script generated,
and says so. Against the 500 Verified rows of swebench 5.x's own history
(swebench5/verified_v5_52b72b3.parquet): the derived fields equal the row's, the generated script equals it
on 480 rows, and the 20 others are named (data file, docs/swebench5.md, a warning at grading)."""

from __future__ import annotations

import json

import pytest
from prerequisites import ROOT, requires, shared

from takeover._util import harness_version
from takeover.environments.row_grading import (
    difference_warning,
    harness_test_spec,
    row_grading,
    script_differences,
)
from takeover.grading import swebench_rules
from takeover.sources.tasks import load_tasks

PARQUET = "swebench5/verified_v5_52b72b3.parquet"
JSONL = "swebench_verified.jsonl"
#: Rows whose 5.x PASS_TO_PASS lists fewer tests than swebench_verified.jsonl's (SWE-bench repaired them).
P2P_REPAIRED = {"astropy__astropy-7606", "django__django-10097"}


@pytest.fixture(scope="module")
def rows():
    return ({t.instance_id: t for t in load_tasks(shared(JSONL))},
            {t.instance_id: t for t in load_tasks(shared(PARQUET))})


@requires(f"shared:{PARQUET}", f"shared:{JSONL}")
def test_derived_fields_equal_the_5x_rows_for_all_500(rows):
    old, new = rows
    assert len(old) == len(new) == 500
    script_differs, p2p_differs = set(), set()
    for iid, task in old.items():
        derived, official = row_grading(task), new[iid].model_extra
        assert derived.derived == ["image", "eval_script", "log_parser", "eval_type"]
        assert derived.eval_script_source == "generated"
        assert (derived.image, derived.log_parser, derived.eval_type) == (
            official["image"], official["log_parser"], official["eval_type"]), iid
        assert sorted(task.FAIL_TO_PASS) == sorted(new[iid].FAIL_TO_PASS), iid
        if sorted(task.PASS_TO_PASS) != sorted(new[iid].PASS_TO_PASS):
            p2p_differs.add(iid)
        if derived.eval_script != official["eval_script"]:
            script_differs.add(iid)
            assert derived.warnings == [difference_warning(iid)]
        else:
            assert derived.warnings == []
    assert p2p_differs == P2P_REPAIRED
    assert len(script_differs) == 20
    assert script_differs == set(script_differences())


@requires(f"shared:{PARQUET}")
def test_a_5x_row_is_graded_with_its_own_fields(rows):
    _old, new = rows
    got = row_grading(new["django__django-11141"])
    assert (got.eval_script_source, got.derived, got.warnings) == ("dataset", [], [])
    assert got.eval_script == new["django__django-11141"].model_extra["eval_script"]
    assert "test_migrations_namespace_package/0001_initial.py" in got.eval_script


@requires(f"shared:{JSONL}")
def test_a_row_whose_generated_script_differs_is_named_with_what_differs(rows):
    old, _new = rows
    warning = row_grading(old["django__django-11141"]).warnings[0]
    assert warning.startswith("django__django-11141: graded with a generated eval script, which differs from "
                              "SWE-bench 5.x's own for this row (it also resets "
                              "tests/migrations/test_migrations_namespace_package/0001_initial.py)")
    assert "it also runs python -m pip install -q 'pytest<7.2'" in row_grading(old["astropy__astropy-8707"]).warnings[0]
    doc = (ROOT / "docs" / "swebench5.md").read_text(encoding="utf-8")
    assert all(f"| {iid} |" in doc for iid in script_differences())


@pytest.mark.skipif(harness_version.keeps_repo_specs(), reason="swebench 5.x's make_test_spec (4.1 downloads "
                    "requirement files for its own); tests/test_harness_versions.py runs this under 5.0.2 beside 4.1")
@requires(f"shared:{JSONL}")
def test_swebench_5_make_test_spec_accepts_every_row_with_derived_fields(rows):
    old, _new = rows
    for iid, task in old.items():
        spec, fields = harness_test_spec(task)
        assert (spec.image, spec.log_parser, spec.eval_type) == (fields.image, fields.log_parser, fields.eval_type)
        assert spec.eval_script.startswith("#!/bin/bash\nset -uxo pipefail\n")
        assert f"{swebench_rules.TEST_EXIT_CODE}: " in spec.eval_script  # 5.x records the test exit code
        assert spec.FAIL_TO_PASS == task.FAIL_TO_PASS, iid


def test_the_differences_file_states_its_source():
    data = json.loads((ROOT / "src/takeover/environments/swebench5_script_differences.json").read_text())
    assert data["generated_by"] == "benchmarks/swebench5_script_differences.py"
    assert data["source"].startswith("verified_v5_52b72b3.parquet (500 rows)")
