"""Grading with and without the network, on a tiny repository named like psf/requests (its tests need
the internet). No test here uses the network: the tests under grading only count the network interfaces
they see (only ``lo`` inside the offline sandbox)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_repo
from prerequisites import requires

from takeover.grading import NETWORK_REPOS, grade, network_warning
from takeover.grading.local.local_backend import PAST_HTTPBIN_WARNING
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource

NET = "import socket\n\n\ndef has_network():\n    return len(socket.if_nameindex()) > 1\n"
TESTS = "def test_true():\n    assert True\n"
TEST_PATCH = """diff --git a/tests/test_net.py b/tests/test_net.py
--- a/tests/test_net.py
+++ b/tests/test_net.py
@@ -1,2 +1,7 @@
 def test_true():
     assert True
+
+
+def test_network():
+    from net import has_network
+    assert has_network()
"""
SPEC = {"python": None, "test_cmd": "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 pytest -rA -p no:cacheprovider", "log_parser": "pytest"}


@pytest.fixture
def requests_task(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    mirror = tmp_path / "mirror"
    _, sha = make_repo(tmp_path / "src" / "requests", {"net.py": NET, "tests/test_net.py": TESTS, "conftest.py": ""},
                       bare_mirror=mirror / "psf__requests.git")
    task = {
        "instance_id": "psf__requests-1", "repo": "psf/requests", "base_commit": sha, "problem_statement": "net",
        "version": "0.1", "patch": "", "test_patch": TEST_PATCH,
        "FAIL_TO_PASS": ["tests/test_net.py::test_network"], "PASS_TO_PASS": ["tests/test_net.py::test_true"],
        "takeover_env_spec": SPEC,
    }
    return task, RepoSource(mirror, offline=True)


def test_network_warning_only_for_known_repositories_without_network():
    assert "psf/requests" in NETWORK_REPOS
    w = network_warning("psf/requests", False)
    assert w is not None and "httpbin.org" in w and "--network" in w
    assert network_warning("psf/requests", True) is None
    assert network_warning("pallets/flask", False) is None


@requires("bubblewrap")  # without it the tests would see the host network either way
def test_network_flag_reaches_the_sandboxed_tests_and_the_result(requests_task, tmp_path):
    task, source = requests_task
    offline = grade(task, "", grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "off")
    assert offline.error is None and offline.network is False
    assert offline.FAIL_TO_PASS.failure == ["tests/test_net.py::test_network"]  # only lo inside the sandbox
    assert not offline.resolved
    assert len(offline.warnings) == 1 and "psf/requests" in offline.warnings[0]
    assert offline.summary()["warnings"] == offline.warnings
    assert "network for the tests: off" in (Path(offline.log_path).parent / "run_instance.log").read_text()

    online = grade(task, "", grading=GradingSettings(timeout=120, network=True), repo_source=source, log_dir=tmp_path / "on")
    assert online.error is None and online.network is True and online.warnings == []
    assert online.FAIL_TO_PASS.success == ["tests/test_net.py::test_network"]  # the host's interfaces are seen
    assert online.resolved


def test_saved_result_is_not_reused_when_the_network_setting_differs(requests_task, tmp_path):
    task, source = requests_task
    logs = tmp_path / "logs"
    first = grade(task, "", grading=GradingSettings(timeout=120), repo_source=source, log_dir=logs, force=False)
    assert first.network is False and first.warnings
    again = grade(task, "", grading=GradingSettings(timeout=120, network=True), repo_source=source, log_dir=logs, force=False)
    assert again.network is True and again.warnings == []


def test_experiment_grading_stages_pass_the_network_setting(requests_task, tmp_path):
    import json

    from takeover.experiments.stages import grade_unit, handoff_state_unit
    from takeover.experiments.units import UnitContext

    assert GradingSettings().network is False and GradingSettings(network=True).network is True
    task, _ = requests_task
    task_file = tmp_path / "task.json"
    task_file.write_text(json.dumps(task))
    cp = tmp_path / "cp"
    cp.mkdir()
    (cp / "checkpoint.patch").write_text("")
    ctx_data = {"out_dir": str(tmp_path / "out"), "key": "k",
                "repo_source": RepoSource(tmp_path / "mirror", offline=True)}
    common = {"instance_id": task["instance_id"], "task": str(task_file), "task_sha256": "t"}
    for network in (False, True):
        grading = {"backend": "local", "timeout": 120, **({"network": True} if network else {})}
        handoff_state = {**common, "checkpoint_key": "c", "checkpoint_dir": str(cp), "patch_sha256": "p",
                         "grading": grading}
        takeover = {**common, "takeover_key": "t", "patch_sha256": "p", "patch_path": None,
                    "checkpoint_dir": str(cp), "grading": grading}
        for fn, stage, inputs in ((handoff_state_unit, "handoff_state", handoff_state), (grade_unit, "grade", takeover)):
            work = tmp_path / "out" / "work" / stage / f"k{network}"
            work.mkdir(parents=True)
            out = fn(inputs, UnitContext(work_dir=str(work), stage=stage, **ctx_data)).output
            assert out["network"] is network
            warnings = out.get("warnings", [])  # an empty list, its default, is left out of the record
            assert bool(warnings) is (not network)
            assert "psf/requests" in "".join(warnings) or network


def test_cli_default_log_dir_is_under_the_current_folder_and_warning_is_printed(requests_task, tmp_path,
                                                                                 monkeypatch):
    import json

    import typer
    from typer.testing import CliRunner

    from takeover.cli import grade as grade_cli

    app = typer.Typer()
    app.callback()(lambda: None)
    grade_cli.register(app)
    task, _ = requests_task
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    bad = tmp_path / "bad.diff"  # does not apply: fast, and no test runs
    bad.write_text("diff --git a/net.py b/net.py\n--- a/net.py\n+++ b/net.py\n@@ -1,1 +1,1 @@\n-nothing here\n+x\n")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    res = CliRunner().invoke(app, ["grade", "--dataset", str(dataset), "--instance-id", "psf__requests-1", "--patch",
                                   str(bad), "--mirror", str(tmp_path / "mirror"), "--offline"])
    assert res.exit_code == 0, res.output
    text = res.output + (getattr(res, "stderr", "") or "")
    assert "warning: psf__requests-1: psf/requests: its tests call httpbin.org" in text
    log = here / "takeover-grades" / "patch" / "psf__requests-1" / "test_output.txt"
    assert log.read_text().startswith("no tests were run: candidate patch does not apply")
    assert not (tmp_path / "cache" / "grading").exists()  # nothing in the shared cache folder


PAST_HTTPBIN_PATCH = "diff --git a/conftest.py b/conftest.py\n--- a/conftest.py\n+++ b/conftest.py\n@@ -0,0 +1,9 @@\n+import urllib.request\n+\n+import pytest\n+\n+\n+@pytest.fixture(autouse=True)\n+def _internet(request):\n+    if request.node.name == 'test_true':  # a test that calls a host itself\n+        urllib.request.urlopen('https://example.invalid/', timeout=5)\n"


# A suite like psf/requests before 2.9: its tests read HTTPBIN_URL and fall back to httpbin.org.
HTTPBIN_TESTS = "def test_true():\n    assert True\n"
HTTPBIN_TEST_PATCH = """diff --git a/tests/test_http.py b/tests/test_http.py
--- a/tests/test_http.py
+++ b/tests/test_http.py
@@ -1,2 +1,15 @@
 def test_true():
     assert True
