"""The grading backend is a type registered by name (takeover.grading.backends): every caller takes the names
from the one mapping, an unknown name is one error listing the known ones, each backend says how its tests
see the network, what of its environment enters the grading key and whether it writes SWE-bench's report, and
declares its own options. Grading keys compare field by field as before, so a result folder written before
the seam is still reused; their digest is that of their stable form."""

from __future__ import annotations

import hashlib
import json

import pytest

from takeover._util import harness_version
from takeover._util.io import sha256_text
from takeover.cli.options import BACKEND_HELP
from takeover.errors import InputError
from takeover.grading import (
    BACKENDS,
    GradeResult,
    GradingBackend,
    checked_grading,
    grade,
    grading_backend,
    grading_key,
)
from takeover.grading.local import LocalGradingOptions
from takeover.grading_settings import GradingSettings
from takeover.quickstart.options import QuickstartOptions
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

SPEC = {"python": None, "test_cmd": "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 pytest -rA -p no:cacheprovider",
        "log_parser": "pytest"}
GOLD = ("diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
        "-    return a - b\n+    return a + b\n")
LOCAL_TASK = {"instance_id": "acme__calc-3", "repo": "acme/calc", "base_commit": "c" * 40,
              "problem_statement": "add subtracts", "version": "0.1", "patch": GOLD, "test_patch": "diff",
              "FAIL_TO_PASS": ["tests/test_calc.py::test_add"], "PASS_TO_PASS": ["tests/test_calc.py::test_add_zero"],
              "takeover_env_spec": SPEC}
DOCKER_TASK = {"instance_id": "pytest-dev__pytest-9999", "repo": "pytest-dev/pytest", "version": "5.0",
               "base_commit": "a" * 40, "environment_setup_commit": "b" * 40, "problem_statement": "x",
               "test_patch": "diff", "FAIL_TO_PASS": ["t::a"], "PASS_TO_PASS": ["t::b"]}
# The keys as the code before the backend seam computed them for these tasks (versions apart).
PATCH_SHA256 = "137153ea5f7b518418acdac9bef12ae4ca3213cf5668580a1c0e980b42c1c95c"
LOCAL_KEY = {"patch_sha256": PATCH_SHA256,
             "task_sha256": "3ea3cb92bf86315690726ee96fcc40bb6b642ca64239838779a8e5996be57083",
             "env_spec_sha256": "8b6b52c541a0fc66107c4ecf8392a24bd052b0de39dfcb938fb883ed23cf21ce",
             "test_locale": "C.UTF-8", "backend": "local", "network": False, "timeout": 120.0}
DOCKER_KEY = {"patch_sha256": PATCH_SHA256,
              "task_sha256": "f4a47c80fdd567aa6605912c188bb748b23788c05797a7ac471f973b400e07b5",
              "test_locale": None, "backend": "docker", "network": True, "timeout": 1800.0}


