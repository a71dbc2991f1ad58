"""SWE-bench's install specifications as data (takeover.environments.swebench_specs): the table generated
from the swebench 4.1 distribution states its source and license, equals what the generator makes from the
installed 4.1, and the rules read from it (test directives, eval scripts, requirement cleaning) equal
swebench 4.1's own functions on all 500 Verified rows. Under swebench 5.x, whose package has none of these,
the same table serves (tests/test_harness_versions.py runs this file under the other version)."""

from __future__ import annotations

import importlib.util

import pytest
from prerequisites import ROOT, requires, shared

from takeover._util import harness_version
from takeover.environments import spec_from_swebench, swebench_specs
from takeover.sources.tasks import load_tasks

only_41 = pytest.mark.skipif(not harness_version.keeps_repo_specs(),
                             reason="compares with swebench 4.1's own functions; swebench 5.x has none")


def _generator():
    spec = importlib.util.spec_from_file_location("make_swebench_specs", ROOT / "benchmarks" / "make_swebench_specs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_states_its_source_and_license():
    table = swebench_specs.specs_table()
    assert table["license"] == "MIT"
    assert table["copyright"].startswith("Copyright (c) 2023 Carlos E Jimenez, John Yang")
    assert "Permission is hereby granted, free of charge" in table["license_text"]
    assert table["source"].startswith("swebench 4.1.0 (PyPI)")
    assert table["generated_by"] == "benchmarks/make_swebench_specs.py"
    assert len(table["specs"]) == 20 and sum(map(len, table["specs"].values())) == 300


def test_environments_come_from_the_table_under_any_harness():
    spec = spec_from_swebench("django/django", "3.0")
    assert (spec.python, spec.test_cmd) == ("3.6", "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1")
    assert spec.requirements_from == ["tests/requirements/py3.txt"]
    assert swebench_specs.parser_name("sympy/sympy") == "parse_log_sympy"
    assert swebench_specs.parser_name("immutable-js/immutable-js") == "parse_log_immutable_js"
    assert swebench_specs.eval_type("markedjs/marked") == "fail_only"
    assert swebench_specs.clean_requirements("types-pkg_resources==0.1\nnumpy\n") == "types-setuptools\nnumpy\n"
    with pytest.raises(KeyError):
        spec_from_swebench("acme/calc", "1.0")


@only_41
def test_the_table_is_what_the_generator_makes_from_the_installed_4_1():
    assert _generator().build_table() == swebench_specs.specs_table()


@only_41
@requires("shared:swebench_verified.jsonl")
def test_eval_scripts_and_directives_equal_swebench_4_1s_on_all_verified_rows():
    from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS
    from swebench.harness.test_spec.create_scripts import make_eval_script_list
    from swebench.harness.test_spec.python import get_test_directives

    tasks = load_tasks(shared("swebench_verified.jsonl"))
    assert len(tasks) == 500
    for t in tasks:
        row = t.model_dump(mode="json")
        assert swebench_specs.test_directives(t.repo, t.test_patch) == get_test_directives(row), t.instance_id
        theirs = make_eval_script_list(row, MAP_REPO_VERSION_TO_SPECS[t.repo][t.version], "testbed", "/testbed",
                                       t.base_commit, t.test_patch)
        assert swebench_specs.eval_script_list(t.repo, t.version, t.base_commit, t.test_patch) == theirs, t.instance_id


@only_41
def test_requirement_cleaning_equals_swebench_4_1s():
    from swebench.harness.test_spec.python import clean_environment_yml, clean_requirements

    reqs = "types-pkg_resources>=0.1\nflask\n"
    yml = "name: x\ndependencies:\n  - python=3.9\n  - pip:\n    - types-pkg_resources==1\n    - six\n  - numpy\n"
    assert swebench_specs.clean_requirements(reqs) == clean_requirements(reqs)
    assert swebench_specs.clean_environment_yml(yml) == clean_environment_yml(yml)
    assert "types-setuptools" in swebench_specs.clean_environment_yml(yml)


@only_41
@requires("shared:swebench_verified.jsonl")
def test_image_repo_scripts_equal_swebench_4_1s_on_all_verified_rows():
    from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS
    from swebench.harness.test_spec.create_scripts import make_repo_script_list

    for t in load_tasks(shared("swebench_verified.jsonl")):
        theirs = make_repo_script_list(MAP_REPO_VERSION_TO_SPECS[t.repo][t.version], t.repo, "/testbed", t.base_commit,
                                       "testbed")
        assert swebench_specs.repo_script_list(t.repo, t.version, t.base_commit) == theirs, t.instance_id
