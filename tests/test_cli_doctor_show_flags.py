"""``takeover doctor --base-url/--api-key-env`` against a stand-in endpoint that wants a key, and
``takeover show --format`` (the reader named instead of detected) and ``--out-dir`` (the page's folder; the
old ``--out FILE`` still works with a warning)."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_checkpoints import SUBMIT
from test_cli_points_flags import write_run
from typer.testing import CliRunner

from takeover.cli import app
from takeover.report.page import decode_section


class _KeyedModels(BaseHTTPRequestHandler):
    """GET /v1/models: 200 with one model for ``Authorization: Bearer sk-test``, else 401."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        ok = self.headers.get("Authorization") == "Bearer sk-test"
        body = json.dumps({"data": [{"id": "keyed-model"}]} if ok else {"error": {"message": "no key"}}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def keyed_endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeyedModels)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def endpoint_row(*args: str, env: dict[str, str]) -> dict:
    result = CliRunner().invoke(app, ["doctor", "--json", *args], env=env)
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return next(r for r in rows if r["name"] == "model endpoint")


def test_doctor_checks_the_endpoint_with_the_key_from_the_named_variable(keyed_endpoint):
    keyed = endpoint_row("--base-url", keyed_endpoint, "--api-key-env", "DOCTOR_TEST_KEY",
                         env={"DOCTOR_TEST_KEY": "sk-test"})
    assert keyed["status"] == "ok" and keyed["detail"] == f"{keyed_endpoint} serves keyed-model"
    no_key = endpoint_row("--base-url", keyed_endpoint, env={})
    assert no_key["status"] == "fail" and no_key["detail"] == f"{keyed_endpoint}/models answered HTTP 401"
    assert "(none given)" in no_key["fix"]
    assert endpoint_row(env={})["detail"].startswith("none configured")  # without --base-url nothing is asked


def test_show_format_names_the_reader(tmp_path):
    run = write_run(tmp_path / "run.data", "acme__calc-1", [("ls", "calc.py", 0)], "")
    result = CliRunner().invoke(app, ["show", str(run), "--format", "mini-swe-agent", "--out-dir", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    page = tmp_path / "a" / "run.data.html"
    assert result.stdout.strip() == str(page) and result.stderr == ""
    blob = re.search(r'id="data-r0">([^<]+)<', page.read_text()).group(1)
    section = decode_section(blob)
    assert section["role"] == "agent" and len(section["runs"][0]["steps"]) == 2  # ls, then the submission
    assert "calc.py" in json.dumps(section) and SUBMIT.split()[0] in json.dumps(section)
    wrong = CliRunner().invoke(app, ["show", str(run), "--format", "swe-agent", "--out-dir", str(tmp_path / "b")])
    assert wrong.exit_code == 2 and not (tmp_path / "b" / "run.data.html").exists()
    unknown = CliRunner().invoke(app, ["show", str(run), "--format", "swe_agent", "--out-dir", str(tmp_path / "c")])
    assert unknown.exit_code == 2 and unknown.stderr.count("\n") == 1  # one "error: ..." line
    assert "error: " in unknown.stderr and "unknown trajectory format 'swe_agent': use " in unknown.stderr
    assert all(name in unknown.stderr.split() for name in ("atif", "claude-code", "codex-cli"))


@pytest.mark.parametrize(("name", "page"), [
    ("m__m-1867.demo-default.traj", "m__m-1867.demo-default"),
    ("m__m-1867.demo-xml_window100.traj", "m__m-1867.demo-xml_window100"),
    ("psf__requests-1766.traj.json", "psf__requests-1766"),
    ("openagentsafety.v1_with_file_editor.output.jsonl", "openagentsafety.v1_with_file_editor.output"),
    ("session", "session"),
])
def test_show_names_its_page_after_the_file_without_its_extensions(tmp_path, name, page):
    from takeover.cli.show import page_name

    (tmp_path / name).write_text("{}")
    assert page_name(tmp_path / name) == page


def test_show_writes_its_page_into_the_current_folder_without_out_dir(tmp_path, monkeypatch):
    run = write_run(tmp_path / "psf__requests-1.traj.json", "acme__calc-1", [("ls", "calc.py", 0)], "")
    monkeypatch.chdir(tmp_path)
    here = CliRunner().invoke(app, ["show", str(run)])  # no flag: the current folder
    assert here.exit_code == 0 and here.stdout.strip() == "psf__requests-1.html"
    assert (tmp_path / "psf__requests-1.html").is_file()
