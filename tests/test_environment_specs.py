"""Environments of every SWE-bench Verified repository at the specification level (what would be installed,
with which interpreter and commands), the host limits said before any work, the stand-in setup commit,
and the date packages resolve at. Nothing here builds: django, matplotlib and scikit-learn are too large
to check out here, and their construction is checked on what the build reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATASET, git, make_repo
from prerequisites import requires

from takeover.environments import (
    EnvSpec,
    check_buildable,
    host_blockers,
    prepare_environment,
    setup_commit_for,
    spec_from_swebench,
    unbuildable_environments,
)
from takeover.environments.conda import conda_packages_as_pip, tox_current_env_steps
from takeover.environments.host_limits import DOCKER_ALTERNATIVE, has_interpreter
from takeover.environments.interpreters import find_interpreter
from takeover.environments.setup_commit import (
    BY_DATE,
    BY_NUMBER,
    mirror_commit_time,
    packages_date,
    stand_in_table,
    stand_ins_from_tasks,
)
from takeover.environments.spec import SWEBENCH_PACKAGES_DATE
from takeover.environments.workspace_venv import _install_step_for_workspace
from takeover.errors import EnvironmentUnavailable
from takeover.sources.tasks import SourceTask, load_tasks


def task_of(**fields) -> SourceTask:
    return SourceTask.model_validate({"instance_id": "me__lib-1", "base_commit": "", "problem_statement": "",
                                      "repo": "me/lib", **fields})


def test_django_3_is_python_3_6_with_its_requirements_file_and_an_editable_install():
    spec = spec_from_swebench("django/django", "3.0")
    assert spec.python == "3.6" and spec.requirements_from == ["tests/requirements/py3.txt"]
    assert spec.install == ["python -m pip install -e ."] and spec.pre_install == []
    assert spec.eval_commands == ["export LANG=en_US.UTF-8", "export LANGUAGE=en_US:en", "export LC_ALL=en_US.UTF-8"]
    assert any("locale-gen" in n for n in spec.notes)  # the system step is skipped, and said
    assert spec.test_cmd.startswith("./tests/runtests.py")
    assert spec.exclude_newer == SWEBENCH_PACKAGES_DATE
    if has_interpreter("3.6"):
        assert host_blockers(spec) == []


def test_django_1_and_2_need_python_3_5_and_fail_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    spec = spec_from_swebench("django/django", "2.2")
    assert spec.python == "3.5" and spec.install == ["python setup.py install"]
    if has_interpreter("3.5"):
        pytest.skip("this host has Python 3.5: django 2.2 can be built here")
    with pytest.raises(EnvironmentUnavailable) as err:
        prepare_environment(task_of(repo="django/django", version="2.2"), tmp_path, spec=spec)
    message = str(err.value)
    assert "django/django 2.2" in message and "no Python 3.5" in message and DOCKER_ALTERNATIVE in message
    assert not (tmp_path / "cache").exists()  # nothing was built, no folder made


def test_matplotlib_is_said_unbuildable_here_with_the_reason_and_the_docker_alternative(tmp_path):
    spec = spec_from_swebench("matplotlib/matplotlib", "3.5")
    assert spec.python == "3.11" and spec.environment_yml_from == ["environment.yml"]
    assert spec.install == ["python -m pip install -e ."]
    assert "numpy==1.25.2" in spec.pip_packages
    assert any("apt-get" in n for n in spec.notes)
    with pytest.raises(EnvironmentUnavailable, match=r"FreeType and Qhull.*matplotlib/matplotlib 3\.5.*--backend docker"):
        check_buildable(spec)
    listed = {(u.repo, u.version) for u in unbuildable_environments(("matplotlib/matplotlib",))}
    assert {("matplotlib/matplotlib", v) for v in ("3.0", "3.1", "3.4", "3.5", "3.6", "3.7")} <= listed


def test_scikit_learn_builds_from_source_with_pip_and_numpy_wheels():
    old = spec_from_swebench("scikit-learn/scikit-learn", "0.22")
    assert old.python == "3.6"
    assert old.packages == ["numpy", "scipy", "cython", "pytest", "pandas", "matplotlib"]
    assert old.pip_packages == ["cython", "numpy==1.19.2", "setuptools", "scipy==1.5.2"]
    # pip's legacy install (no PEP 517, no build isolation): pip itself, not uv, runs it, without deps.
    shell, extras = _install_step_for_workspace(old.install[0], Path("/venv/bin/python"))
    assert shell == "/venv/bin/python -m pip install --no-deps -v --no-use-pep517 --no-build-isolation -e ."
    assert extras == []
    new = spec_from_swebench("scikit-learn/scikit-learn", "1.3")
    assert new.python == "3.9"
    assert new.packages[:3] == ["numpy==1.19.2", "scipy==1.5.2", "cython==3.0.10"]
    assert "pandas<2.0.0" in new.packages and "matplotlib<3.9.0" in new.packages
    if has_interpreter("3.6") and has_interpreter("3.9"):
        assert host_blockers(old) == host_blockers(new) == []  # with a C compiler, both build here


@requires("shared:swebench_verified.jsonl")
def test_every_verified_environment_is_buildable_or_listed_with_a_reason():
    rows = [json.loads(line) for line in DATASET.read_text().splitlines()]
    blocked = {(u.repo, u.version): u.reasons for u in unbuildable_environments()}
    for repo, version in sorted({(r["repo"], r["version"]) for r in rows}):
        spec = spec_from_swebench(repo, version)
        reasons = host_blockers(spec)
        assert blocked.get((repo, version), []) == reasons
        if not reasons and spec.python:
            find_interpreter(spec.python)  # an interpreter is there for every buildable one
    assert ("django/django", "3.0") not in blocked or not has_interpreter("3.6")


def test_tox_current_env_gets_scripts_that_exec_the_venv_python(tmp_path):
    notes: list[str] = []
    steps = tox_current_env_steps("tox --current-env -epy39 -v --", "3.9", notes)
    assert len(steps) == 1 and notes
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", steps[0]], cwd=tmp_path, env=env, check=True)
    for name in ("python", "python3", "python3.9"):
        script = (tmp_path / ".tox" / "py39" / "bin" / name).read_text()
        assert script == f'#!/bin/sh\nexec "{venv_bin / "python"}" "$@"\n'
    assert tox_current_env_steps("pytest -rA", "3.9", []) == []
    assert spec_from_swebench("sphinx-doc/sphinx", "3.5").eval_commands == steps


def test_environment_yml_names_become_pip_names():
    notes: list[str] = []
    assert conda_packages_as_pip("dask-core iris matplotlib-base hdf5 'fsspec!=2021.7.0'", notes) == [
        "dask", "scitools-iris", "matplotlib", "fsspec!=2021.7.0"]
    assert any("hdf5" in n for n in notes)


def test_stand_ins_are_the_newest_base_commit_of_each_version():
    tasks = [task_of(instance_id=f"o__r-{n}", repo="o/r", version=v, base_commit=c)
             for n, v, c in ((10, "1.0", "a"), (12, "1.0", "b"), (11, "1.0", "c"), (5, "2.0", "d"))]
    times = {"a": 100, "b": 50, "c": 300, "d": 1}
    by_date = stand_ins_from_tasks(tasks, lambda repo, commit: times[commit])
    assert by_date["o/r"]["1.0"] == {"commit": "c", "instance_id": "o__r-11", "rule": BY_DATE}
    by_number = stand_ins_from_tasks(tasks, lambda repo, commit: None)
    assert by_number["o/r"]["1.0"] == {"commit": "b", "instance_id": "o__r-12", "rule": BY_NUMBER}
    assert by_number["o/r"]["2.0"]["commit"] == "d"


def test_setup_commit_is_the_task_own_else_the_stand_in_else_base_commit(tmp_path):
    repo, sha = make_repo(tmp_path / "r", {"a.txt": "1\n"})
    own = setup_commit_for(task_of(base_commit=sha, environment_setup_commit=sha), repo)
    assert own.source == "environment_setup_commit" and own.commit == sha
    unknown = setup_commit_for(task_of(base_commit=sha, version="9"), repo)
    assert unknown.source == "base_commit" and unknown.commit == sha and "no stand-in" in unknown.detail
    missing = setup_commit_for(task_of(repo="pydata/xarray", version="0.12", base_commit=sha), repo)
    assert missing.source == "base_commit" and "not in the checkout" in missing.detail
    assert "environment_setup_commit missing" in missing.note
    # The stand-in is used when the checkout has its commit: a repository holding the table's commit.
    entry = stand_in_table()["pydata/xarray"]["0.12"]
    table = {"pydata/xarray": {"0.12": {**entry, "commit": sha}}}
    chosen = setup_commit_for(task_of(repo="pydata/xarray", version="0.12", base_commit="0" * 40), repo, table)
    assert chosen.source == "stand-in" and chosen.commit == sha and entry["instance_id"] in chosen.detail


def test_stand_ins_read_commit_dates_from_a_mirror(tmp_path):
    """What the mirror test checks on the real repositories, on a mirror built here: the stand-in of a
    version is its newest base commit by commit date, read from the bare clone."""
    repo, old = make_repo(tmp_path / "src", {"a.txt": "1\n"})
    (repo / "a.txt").write_text("2\n")
    git(repo, "commit", "-qam", "two")  # committed at the same fixed date
    dated = {**os.environ, "GIT_COMMITTER_DATE": "2026-06-01T00:00:00Z"}
    (repo / "a.txt").write_text("3\n")
    subprocess.run(["git", "commit", "-qam", "three"], cwd=repo, env=dated, check=True, capture_output=True)
    newest = git(repo, "rev-parse", "HEAD").strip()
    middle = git(repo, "rev-parse", "HEAD~1").strip()
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(tmp_path / "mirror" / "o__r.git"))
    # The newest commit by date has the lowest instance number: the date decides, not the number.
    tasks = [task_of(instance_id=f"o__r-{n}", repo="o/r", version="1.0", base_commit=c)
             for n, c in ((3, old), (9, middle), (1, newest))]
    table = stand_ins_from_tasks(tasks, mirror_commit_time(tmp_path / "mirror"))
    assert table["o/r"]["1.0"] == {"commit": newest, "instance_id": "o__r-1", "rule": BY_DATE}
    assert mirror_commit_time(tmp_path / "mirror")("other/repo", newest) is None  # no bare clone: no date


@pytest.mark.mirror
@requires("mirror", "shared:swebench_verified.jsonl",
          counterpart="test_environment_specs.py::test_stand_ins_read_commit_dates_from_a_mirror")
def test_shipped_stand_ins_match_the_dataset_and_the_mirror(mirror_dir):
    table = stand_ins_from_tasks(load_tasks(DATASET), mirror_commit_time(mirror_dir))
    # The shipped table was made with a mirror of every repository; a repository this mirror lacks falls
    # back to the highest instance number, so only the repositories it holds can be compared.
    held = sorted(r for r in table if (mirror_dir / f"{r.replace('/', '__')}.git").is_dir())
    assert held, f"{mirror_dir} holds none of the dataset's repositories"
    shipped = stand_in_table()
    assert {r: table[r] for r in held} == {r: shipped[r] for r in held}
    # xarray 0.12's oldest tasks predate ci/requirements/environment.yml; its stand-in has it.
    commit = table["pydata/xarray"]["0.12"]["commit"]
    bare = mirror_dir / "pydata__xarray.git"
    if bare.is_dir():
        out = subprocess.run(["git", "--git-dir", str(bare), "cat-file", "-e", f"{commit}:ci/requirements/environment.yml"],
                             check=False)
        assert out.returncode == 0


def test_packages_resolve_as_of_the_spec_date_or_half_a_year_after_the_setup_commit(tmp_path):
    repo, sha = make_repo(tmp_path / "r", {"a.txt": "1\n"})  # committed 2026-01-01 (conftest's fixed date)
    assert packages_date(None, repo, sha) is None
    assert packages_date("2024-08-13T00:00:00Z", repo, None) == "2024-08-13T00:00:00Z"
    assert packages_date("2024-08-13T00:00:00Z", repo, sha) == "2026-07-03T00:00:00Z"
    assert packages_date("2027-01-01T00:00:00Z", repo, sha) == "2027-01-01T00:00:00Z"
    assert EnvSpec().exclude_newer is None  # user specs resolve against today's index unless they say


def test_astropy_before_4_1_needs_its_helpers_submodule_and_later_versions_build():
    old = spec_from_swebench("astropy/astropy", "1.3")
    assert old.python == "3.6" and old.packages == ["setuptools==38.2.4"]
    assert any("astropy_helpers" in r for r in host_blockers(old))
    assert any("astropy_helpers" in r for r in host_blockers(spec_from_swebench("astropy/astropy", "3.1")))
    new = spec_from_swebench("astropy/astropy", "5.1")
    assert new.pre_install and "setuptools==68.0.0" in new.pre_install[0]
    assert new.install == ["python -m pip install -e .[test] --verbose"]
    if has_interpreter("3.9"):
        assert host_blockers(new) == []
