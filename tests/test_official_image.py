"""swebench's TestSpec of a task without the network: the requirement files its environment script holds are
read from the mirror at the commit swebench would download them at, and a missing file is one line naming it.
Every repository here is built in the test (a mirror entry under SWE-bench's repository name)."""

from __future__ import annotations

import dataclasses

import docker
import pytest
from conftest import git, make_repo
from prerequisites import requires

from takeover._util import harness_version
from takeover.environments.official_image import (
    env_script_list,
    instance_image_name,
    official_test_spec,
    requirements_commit,
    workspace_from_image,
)
from takeover.errors import EnvironmentUnavailable
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

TEST_PATCH = """diff --git a/tests/test_x.py b/tests/test_x.py
--- a/tests/test_x.py
+++ b/tests/test_x.py
@@ -1,2 +1,5 @@
 def test_old():
     pass
+
+def test_new():
+    pass
"""
FILES = {"src/x.py": "a = 1\n", "tests/test_x.py": "def test_old():\n    pass\n"}


def _task(repo: str, version: str, base_commit: str, **fields) -> SourceTask:
    return SourceTask.model_validate({
        "instance_id": f"{repo.replace('/', '__')}-90001", "repo": repo, "version": version, "base_commit": base_commit,
        "problem_statement": "x", "test_patch": TEST_PATCH, "FAIL_TO_PASS": ["tests/test_x.py::test_new"],
        "PASS_TO_PASS": ["tests/test_x.py::test_old"], **fields})


def _heredoc(commands: list[str], path: str) -> str:
    """The text an environment script writes to ``path`` with a here-document."""
    command = next(c for c in commands if c.startswith("cat <<") and f"> {path}" in c.splitlines()[0])
    return "\n".join(command.splitlines()[1:-1])


@pytest.fixture
def flask_mirror(tmp_path):
    """A mirror whose ``pallets__flask.git`` has two commits with different ``requirements/dev.txt``:
    ``(mirror, setup commit, base commit)``."""
    work = tmp_path / "flask"
    files = {**FILES, "requirements/dev.txt": "# dev\n-r tests.txt\n-e .\nsphinx==4.5.0\n",
             "requirements/tests.txt": "# tests\npytest==7.2.2\n"}
    _, setup = make_repo(work, files)
    (work / "requirements" / "tests.txt").write_text("pytest==7.3.0\n")
    git(work, "commit", "-qam", "newer pins")
    base = git(work, "rev-parse", "HEAD").strip()
    git(tmp_path, "clone", "-q", "--bare", str(work), str(tmp_path / "mirror" / "pallets__flask.git"))
    return tmp_path / "mirror", setup, base


@pytest.mark.skipif(not harness_version.keeps_repo_specs(), reason="swebench 5.x has no make_test_spec of a 4.1 row "
                    "(test_swebench_specs.py checks the scripts against 4.1's)")
@pytest.mark.parametrize(("repo", "version"), [("pytest-dev/pytest", "5.0"), ("psf/requests", "2.0")])
def test_spec_equals_swebench_make_test_spec_where_nothing_is_downloaded(repo, version, tmp_path):
    from swebench.harness.test_spec.test_spec import make_test_spec

    task = _task(repo, version, "a" * 40)
    ours = official_test_spec(task, RepoSource(tmp_path / "no-mirror", offline=True))
    theirs = make_test_spec(task.model_dump(mode="json", exclude_none=True), namespace="swebench")
    assert dataclasses.asdict(ours) == dataclasses.asdict(theirs)
    assert ours.env_image_key == theirs.env_image_key and ours.instance_image_key == theirs.instance_image_key
    assert instance_image_name(task.instance_id) == theirs.instance_image_key
    local = make_test_spec(task.model_dump(mode="json", exclude_none=True), namespace=None)
    assert instance_image_name(task.instance_id, namespace=None) == local.instance_image_key


def test_requirements_are_read_from_the_mirror_at_the_commit_swebench_downloads(flask_mirror):
    mirror, setup, base = flask_mirror
    source = RepoSource(mirror, offline=True)
    with_setup = _task("pallets/flask", "2.3", base, environment_setup_commit=setup)
    without = _task("pallets/flask", "2.3", base)
    assert requirements_commit(with_setup) == setup and requirements_commit(without) == base
    # swebench's get_requirements: the -r files first (their comments and `-e .` dropped), then the file itself
    assert _heredoc(env_script_list(with_setup, source), "$HOME/requirements.txt") == "pytest==7.2.2\n\nsphinx==4.5.0\n"
    commands = env_script_list(without, source)
    assert _heredoc(commands, "$HOME/requirements.txt") == "pytest==7.3.0\n\nsphinx==4.5.0\n"
    from takeover.environments.swebench_specs import repo_version_specs

    pins = " ".join(repo_version_specs("pallets/flask", "2.3")["pip_packages"])
    # the order of swebench's make_env_script_list_py
    assert [c.splitlines()[0] for c in commands] == [
        "source /opt/miniconda3/bin/activate", "conda create -n testbed python=3.11 -y",
        "cat <<'EOF_59812759871' > $HOME/requirements.txt",
        "conda activate testbed && python -m pip install -r $HOME/requirements.txt", "rm $HOME/requirements.txt",
        "conda activate testbed", f"python -m pip install {pins}"]
    spec = official_test_spec(without, source)
    assert spec.instance_image_key == "swebench/sweb.eval.x86_64.pallets_1776_flask-90001:latest"
    assert "git clone -o origin  --single-branch https://github.com/pallets/flask /testbed" in spec.install_repo_script
    assert "pytest -rA tests/test_x.py" in spec.eval_script