def _swebench_spec_sha256(task: dict) -> str:
    """The docker key's specification digest, spelled as before the seam (it follows swebench's table)."""
    from takeover.environments.swebench_specs import repo_version_specs

    spec = repo_version_specs(task["repo"], task["version"])
    return hashlib.sha256(json.dumps(spec, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def test_every_backend_is_registered_under_its_own_name_and_is_a_grading_backend():
    assert list(BACKENDS) == ["local", "docker"] and BACKENDS.default == GradingSettings().backend == "local"
    for name, backend in BACKENDS.items():
        assert backend.name == name and isinstance(backend, GradingBackend) and grading_backend(name) is backend
    local, docker = BACKENDS["local"], BACKENDS["docker"]
    assert (local.tests_network(False), local.tests_network(True)) == (False, True)
    assert (docker.tests_network(False), docker.tests_network(True)) == (True, True)  # the harness's containers
    assert (local.writes_report, docker.writes_report) == (False, True)
    assert (local.uses_sandbox, docker.uses_sandbox) == (True, False)


def test_callers_take_the_names_from_the_mapping_and_refuse_others_naming_the_known_ones():
    for backend in BACKENDS.values():
        assert f"{backend.name} ({backend.description})" in BACKEND_HELP
    with pytest.raises(InputError) as exc:
        grading_backend("modal")
    assert (exc.value.path, exc.value.reason) == ("--backend", "unknown backend 'modal': use local or docker")
    with pytest.raises(InputError, match="unknown backend 'modal': use local or docker"):
        grade(SourceTask.model_validate(LOCAL_TASK), GOLD, grading=GradingSettings(backend="modal"))
    assert checked_grading(GradingSettings(backend="docker")).backend == "docker"
    with pytest.raises(InputError) as exc:  # the record names a backend; the registry checks the name
        checked_grading(GradingSettings(backend="modal", timeout=1.0))
    assert (exc.value.field, exc.value.reason) == ("backend", "unknown backend 'modal': use local or docker")
    with pytest.raises(InputError, match="^--backend: unknown backend 'modal': use local or docker$"):
        QuickstartOptions(grading=GradingSettings(backend="modal"))


def test_each_backend_declares_its_own_options_and_refuses_the_others():
    assert BACKENDS["local"].Options is LocalGradingOptions
    assert set(LocalGradingOptions.model_fields) == {"spec_file", "keep_workspace"}
    assert set(BACKENDS["docker"].Options.model_fields) == set()
    local = checked_grading(GradingSettings(options={"keep_workspace": "true", "spec_file": None}))
    assert local.options == {"keep_workspace": True}  # in the options' own form, defaults left out
    with pytest.raises(InputError) as exc:  # docker has no spec file: refused, not ignored
        checked_grading(GradingSettings(backend="docker", options={"spec_file": "envs.toml"}))
    assert (exc.value.field, exc.value.reason) == ("options.spec_file", "unknown option (its options: none)")


def test_grading_keys_are_those_of_the_code_before_the_backend_seam():
    local = grading_key(SourceTask.model_validate(LOCAL_TASK), GOLD, GradingSettings(timeout=120))
    assert local.model_dump(exclude={"takeover", "swebench", "grading_rules", "image_id"}) == LOCAL_KEY
    assert local.grading_rules == harness_version.installed_rules()  # the rules decide too
    docker = grading_key(SourceTask.model_validate(DOCKER_TASK), GOLD, GradingSettings(backend="docker"))
    assert docker.model_dump(exclude={"takeover", "swebench", "grading_rules", "image_id"}) == {
        **DOCKER_KEY, "env_spec_sha256": _swebench_spec_sha256(DOCKER_TASK)}
    # The digest (the docker run id, the hash seed) is that of the key's stable form: the fields at their
    # default (an image unknown, the rules of 4.1) are left out, so a field added later keeps the digests.
    stable = json.loads(json.dumps(docker.model_dump(mode="json", exclude_defaults=True)))
    assert "image_id" not in stable and list(stable)[:2] == ["patch_sha256", "task_sha256"]
    assert docker.digest == sha256_text(json.dumps(stable, separators=(",", ":")))


@pytest.mark.parametrize(("task", "key", "timeout"), [(LOCAL_TASK, LOCAL_KEY, 120), (DOCKER_TASK, DOCKER_KEY, 1800)])
def test_a_result_folder_written_before_the_backend_seam_is_reused(tmp_path, task, key, timeout):
    # result.json as grading wrote it before the seam, by this installation (same takeover and swebench).
    current = grading_key(SourceTask.model_validate(task), GOLD, GradingSettings(backend=key["backend"], network=key["network"], timeout=timeout))
    spec = {"env_spec_sha256": _swebench_spec_sha256(task)} if key["backend"] == "docker" else {}
    stored_key = {**key, **spec, "takeover": current.takeover, "swebench": current.swebench}
    if current.grading_rules != "swebench-4.1":
        # A key without grading_rules was decided under swebench 4.1's rules; a 5.x installation that wrote
        # this folder recorded its own rules with it.
        stored_key["grading_rules"] = current.grading_rules
    stored = {"instance_id": task["instance_id"], "model_name_or_path": "takeover", "resolved": True,
              "handoff_state": "resolved_preserve", "backend": key["backend"], "applied": True,
              "network": key["network"], "graded_at": "2026-01-01T00:00:00+00:00", "grading_key": stored_key,
              "FAIL_TO_PASS": {"success": task["FAIL_TO_PASS"], "failure": []},
              "PASS_TO_PASS": {"success": task["PASS_TO_PASS"], "failure": []}}
    folder = tmp_path / "logs" / "takeover" / task["instance_id"]
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps(stored))
    # No repository and no Docker daemon are needed: nothing is graded again.
    result = grade(task, GOLD, grading=GradingSettings(backend=key["backend"], timeout=timeout), repo_source=RepoSource(tmp_path / "nowhere", offline=True), log_dir=tmp_path / "logs")
    assert result.reused and result.resolved and result.graded_at == "2026-01-01T00:00:00+00:00"
    assert GradeResult.model_validate(stored).grading_key == result.grading_key == current
