"""Codex CLI rollouts: synthetic sessions written here in the native layouts (envelope and legacy), read
into the event model; apply_patch sections replayed on a small git repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_repo

from takeover.errors import InputError
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.replay import replay_trajectory
from takeover.trajectories import detect_format, read_trajectories, summarize
from takeover.trajectories.codex_patch import heredoc, sections

SESSION = "0199a3c4-5e6f-7a80-91b2-c3d4e5f60718"
ROOT = "/home/dev/calc"
COMMIT = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
PATCH = """*** Begin Patch
*** Add File: NOTES.md
+# Notes
+
+sub() fixed
*** Update File: calc.py
@@ def sub(a, b):
-    return a + b
+    return a - b
*** Delete File: old.txt
*** End Patch
"""


class Rollout:
    """Builds an envelope rollout: ``{timestamp, type, payload}`` lines, token counts with running totals."""

    def __init__(self) -> None:
        self.lines: list[dict] = []
        self.total = [0, 0, 0, 0, 0]

    def add(self, kind: str, payload: dict) -> dict:
        line = {"timestamp": f"2025-10-20T08:{len(self.lines):02d}:00.000Z", "type": kind, "payload": payload}
        self.lines.append(line)
        return line

    def item(self, payload: dict) -> dict:
        return self.add("response_item", payload)

    def event(self, payload: dict) -> dict:
        return self.add("event_msg", payload)

    def call(self, call_id: str, name: str, **arguments) -> dict:
        return self.item(
            {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id}
        )

    def output(self, call_id: str, output, kind: str = "function_call_output") -> dict:
        return self.item({"type": kind, "call_id": call_id, "output": output})

    def count(self, fresh: int, cached: int, output: int, reasoning: int, *, with_last: bool = True) -> dict:
        last = [fresh, cached, output, reasoning, fresh + output]
        self.total = [t + x for t, x in zip(self.total, last, strict=True)]
        names = (
            "input_tokens",
            "cached_input_tokens",
            "output_tokens",
            "reasoning_output_tokens",
            "total_tokens",
        )
        info = {
            "total_token_usage": dict(zip(names, self.total, strict=True)),
            "model_context_window": 272000,
        }
        if with_last:
            info["last_token_usage"] = dict(zip(names, last, strict=True))
        return self.event(
            {"type": "token_count", "info": info, "rate_limits": {"primary": {"used_percent": 3.0}}}
        )

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def user_item(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def rollout_file(tmp_path: Path) -> Path:
    r = Rollout()
    r.add(
        "session_meta",
        {
            "id": SESSION,
            "timestamp": "2025-10-20T08:00:00.000Z",
            "cwd": ROOT,
            "originator": "codex_cli_rs",
            "cli_version": "0.46.0",
            "instructions": None,
            "source": "cli",
            "model_provider": "openai",
            "git": {
                "commit_hash": COMMIT,
                "branch": "main",
                "repository_url": "https://example.org/calc.git",
            },
        },
    )
    r.item(user_item("<user_instructions>\nRun tests with pytest.\n</user_instructions>"))
    r.item(user_item(f"<environment_context>\n  <cwd>{ROOT}</cwd>\n</environment_context>"))
    r.add(
        "turn_context",
        {
            "cwd": ROOT,
            "approval_policy": "on-request",
            "model": "gpt-5-codex",
            "summary": "auto",
            "sandbox_policy": {"mode": "workspace-write"},
        },
    )
    r.item(user_item("Fix sub() in calc.py."))
    r.event({"type": "user_message", "message": "Fix sub() in calc.py.", "images": None})
    r.event({"type": "token_count", "info": None, "rate_limits": None})
    # Call 0: reasoning + shell; the count comes before the tool output.
    r.item(
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "**Running tests**"}],
            "content": None,
            "encrypted_content": "gAAAA",
        }
    )
    r.call("call_1", "shell", command=["bash", "-lc", "python -m pytest -q"], workdir=ROOT, timeout_ms=120000)
    r.count(5000, 0, 300, 256)
    r.output(
        "call_1",
        json.dumps(
            {"output": "F..\n1 failed, 2 passed\n", "metadata": {"exit_code": 1, "duration_seconds": 0.4}}
        ),
    )
    r.event({"type": "agent_reasoning", "text": "**Running tests**"})
    # Call 1: the freeform apply_patch tool, one edit per file section.
    r.item(
        {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": "call_2",
            "name": "apply_patch",
            "input": PATCH,
        }
    )
    r.count(5600, 4992, 420, 128)
    r.event(dict(r.lines[-1]["payload"]))  # the same count again: a repeat, not a call
    r.output(
        "call_2",
        "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\n"
        "A NOTES.md\nM calc.py\nD old.txt\n",
        kind="custom_tool_call_output",
    )
    # Call 2: a heredoc patch in another folder that fails; its output comes before its count, which has
    # only the running total.
    r.call(
        "call_3",
        "exec_command",
        workdir=ROOT,
        cmd="cd pkg && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: util.py\n+x = 2\n*** End Patch\nEOF",
    )
    r.output("call_3", "Exit code: 1\nWall time: 0.1 seconds\nOutput:\napply_patch verification failed\n")
    r.count(6100, 5504, 150, 64, with_last=False)
    r.event(
        {
            "type": "token_count",
            "info": {  # Codex filling the context window: no call
                "total_token_usage": {
                    "input_tokens": 0,
                    "cached_input_tokens": 0,
                    "output_tokens": 0,
                    "total_tokens": 272000,
                },
                "last_token_usage": {
                    "input_tokens": 0,
                    "cached_input_tokens": 0,
                    "output_tokens": 0,
                    "total_tokens": 250000,
                },
            },
        }
    )
    # Call 3: two unified-exec commands in parallel, one still running.
    r.call("call_4", "exec_command", cmd="python -m pytest -q", yield_time_ms=10000)
    r.call("call_5", "exec_command", cmd="python -m http.server", workdir="site")
    r.count(6400, 6016, 210, 0)
    r.output(
        "call_4",
        "Chunk ID: 3f2a\nWall time: 1.2031 seconds\nProcess exited with code 0\n"
        "Original token count: 12\nOutput:\n...\n3 passed in 0.01s\n",
    )
    r.output(
        "call_5",
        "Chunk ID: 9c1d\nWall time: 10.0012 seconds\nProcess running with session ID 4\n"
        "Output:\nServing HTTP on 0.0.0.0 port 8000\n",
    )
    # Call 4: input to the running process.
    r.call("call_6", "write_stdin", session_id=4, chars="\u0003")
    r.count(6700, 6272, 40, 0)
    r.output("call_6", "Chunk ID: 77aa\nWall time: 0.2500 seconds\nProcess exited with code 130\nOutput:\n")
    # A new turn from the user.
    r.add("turn_context", {"cwd": ROOT, "approval_policy": "on-request", "model": "gpt-5-codex"})
    r.item(user_item("Also keep the server off."))
    r.event({"type": "user_message", "message": "Also keep the server off.", "kind": "plain"})
    r.item(
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Wrapping up**"}], "content": []}
    )
    r.item(
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done: tests pass."}],
        }
    )
    r.event({"type": "agent_message", "message": "Done: tests pass."})
    r.count(7000, 6656, 90, 32)
    # Compaction: a call whose output is not an item.
    r.add("compacted", {"message": "Summary of the session so far."})
    r.count(7100, 0, 800, 0)
    return r.write(tmp_path / f"rollout-2025-10-20T08-00-00-{SESSION}.jsonl")


def test_rollout_events_calls_and_tokens(tmp_path):
    path = rollout_file(tmp_path)
    assert detect_format(path) == "codex-cli"
    (t,) = read_trajectories(path)
    assert (t.format, t.format_version, t.working_dir, t.model) == (
        "codex-cli",
        "0.46.0",
        ROOT,
        "gpt-5-codex",
    )
    assert t.task_prompt == "Fix sub() in calc.py."
    assert t.metadata == {
        "session_id": SESSION,
        "layout": "envelope",
        "git_commit": COMMIT,
        "git_branch": "main",
        "repository_url": "https://example.org/calc.git",
        "originator": "codex_cli_rs",
        "compactions": 1,
    }
    assert [(e.kind, e.type, e.edit, e.path, e.cause, e.llm_call, e.exit_code) for e in t.events] == [
        ("action", "command", None, None, None, 0, None),
        ("observation", "command", None, None, 0, None, 1),
        ("action", "file_edit", "create", "NOTES.md", None, 1, None),
        ("action", "file_edit", "apply_patch", "calc.py", None, 1, None),
        ("action", "file_edit", "delete", "old.txt", None, 1, None),
        ("observation", "file_edit", None, None, 4, None, None),
        ("action", "file_edit", "not_applied", "util.py", None, 2, None),
        ("observation", "file_edit", None, None, 6, None, None),
        ("action", "command", None, None, None, 3, None),
        ("action", "command", None, None, None, 3, None),
        ("observation", "command", None, None, 8, None, 0),
        ("observation", "command", None, None, 9, None, None),
        ("action", "message", None, None, None, 4, None),
        ("observation", "message", None, None, 12, None, None),
        ("observation", "message", None, None, 12, None, None),
        ("action", "message", None, None, None, 5, None),
    ]
    assert (t.agent_events, t.actions, t.observations) == (16, 9, 7)
    ev = t.events
    assert (ev[0].command, ev[0].cwd, ev[0].thought) == ("python -m pytest -q", ROOT, "**Running tests**")
    assert ev[1].text == "F..\n1 failed, 2 passed\n"
    assert (ev[2].file_text, ev[2].cwd) == ("# Notes\n\nsub() fixed\n", ROOT)
    assert ev[3].text == "*** Update File: calc.py\n@@ def sub(a, b):\n-    return a + b\n+    return a - b"
    assert (ev[3].old_text, ev[3].new_text, ev[4].text) == (None, None, "*** Delete File: old.txt")
    assert (ev[6].cwd, ev[6].file_text) == (f"{ROOT}/pkg", None)
    assert [(e.command, e.cwd) for e in ev[8:10]] == [
        ("python -m pytest -q", ROOT),
        ("python -m http.server", f"{ROOT}/site"),
    ]
    assert ev[12].text == 'write_stdin {"session_id": 4, "chars": "\\u0003"}'
    assert (ev[14].source, ev[14].text) == ("user", "Also keep the server off.")
    assert (ev[15].text, ev[15].thought) == ("**Wrapping up**\nDone: tests pass.", "**Wrapping up**")

    # One call per fresh token count (repeats and the context-window fill are not calls; the count with
    # only a running total gives the difference); the compaction's count is a call without events.
    usage = [
        (
            c.usage.prompt_tokens,
            c.usage.completion_tokens,
            c.usage.cached_tokens,
            c.usage.reasoning_tokens,
            c.usage.cache_creation_tokens,
            c.model,
        )
        for c in t.llm_calls
    ]
    assert usage == [
        (5000, 300, 0, 256, None, "gpt-5-codex"),
        (5600, 420, 4992, 128, None, "gpt-5-codex"),
        (6100, 150, 5504, 64, None, "gpt-5-codex"),
        (6400, 210, 6016, 0, None, "gpt-5-codex"),
        (6700, 40, 6272, 0, None, "gpt-5-codex"),
        (7000, 90, 6656, 32, None, "gpt-5-codex"),
        (7100, 800, 0, 0, None, "gpt-5-codex"),
    ]
    assert t.prompt_tokens == 43900 and t.completion_tokens == 2010 and t.cached_tokens == 29440
    summary = summarize(t)
    assert (summary.llm_calls, summary.prompt_tokens, summary.usage_per_call) == (7, 43900, True)


def test_legacy_rollout(tmp_path):
    lines = [
        {
            "id": SESSION,
            "timestamp": "2025-08-02T10:00:00.000Z",
            "instructions": None,
            "git": {
                "commit_hash": COMMIT,
                "branch": "main",
                "repository_url": "https://example.org/calc.git",
            },
        },
        {"record_type": "state"},
        {
            "type": "message",
            "id": None,
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": f"<environment_context>\n  <cwd>{ROOT}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
                    "</environment_context>",
                }
            ],
        },
        user_item("Fix sub()."),
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Look first"}],
            "encrypted_content": None,
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "name": "shell",
            "call_id": "call_a",
            "arguments": json.dumps({"command": ["sed", "-n", "1,20p", "calc.py"]}),
        },
        {
            "type": "function_call_output",
            "call_id": "call_a",
            "output": json.dumps(
                {"output": "def add(a, b):\n", "metadata": {"exit_code": 0, "duration_seconds": 0.0}}
            ),
        },
        {"record_type": "state"},
        {
            "type": "function_call",
            "name": "shell",
            "call_id": "call_b",
            "arguments": json.dumps(
                {"command": ["apply_patch", "*** Begin Patch\n*** Add File: t.txt\n+hi\n*** End Patch\n"]}
            ),
        },
        {
            "type": "local_shell_call",
            "call_id": "call_c",
            "status": "completed",
            "action": {
                "type": "exec",
                "command": ["bash", "-lc", "pytest -q"],
                "working_directory": f"{ROOT}/tests",
            },
        },
        {
            "type": "function_call_output",
            "call_id": "call_b",
            "output": {
                "content": json.dumps(
                    {
                        "output": "Success. Updated the following files:\nA t.txt\n",
                        "metadata": {"exit_code": 0, "duration_seconds": 0.0},
                    }
                ),
                "success": True,
            },
        },
        {
            "type": "function_call_output",
            "call_id": "call_c",
            "output": json.dumps(
                {"output": "ERROR: file not found\n", "metadata": {"exit_code": 4, "duration_seconds": 0.2}}
            ),
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Tests do not collect."}],
        },
        user_item("ok, stop here"),
    ]
    path = tmp_path / "rollout-2025-08-02T10-00-00-legacy.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert detect_format(path) == "codex-cli"
    (t,) = read_trajectories(path)
    assert (t.working_dir, t.format_version, t.task_prompt) == (ROOT, None, "Fix sub().")
    assert (t.metadata["layout"], t.metadata["git_commit"]) == ("legacy", COMMIT)
    assert [(e.kind, e.type, e.cause, e.llm_call, e.exit_code) for e in t.events] == [
        ("action", "command", None, 0, None),
        ("observation", "command", 0, None, 0),
        ("action", "file_edit", None, 1, None),
        ("action", "command", None, 1, None),
        ("observation", "file_edit", 2, None, None),
        ("observation", "command", 3, None, 4),
        ("action", "message", None, 2, None),
        ("observation", "message", 6, None, None),
    ]
    assert (t.events[0].command, t.events[0].thought, t.events[0].cwd) == (
        "sed -n 1,20p calc.py",
        "Look first",
        ROOT,
    )
    assert (t.events[2].edit, t.events[2].file_text) == ("create", "hi\n")
    assert (t.events[3].command, t.events[3].cwd) == ("pytest -q", f"{ROOT}/tests")
    assert t.events[7].source == "user"
    # No token counts in this layout: the output items between two inputs are one call, usage unknown.
    assert [c.usage for c in t.llm_calls] == [None, None, None]
    assert summarize(t).prompt_tokens is None


def test_patch_sections_replay(tmp_path):
    """Add File applies exactly; Update and Delete are refused by the replay with their verb."""
    workspace, base = make_repo(
        tmp_path / "ws", {"calc.py": "def sub(a, b):\n    return a + b\n", "old.txt": "x\n"}
    )
    r = Rollout()
    r.add(
        "session_meta",
        {"id": SESSION, "timestamp": "2025-10-20T08:00:00.000Z", "cwd": ROOT, "cli_version": "0.46.0"},
    )
    r.event({"type": "user_message", "message": "Fix sub()."})
    r.call("call_1", "apply_patch", input=PATCH)
    r.output(
        "call_1",
        json.dumps(
            {
                "output": "Success. Updated the following files:\nA NOTES.md\nM calc.py\nD old.txt\n",
                "metadata": {"exit_code": 0, "duration_seconds": 0.0},
            }
        ),
    )
    r.count(100, 0, 10, 0)
    (t,) = read_trajectories(r.write(tmp_path / "rollout.jsonl"))
    result = replay_trajectory(t, workspace, base, replay=ReplaySettings(use_sandbox=False, timeout=30))
    assert [(s.action, s.detail) for s in result.steps] == [
        ("edit", "create NOTES.md"),
        ("skipped", "unknown editor verb 'apply_patch'"),
        ("skipped", "unknown editor verb 'delete'"),
        ("noop", ""),
    ]
    assert (workspace / "NOTES.md").read_text() == "# Notes\n\nsub() fixed\n"
    assert (workspace / "calc.py").read_text() == "def sub(a, b):\n    return a + b\n"
    assert not result.verdict.verified


def test_patch_parsing():
    assert [
        (s["op"], s["path"], s["move_to"])
        for s in sections(
            "  *** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n*** End of File\n"
            "*** Add File: c.txt\n+\n+z\n*** End Patch  \n"
        )
    ] == [("update", "a.py", "b.py"), ("add", "c.txt", None)]
    assert sections("<<'EOF'\n*** Begin Patch\n*** Delete File: d\n*** End Patch\nEOF\n")[0]["path"] == "d"
    assert (
        sections("*** Begin Patch\n*** Add File: c.txt\n+a\n\n*** End Patch") is None
    )  # Codex rejects it too
    assert sections("diff --git a/x b/x\n") is None
    assert heredoc('apply_patch <<"PATCH"\n*** Begin Patch\n*** End Patch\nPATCH\n') == (
        "*** Begin Patch\n*** End Patch",
        None,
    )
    assert heredoc("cd src && applypatch <<'EOF'\nP\nEOF") == ("P", "src")
    assert heredoc("apply_patch <<'EOF'\nP\nEOF\npytest") is None


@pytest.mark.parametrize(
    ("damage", "record", "field"),
    [
        (lambda ls: ls[3]["payload"].pop("call_id"), "line 4", "payload.call_id"),
        (lambda ls: ls[3]["payload"].update(arguments=3), "line 4", "payload.arguments"),
        (
            lambda ls: ls[4]["payload"]["info"]["last_token_usage"].update(input_tokens="5"),
            "line 5",
            "payload.info.last_token_usage.input_tokens",
        ),
        (lambda ls: ls[5]["payload"].pop("call_id"), "line 6", "payload.call_id"),
        (lambda ls: ls[2].pop("payload"), "line 3", "payload"),
        (lambda ls: ls[2]["payload"].pop("type"), "line 3", "payload.type"),
        (lambda ls: ls[1].pop("type"), "line 2", "type"),
    ],
)
def test_malformed_line_names_file_line_and_field(tmp_path, damage, record, field):
    r = Rollout()
    r.add("session_meta", {"id": SESSION, "timestamp": "2025-10-20T08:00:00.000Z", "cwd": ROOT})
    r.event({"type": "user_message", "message": "Run the tests."})
    r.item({"type": "reasoning", "summary": []})
    r.call("call_1", "shell", command=["pytest"])
    r.count(10, 0, 5, 0)
    r.output("call_1", "ok")
    damage(r.lines)
    path = r.write(tmp_path / "bad.jsonl")
    with pytest.raises(InputError) as info:
        read_trajectories(path, format="codex-cli")
    assert (info.value.path, info.value.record, info.value.field) == (str(path), record, field)


def test_inspect_lists_the_rollout(tmp_path):
    from typer.testing import CliRunner

    from takeover.cli import app

    path = rollout_file(tmp_path).rename(tmp_path / "rollout.log")  # detection is by content
    result = CliRunner().invoke(app, ["inspect", "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "format": "codex-cli",
        "instance_id": None,
        "agent_events": 16,
        "actions": 9,
        "observations": 7,
        "llm_calls": 7,
        "prompt_tokens": 43900,
        "completion_tokens": 2010,
        "cached_tokens": 29440,
        "cache_creation_tokens": None,
        "reasoning_tokens": 480,
        "usage_estimated": False,
        "exit_status": None,
        "final_patch_files": [],
        "usage_per_call": True,
        "calls_with_usage": 7,
    }