def test_environment_yml_is_read_from_the_mirror_and_named_testbed(tmp_path):
    yml = "name: xarray-tests\nchannels:\n  - conda-forge\ndependencies:\n  - numpy\n  - pip:\n    - pytest\n"
    _, sha = make_repo(tmp_path / "xarray", {**FILES, "ci/requirements/environment.yml": yml},
                       bare_mirror=tmp_path / "mirror" / "pydata__xarray.git")
    commands = env_script_list(_task("pydata/xarray", "0.12", sha), RepoSource(tmp_path / "mirror", offline=True))
    assert _heredoc(commands, "environment.yml") == yml.replace("name: xarray-tests", "name: testbed")
    assert "conda env update -f environment.yml" in commands  # the spec's no_use_env


def test_a_missing_requirements_file_or_repository_is_one_line_naming_it(flask_mirror, tmp_path):
    mirror, _, base = flask_mirror
    task = _task("pallets/flask", "2.3", base, environment_setup_commit="f" * 40)
    with pytest.raises(EnvironmentUnavailable) as err:
        env_script_list(task, RepoSource(mirror, offline=True))
    assert "\n" not in str(err.value) and "requirements.txt" in str(err.value) and "requirements/dev.txt" in str(err.value)
    assert "ffffffffffff" in str(err.value)

    _, sha = make_repo(tmp_path / "bare-flask", FILES, bare_mirror=tmp_path / "other" / "pallets__flask.git")
    with pytest.raises(EnvironmentUnavailable) as err:
        env_script_list(_task("pallets/flask", "2.3", sha), RepoSource(tmp_path / "other", offline=True))
    assert "\n" not in str(err.value) and "none of requirements/dev.txt exists" in str(err.value) and sha[:12] in str(err.value)

    with pytest.raises(EnvironmentUnavailable, match="no official SWE-bench image"):
        official_test_spec(_task("acme/calc", "1.0", sha), RepoSource(tmp_path / "other", offline=True))


def test_without_a_mirror_a_failed_download_is_one_line_naming_the_file(monkeypatch):
    # swebench downloads with requests, which honours the proxy variables: a closed local port fails at once.
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "")
    with pytest.raises(EnvironmentUnavailable) as err:
        official_test_spec(_task("pallets/flask", "2.3", "b" * 40), RepoSource())
    message = str(err.value)
    assert "\n" not in message and "requirements/dev.txt" in message and "bbbbbbbbbbbb" in message
    assert "from GitHub" in message and "--mirror" in message


@pytest.mark.slow
@pytest.mark.timeout(1800)
@requires("docker daemon", "debootstrap")
def test_the_workspace_is_the_images_own_repository(tiny_docker_task, tmp_path):
    from takeover._util.containers import container_labels

    task = tiny_docker_task.task
    ws = workspace_from_image(task.instance_id, task.base_commit, tmp_path / "ws", container_labels("agent run", tmp_path))
    assert ws.image.id == tiny_docker_task.stand_in.image_id and ws.image.name == tiny_docker_task.stand_in.image
    assert git(ws.path, "log", "-1", "--format=%s").strip() == "SWE-bench"  # the image's setup commit
    assert git(ws.path, "rev-parse", "HEAD^").strip() == task.base_commit and ws.head == git(ws.path, "rev-parse", "HEAD").strip()
    in_image = docker.from_env().containers.run(ws.image.id, ["git", "-C", "/testbed", "status", "--porcelain"], remove=True)
    assert git(ws.path, "status", "--porcelain") == in_image.decode()  # the install's untracked files, as in the image
    assert not (ws.path / ".git" / "objects" / "info" / "alternates").exists()
    assert (ws.path / "src" / "tinyadd" / "__init__.py").read_text() == "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
    with pytest.raises(FileExistsError):
        workspace_from_image(task.instance_id, task.base_commit, ws.path, {})
    with pytest.raises(EnvironmentUnavailable) as err:
        workspace_from_image(task.instance_id, "0" * 40, tmp_path / "other", {})
    assert "not base_commit 000000000000" in str(err.value) and "\n" not in str(err.value)
    assert [c for c in docker.from_env().containers.list(all=True, ignore_removed=True) if c.labels.get("org.takeover.out-dir") == str(tmp_path)] == []