+
+
+def test_get_with_params():
+    import json
+    import os
+    import urllib.request
+
+    base = os.environ.get('HTTPBIN_URL', 'http://httpbin.org/')
+    with urllib.request.urlopen(base + 'get?token=42', timeout=10) as reply:
+        assert json.load(reply)['args'] == {'token': '42'}
+    with urllib.request.urlopen(base + 'status/200', timeout=10) as reply:
+        assert reply.status == 200
+    assert base.startswith('http://127.0.0.1:')
"""


@requires("uv", "httpbin packages")
def test_a_suite_reading_httpbin_url_is_served_a_local_httpbin_without_network(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_OFFLINE", "1")  # httpbin comes from uv's cache, never from the index
    mirror = tmp_path / "mirror"
    _, sha = make_repo(tmp_path / "src" / "requests",
                       {"tests/test_http.py": HTTPBIN_TESTS, "conftest.py": "",
                        "README": "tests read HTTPBIN_URL, else httpbin.org\n"},
                       bare_mirror=mirror / "psf__requests.git")
    task = {
        "instance_id": "psf__requests-2", "repo": "psf/requests", "base_commit": sha, "problem_statement": "http",
        "version": "0.1", "patch": "", "test_patch": HTTPBIN_TEST_PATCH,
        "FAIL_TO_PASS": ["tests/test_http.py::test_get_with_params"], "PASS_TO_PASS": ["tests/test_http.py::test_true"],
        "takeover_env_spec": SPEC,
    }
    result = grade(task, "", grading=GradingSettings(timeout=120), repo_source=RepoSource(mirror, offline=True), log_dir=tmp_path / "logs")
    assert result.error is None and result.network is False
    assert result.FAIL_TO_PASS.success == ["tests/test_http.py::test_get_with_params"]
    assert result.resolved and result.warnings == []
    assert any("local httpbin" in note for note in result.notes)
    assert "export HTTPBIN_URL=" in (tmp_path / "logs" / "takeover" / "psf__requests-2" / "eval.sh").read_text()
    # A test that calls an internet host itself still fails offline: the warning says it may be one of those.
    past = grade(task, PAST_HTTPBIN_PATCH, grading=GradingSettings(timeout=120), repo_source=RepoSource(mirror, offline=True), log_dir=tmp_path / "logs2")
    assert past.PASS_TO_PASS.failure == ["tests/test_http.py::test_true"] and not past.resolved
    assert past.warnings == [PAST_HTTPBIN_WARNING.format(repo="psf/requests")]
