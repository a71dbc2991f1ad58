"""The shared helpers every stage relies on: atomic writes, patches, redaction, the scripted server."""

from __future__ import annotations

import json
import os
import stat
import urllib.request

import pytest

from takeover._util import io as _io
from takeover._util import patches, redact
from takeover.sources.tasks import SourceTask
from takeover.testing.scripted_server import ScriptedServer

PATCH = """diff --git a/pkg/mod.py b/pkg/mod.py
index 1111111..2222222 100644
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,2 +1,2 @@
 a = 1
-b = 2
+b = 3
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hello
"""


def test_patch_files_and_split():
    assert patches.patch_files(PATCH) == ["pkg/mod.py", "new.txt"]
    pieces = patches.split_patch(PATCH)
    assert list(pieces) == ["pkg/mod.py", "new.txt"]
    assert pieces["new.txt"].startswith("diff --git a/new.txt b/new.txt")
    assert patches.count_changed_lines(PATCH) == 3


def test_normalized_patch_ignores_index_lines():
    other = PATCH.replace("index 1111111..2222222", "index aaaaaaa..bbbbbbb")
    assert patches.first_difference(PATCH, other) is None
    changed = PATCH.replace("+b = 3", "+b = 4")
    assert patches.first_difference(PATCH, changed) == "pkg/mod.py"


def test_atomic_json_roundtrip(tmp_path):
    path = _io.atomic_write_json(tmp_path / "a" / "b.json", {"x": 1})
    assert json.loads(path.read_text()) == {"x": 1}
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_redact_masks_env_secrets_and_key_shapes(monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "supersecretvalue123")
    text = "key=supersecretvalue123 and sk-abcdefghijklmnopqrstuv"
    assert redact.redact(text) == "key=[REDACTED] and [REDACTED]"
    assert redact.redact_obj({"api_key": "abc12345", "prompt_tokens": 5, "api_key_env": "MY_API_KEY"}) == {
        "api_key": "[REDACTED]",
        "prompt_tokens": 5,
        "api_key_env": "MY_API_KEY",
    }


def test_source_task_accepts_both_test_encodings():
    base = {"instance_id": "a__b-1", "repo": "a/b", "base_commit": "0" * 40, "problem_statement": "x", "version": 1.1}
    t1 = SourceTask(**base, FAIL_TO_PASS=["t1"], PASS_TO_PASS='["t2", "t3"]')
    assert t1.FAIL_TO_PASS == ["t1"] and t1.PASS_TO_PASS == ["t2", "t3"]
    assert t1.version == "1.1" and t1.repo_slug == "a__b"


def test_scripted_server_replays_and_counts_words():
    with ScriptedServer([{"content": "one two three"}, {"status": 429, "error": "slow down"}]) as srv:
        req = {"model": "m", "messages": [{"role": "user", "content": "hello there world"}]}
        out = _post(srv.base_url, req)
        assert out["choices"][0]["message"]["content"] == "one two three"
        assert out["usage"] == {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}
        try:
            _post(srv.base_url, req)
        except urllib.error.HTTPError as exc:
            assert exc.code == 429
        else:
            raise AssertionError("expected HTTP 429")
        assert len(srv.requests) == 2


def _post(base_url: str, body: dict) -> dict:
    req = urllib.request.Request(
        base_url + "/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_results_get_the_mode_of_any_new_file(tmp_path, umask, mode):
    previous = os.umask(umask)
    _io._file_mode.cache_clear()
    try:
        written = [_io.atomic_write_text(tmp_path / "report.md", "x"),
                   _io.atomic_write_chunks(tmp_path / "results.csv", ["a,b\n"])]
    finally:
        os.umask(previous)
        _io._file_mode.cache_clear()
    assert [stat.S_IMODE(p.stat().st_mode) for p in written] == [mode, mode]
