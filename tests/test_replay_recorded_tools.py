"""Replay follows the tool that recorded the run (docs/protocol.md section 5.6): its editors' own rules per
version, decided by the recorded answers; its recorded timeouts; input sent to running processes; OpenHands
agent-skill IPython cells; calls the tool never carried out. Each test writes a run in the tool's native
layout on a tiny git repository, reads it with the format's reader and checks the verdict and the
repository state after events."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git, make_repo

from takeover.replay_settings import ReplaySettings
from takeover.repository_states.replay import replay_trajectory
from takeover.trajectories import read_trajectories

ROOT = "/workspace/repo"


def final_patch(tmp_path: Path, base: dict[str, str], files: dict[str, str | None]) -> str:
    """The patch the recorded run submitted: ``files`` changed (``None``: deleted) in a scratch clone."""
    other, _ = make_repo(tmp_path / "expected", base)
    for rel, text in files.items():
        if text is None:
            (other / rel).unlink()
            continue
        (other / rel).parent.mkdir(parents=True, exist_ok=True)
        (other / rel).write_bytes(text.encode())
    git(other, "add", "-A")
    return git(other, "diff", "--cached")


def states(result) -> list[list[str]]:
    return [sorted(d) for d in result.diffs]


# --- OpenHands 0.x output.jsonl -------------------------------------------------------------------------


class OpenHandsRow:
    """An OpenHands 0.x evaluation row (``output.jsonl``) built event by event, as the runtime stores it."""

    def __init__(self) -> None:
        self.history: list[dict] = [
            {"id": 0, "timestamp": "2025-05-01T10:00:00", "source": "user", "message": "Fix it.", "action": "message",
             "args": {"content": f"<uploaded_files>\n{ROOT}\n</uploaded_files>\nFix it.", "image_urls": None,
                      "wait_for_response": False}},
        ]

    def _add(self, event: dict) -> int:
        event = {"id": len(self.history), "timestamp": f"2025-05-01T10:{len(self.history):02d}:00", **event}
        self.history.append(event)
        return event["id"]

    def run(self, command: str, output: str, exit_code: int, *, is_input: bool = False, suffix: str | None = None,
            thought: str = "") -> None:
        cause = self._add({"source": "agent", "message": f"Running command: {command}", "action": "run",
                           "args": {"command": command, "is_input": is_input, "thought": thought, "blocking": False,
                                    "hidden": False, "confirmation_state": "confirmed"}, "timeout": 120})
        if suffix is None:
            suffix = f"\n[The command completed with exit code {exit_code}.]"
        self._add({"source": "agent", "message": f"Command `{command}` executed with exit code {exit_code}.",
                   "cause": cause, "observation": "run", "content": output,
                   "extras": {"command": command, "hidden": False,
                              "metadata": {"exit_code": exit_code, "pid": -1, "username": "root", "hostname": "h",
                                           "working_dir": ROOT, "py_interpreter_path": "/usr/bin/python",
                                           "prefix": "", "suffix": suffix}},
                   "success": exit_code == 0})

    def edit(self, command: str, path: str, answer: str, **args) -> None:
        fields = {"path": path, "command": command, "file_text": None, "old_str": None, "new_str": None,
                  "insert_line": None, "content": "", "start": 1, "end": -1, "thought": "", "impl_source": "oh_aci"}
        cause = self._add({"source": "agent", "message": f"Editing {path}", "action": "edit", "args": fields | args})
        self._add({"source": "agent", "message": f"I edited the file {path}.", "cause": cause, "observation": "edit",
                   "content": answer, "extras": {"path": path, "prev_exist": False, "old_content": args.get("old_str"),
                                                 "new_content": args.get("new_str"), "impl_source": "oh_aci",
                                                 "diff": ""}, "success": not answer.startswith("ERROR")})

    def ipython(self, code: str, output: str) -> None:
        cause = self._add({"source": "agent", "message": "Running Python code interactively: " + code,
                           "action": "run_ipython", "args": {"code": code, "thought": "", "include_extra": True,
                                                             "confirmation_state": "confirmed", "kernel_init_code": ""}})
        self._add({"source": "agent", "message": "Code executed in IPython cell.", "cause": cause,
                   "observation": "run_ipython", "content": output, "extras": {"code": code}, "success": True})

    def write(self, path: Path, patch: str) -> Path:
        row = {"instance_id": "acme__calc-1", "instruction": self.history[0]["args"]["content"],
               "instance": {"instance_id": "acme__calc-1"}, "test_result": {"git_patch": patch},
               "metadata": {"agent_class": "CodeActAgent", "llm_config": {"model": "gpt-4o"}, "max_iterations": 30,
                            "git_commit": "b5338c69d6661dad658ead0d7217bf5bb9d482da"},
               "metrics": {"accumulated_cost": 0.0}, "error": None, "history": self.history}
        path.write_text(json.dumps(row) + "\n")
        return path


def snippet(path: str, lines: list[str], first: int = 1) -> str:
    numbered = "\n".join(f"{i + first:6}\t{line}" for i, line in enumerate(lines))
    return (f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet of {path}:\n"
            f"{numbered}\nReview the changes and make sure they are as expected. Edit the file again if necessary.")


def test_openhands_editor_refusals_tabs_timeouts_and_process_input(tmp_path):
    base = {"a.py": "x = 1\n", "m.c": "int f() {\n\treturn 1;\n}\n", "s.py": "def g():\n    return 0\n"}
    row = OpenHandsRow()
    # create: refused on an existing file and under a missing folder; the recorded answer says so.
    row.edit("create", f"{ROOT}/a.py", f"ERROR:\nInvalid `path` parameter: {ROOT}/a.py. File already exists at: "
             f"{ROOT}/a.py. Cannot overwrite files using command `create`.", file_text="x = 99\n")
    row.edit("create", f"{ROOT}/new/b.py", f"ERROR:\nRan into [Errno 2] No such file or directory: '{ROOT}/new/b.py' "
             f"while trying to write to {ROOT}/new/b.py", file_text="y = 1\n")
    # str_replace in a file with tabs: openhands-aci >= 0.2.11 keeps them (its snippet shows the tab).
    row.edit("str_replace", f"{ROOT}/m.c", snippet(f"{ROOT}/m.c", ["int f() {", "\treturn 2;", "}", ""]),
             old_str="\treturn 1;", new_str="\treturn 2;")
    # openhands-aci 0.3.2 retries an old_str that does not occur with its whitespace stripped.
    row.edit("str_replace", f"{ROOT}/s.py", snippet(f"{ROOT}/s.py", ["def g():", "    return 5", ""]),
             old_str="return 0\n\n", new_str="return 5\n\n")
    # A soft timeout: exit code -1, the explanation only in the metadata; then keys to the process.
    row.run("python -c 'import time; time.sleep(30)' && echo done > late.txt", "", -1,
            suffix="\n[The command has no new output after 30 seconds. You may wait longer to see additional "
                   "output by sending empty command '', send other commands to interact with the current process, "
                   "send keys (\"C-c\", \"C-z\", \"C-d\") to interrupt/kill the previous command before sending "
                   "your new command, or use the timeout parameter in execute_bash for future commands.]")
    row.run("C-c", "^C", 130, is_input=True, suffix="\n[The command completed with exit code 130. CTRL+C was sent.]")
    row.run("y", "", -1, is_input=True, suffix="")  # text typed into a process: never a command
    row.run("touch never.txt", "", -1, suffix='\n[Your command "touch never.txt" is NOT executed. The previous command '
            "is still running - You CANNOT send new commands until the previous command is completed.]")
    row.run("echo ok > ok.txt", "", 0)
    patch = final_patch(tmp_path, base, {"m.c": "int f() {\n\treturn 2;\n}\n", "s.py": "def g():\n    return 5\n",
                                         "ok.txt": "ok\n"})
    (traj,) = read_trajectories(row.write(tmp_path / "output.jsonl", patch))
    actions = [e for e in traj.events if e.kind == "action"]
    assert [(e.process_input, e.not_applied) for e in actions[4:]] == [
        (False, False), (True, False), (True, False), (False, True), (False, False)]
    assert [e.timed_out for e in traj.events if e.kind == "observation"][4:] == [True, False, True, True, False]

    ws, sha = make_repo(tmp_path / "ws", base)
    # The 30 s sleep is cut at the limit; echo and touch need far less than 5 s, even on a loaded machine.
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=5))
    assert result.verdict.verified, result.verdict
    assert [s.action for s in result.steps if s.index % 2 == 0] == ["noop", "noop", "edit", "edit", "command",
                                                                    "noop", "noop", "noop", "command"]
    assert "refused in the recorded run" in result.steps[0].detail and result.steps[6].detail.endswith("(strip old_str and new_str)")
    assert result.steps[8].killed == "timeout"  # capped at the limit, as in the recorded run
    assert states(result) == [[]] * 4 + [["m.c"]] * 2 + [["m.c", "s.py"]] * 10 + [["m.c", "ok.txt", "s.py"]] * 2
    assert (ws / "m.c").read_text() == "int f() {\n\treturn 2;\n}\n" and (ws / "a.py").read_text() == "x = 1\n"
    assert not (ws / "never.txt").exists() and not (ws / "late.txt").exists() and not (ws / "y").exists()


def test_openhands_command_waited_out_after_its_soft_limit_runs_to_the_end(tmp_path):
    row = OpenHandsRow()
    row.run("sleep 1 && echo built > out.txt", "", -1,
            suffix="\n[The command timed out after 0.5 seconds. You may wait longer to see additional output by "
                   "sending empty command '', send other commands to interact with the current process.]")
    row.run("", "", 0, is_input=True)  # waited: the answer carries the command's exit code
    (traj,) = read_trajectories(row.write(tmp_path / "output.jsonl", final_patch(tmp_path, {"a": "a\n"}, {"out.txt": "built\n"})))
    ws, sha = make_repo(tmp_path / "ws", {"a": "a\n"})
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=20))
    assert result.verdict.verified, result.verdict
    assert result.steps[0].killed is None and states(result) == [["out.txt"]] * 4


AGENT_SKILL_CELLS = [
    ("create_file('/workspace/repo/repro.py')",
     "[File: /workspace/repo/repro.py (1 lines total)]\n1|\n[File /workspace/repo/repro.py created.]"),
    ("append_file('/workspace/repo/repro.py', 'from calc import add\\nprint(add(1, 2))')",
     ("[File: /workspace/repo/repro.py (2 lines total after edit)]\n1|from calc import add\n2|print(add(1, 2))\n"
     "[File updated (edited at line 1). Please review the changes and make sure they are correct (correct "
     "indentation, no duplicate lines, etc). Edit the file again if necessary.]")),
    (("edit_file_by_replace(\n    '/workspace/repo/calc.py',\n    to_replace='return a - b',\n"
     "    new_content='    return a + b',\n)"),
     ("[File: /workspace/repo/calc.py (3 lines total after edit)]\n1|def add(a, b):\n2|    return a + b\n3|\n"
     "[File updated (edited at line 2). Please review the changes and make sure they are correct.]")),
    ("insert_content_at_line('/workspace/repo/calc.py', 1, '\"\"\"Adding.\"\"\"')",
     ("[File: /workspace/repo/calc.py (4 lines total after edit)]\n1|\"\"\"Adding.\"\"\"\n2|def add(a, b):\n"
     "[File updated (edited at line 1).]")),
    ("edit_file_by_replace('/workspace/repo/calc.py', to_replace='nothing like this', new_content='x')",
     "[No exact match found in /workspace/repo/calc.py for\n```\nnothing like this\n```\n]"),
    ("open_file('/workspace/repo/calc.py')\nsearch_file('add')", "[File: /workspace/repo/calc.py (4 lines total)]"),
]


def test_openhands_agent_skill_cells_replay_exactly(tmp_path):
    base = {"calc.py": "def add(a, b):\n    return a - b\n\n"}
    row = OpenHandsRow()
    for code, output in AGENT_SKILL_CELLS:
        row.ipython(code, output)
    row.run("python3 repro.py", "3", 0)
    patch = final_patch(tmp_path, base, {"calc.py": '"""Adding."""\ndef add(a, b):\n    return a + b\n\n',
                                         "repro.py": "from calc import add\nprint(add(1, 2))\n"})
    (traj,) = read_trajectories(row.write(tmp_path / "output.jsonl", patch))
    assert all(e.ipython for e in traj.events[:12:2])
    ws, sha = make_repo(tmp_path / "ws", base)
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=30))
    assert result.verdict.verified, result.verdict
    assert [s.action for s in result.steps[:12:2]] == ["edit", "edit", "edit", "edit", "noop", "noop"]
    assert states(result) == [["repro.py"]] * 4 + [["calc.py", "repro.py"]] * 10
    assert result.steps[12].output.strip() == "3"  # the edited code really runs


def test_an_ipython_cell_that_is_not_agent_skills_makes_the_run_unreplayable(tmp_path):
    row = OpenHandsRow()
    row.ipython("import pathlib\npathlib.Path('/workspace/repo/a.py').write_text('x = 2')", "")
    row.run("touch after.txt", "", 0)
    (traj,) = read_trajectories(row.write(tmp_path / "output.jsonl", final_patch(tmp_path, {"a.py": "x = 1\n"}, {"a.py": "x = 2"})))
    ws, sha = make_repo(tmp_path / "ws", {"a.py": "x = 1\n"})
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=30))
    assert not result.verdict.verified and result.verdict.method == "replay"
    assert result.verdict.reason == ("event 0 cannot be replayed exactly: IPython cell: line 1 is not a call of an "
                                     "agent skill")
    assert (ws / "a.py").read_text() == "x = 1\n" and not (ws / "after.txt").exists()  # nothing run, not with bash


# --- OpenHands message form (SWE-Gym, openhands-aci 0.1.x) -----------------------------------------------


def test_openhands_message_form_expands_tabs_and_never_runs_ctrl_c(tmp_path):
    base = {"m.c": "int f() {\n\treturn 1;\n}\n"}
    calls = [
        ("str_replace_editor", {"command": "str_replace", "path": f"{ROOT}/m.c", "old_str": "\treturn 1;",
                                "new_str": "\treturn 2;"},
         "OBSERVATION:\n" + snippet(f"{ROOT}/m.c", ["int f() {", "        return 2;", "}", ""])),
        ("str_replace_editor", {"command": "insert", "path": f"{ROOT}/m.c", "insert_line": 3, "new_str": "\t/* end */"},
         "OBSERVATION:\n" + snippet(f"{ROOT}/m.c", ["int f() {", "        return 2;", "}", "        /* end */", ""])),
        ("execute_bash", {"command": "sleep 30"}, "OBSERVATION:\n\n[Command finished with exit code -1]"),
        ("execute_bash", {"command": "ctrl+c"}, "OBSERVATION:\n^C\n[Command finished with exit code 130]"),
    ]
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": f"<uploaded_files>\n{ROOT}\n</uploaded_files>\nFix f."}]
    for k, (name, args, answer) in enumerate(calls):
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"call_{k}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "name": name, "tool_call_id": f"call_{k}", "content": answer})
    patch = final_patch(tmp_path, base, {"m.c": "int f() {\n        return 2;\n}\n        /* end */\n"})
    path = tmp_path / "sampled.json"
    path.write_text(json.dumps([{"instance_id": "acme__calc-1_0", "run_id": "r", "resolved": True,
                                 "messages": messages, "tools": [], "test_result": {"git_patch": patch}}]))
    (traj,) = read_trajectories(path)
    assert [e.timed_out for e in traj.events if e.kind == "observation"] == [False, False, True, False]
    assert traj.events[6].process_input
    ws, sha = make_repo(tmp_path / "ws", base)
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=1))  # the recorded timeout may recur
    assert result.verdict.verified, result.verdict
    assert result.steps[0].detail.endswith("(exact, tabs expanded)") and result.steps[6].action == "noop"


# --- SWE-agent 1.x (tools/edit_anthropic) -----------------------------------------------------------------


def swe_agent_traj(path: Path, steps: list[tuple], patch: str) -> Path:
    """A SWE-agent 1.x ``.traj``: one step per ``(action, observation[, open file after it])``, state as a
    dict."""
    trajectory = [{"action": action, "observation": observation, "response": f"DISCUSSION\n{action}",
                   "thought": "DISCUSSION", "execution_time": 0.1,
                   "state": {"open_file": rest[0] if rest else "n/a", "working_dir": "/testbed"}, "query": [],
                   "extra_info": {}}
                  for action, observation, *rest in steps]
    doc = {"environment": "main", "trajectory": trajectory,
           "history": [{"role": "system", "content": "sys", "agent": "main", "message_type": "system_prompt"},
                       {"role": "user", "content": "Fix it.", "agent": "main", "message_type": "observation"}],
           "info": {"exit_status": "submitted", "submission": patch, "swe_agent_version": "1.0.1",
                    "model_stats": {"instance_cost": 0.1, "tokens_sent": 100, "tokens_received": 10, "api_calls": 1}},
           "replay_config": json.dumps({"problem_statement": {"id": "acme__calc-1"}})}
    path.write_text(json.dumps(doc))
    return path


def test_swe_agent_str_replace_editor_rules(tmp_path):
    base = {"a.py": "x = 1\n", "t.py": "def f():\n\treturn 1\n"}
    ed = "str_replace_editor"
    steps = [
        (f"{ed} create /testbed/a.py --file_text 'x = 9'",
         "File already exists at: /testbed/a.py. Cannot overwrite files using command `create`."),
        (f"{ed} create /testbed/pkg/b.py --file_text 'y = 1'",
         "The parent directory /testbed/pkg does not exist. Please create it first."),
        (f"{ed} str_replace /testbed/t.py --old_str 'return 1' --new_str 'return 2'",
         ("The file /testbed/t.py has been edited. Here's the result of running `cat -n` on a snippet of "
         "/testbed/t.py:\n     1\tdef f():\n     2\t        return 2\n     3\t\nReview the changes.")),
        (f"{ed} undo_edit /testbed/t.py", "No edit history found for /testbed/t.py."),
        (f"{ed} insert /testbed/t.py --insert_line 2 --new_str '\tprint(1)'",
         ("The file /testbed/t.py has been edited. Here's the result of running `cat -n` on a snippet of the "
         "edited file:\n     1\tdef f():\n     2\t        return 2\n     3\t        print(1)\n     4\t\nReview.")),
        ("sleep 30", ("The command 'sleep 30' was cancelled because it took more than 1 seconds. Please try a "
         "different command that completes more quickly.")),
        ("submit", ""),
    ]
    patch = final_patch(tmp_path, base, {"t.py": "def f():\n        return 2\n        print(1)\n"})
    (traj,) = read_trajectories(swe_agent_traj(tmp_path / "acme__calc-1.traj", steps, patch))
    assert traj.events[11].timed_out
    ws, sha = make_repo(tmp_path / "ws", base)
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=1))
    assert result.verdict.verified, result.verdict
    assert [s.action for s in result.steps[:12:2]] == ["noop", "noop", "edit", "noop", "edit", "command"]
    assert result.steps[10].killed == "timeout"  # allowed: the recorded run saw it cancelled too
    assert states(result) == [[]] * 4 + [["t.py"]] * 10
    assert (ws / "a.py").read_text() == "x = 1\n" and not (ws / "pkg").exists()


def test_swe_agent_windowed_edit_works_inside_the_shown_window(tmp_path):
    base = {"w.py": "a = 0\nb = 0\nc = 0\nb = 0\n"}
    steps = [
        ("open \"w.py\" 3", "[File: w.py (4 lines total)]\n3:c = 0\n4:b = 0", "/testbed/w.py"),
        ("edit 'b = 0' 'b = 1'", "Text replaced. Please review the changes and make sure they are correct",
         "/testbed/w.py"),
        ("create notes.txt", "[File: notes.txt (1 lines total)]\n1:", "/testbed/notes.txt"),
        ("insert 'one\ntwo\n'", "[File: /testbed/notes.txt (3 lines total)]\n1:\n2:one\n3:two", "/testbed/notes.txt"),
        ("submit", ""),
    ]
    patch = final_patch(tmp_path, base, {"w.py": "a = 0\nb = 0\nc = 0\nb = 1\n", "notes.txt": "\none\ntwo"})
    (traj,) = read_trajectories(swe_agent_traj(tmp_path / "acme__calc-1.traj", steps, patch))
    ws, sha = make_repo(tmp_path / "ws", base)
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=30))
    assert result.verdict.verified, result.verdict
    assert result.steps[2].detail == "edit w.py (lines 3-4 shown)"


# --- OpenHands 1.x and Claude Code ------------------------------------------------------------------------


def test_openhands_sdk_terminal_input_and_soft_timeout(tmp_path):
    def action(n: int, tool: str, action: dict) -> dict:
        return {"kind": "ActionEvent", "id": f"a{n}", "source": "agent", "thought": [], "action": action,
                "tool_name": tool, "tool_call_id": f"t{n}", "llm_response_id": f"r{n}",
                "tool_call": {"id": f"t{n}", "name": tool, "arguments": json.dumps(action), "origin": "completion"}}

    def answer(n: int, tool: str, observation: dict) -> dict:
        return {"kind": "ObservationEvent", "id": f"o{n}", "source": "environment", "tool_name": tool,
                "tool_call_id": f"t{n}", "action_id": f"a{n}", "observation": observation}

    meta = {"exit_code": -1, "pid": -1, "working_dir": ROOT, "py_interpreter_path": None, "prefix": "", "suffix": ""}
    history = [
        action(1, "terminal", {"kind": "TerminalAction", "command": "sleep 30; touch late.txt", "is_input": False}),
        answer(1, "terminal", {"kind": "TerminalObservation", "content": [{"type": "text", "text": ""}],
                               "command": "sleep 30; touch late.txt", "exit_code": -1, "timeout": True,
                               "metadata": meta | {"suffix": "\n[The command has no new output after 30 seconds.]"}}),
        action(2, "terminal", {"kind": "TerminalAction", "command": "C-c", "is_input": True}),
        answer(2, "terminal", {"kind": "TerminalObservation", "content": [{"type": "text", "text": "^C"}],
                               "command": "C-c", "exit_code": 130, "timeout": False, "metadata": meta | {"exit_code": 130}}),
        action(3, "file_editor", {"kind": "FileEditorAction", "command": "create", "path": f"{ROOT}/a.py",
                                  "file_text": "x = 3\n"}),
        answer(3, "file_editor", {"kind": "FileEditorObservation", "command": "create", "is_error": True,
                                  "content": [{"type": "text", "text": f"Invalid `path` parameter: {ROOT}/a.py. File "
                                               f"already exists at: {ROOT}/a.py. Cannot overwrite files using command "
                                               "`create`."}]}),
    ]
    row = {"instance_id": "acme__calc-1", "instruction": f"<uploaded_files>\n{ROOT}\n</uploaded_files>\nFix.",
           "history": history, "metadata": {"llm": {"model": "m"}}, "metrics": None, "error": None,
           "test_result": {"git_patch": ""}, "instance": {}}
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(row) + "\n")
    (traj,) = read_trajectories(path)
    assert [e.timed_out for e in traj.events if e.kind == "observation"] == [True, False, False]
    ws, sha = make_repo(tmp_path / "ws", {"a.py": "x = 1\n"})
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=1))
    assert result.verdict.verified, result.verdict
    assert [s.action for s in result.steps[::2]] == ["command", "noop", "noop"] and result.steps[0].killed == "timeout"
    assert states(result) == [[]] * 6


def test_claude_code_rejected_bash_is_not_run_and_replace_all_replaces_all(tmp_path):
    base = {"calc.py": "def add(a, b):\n    return a - b  # a - b\n"}
    def record(n: int, kind: str, content: list | str, **extra) -> dict:
        return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": ROOT, "sessionId": "s1",
                "version": "2.0.31", "gitBranch": "main", "type": kind, "uuid": f"u{n}",
                "timestamp": f"2025-11-04T09:{n:02d}:00.000Z", **extra,
                "message": {"role": kind, "content": content} | ({"model": "claude-sonnet-4-5", "id": f"msg_{n}",
                            "usage": {"input_tokens": 5, "output_tokens": 1}} if kind == "assistant" else {})}

    def tool_use(i: str, name: str, **inp) -> list:
        return [{"type": "tool_use", "id": i, "name": name, "input": inp}]

    rejection = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
                 "edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user "
                 "to tell you how to proceed.")
    records = [
        record(0, "user", "Fix add."),
        record(1, "assistant", tool_use("t1", "Bash", command="git checkout -- . && touch rejected.txt")),
        record(2, "user", [{"type": "tool_result", "tool_use_id": "t1", "content": rejection, "is_error": True}],
               toolUseResult="User rejected tool use"),
        record(3, "assistant", tool_use("t2", "Edit", file_path=f"{ROOT}/calc.py", old_string="a - b",
                                        new_string="a + b", replace_all=True)),
        record(4, "user", [{"type": "tool_result", "tool_use_id": "t2", "content": "The file has been updated."}]),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (traj,) = read_trajectories(path)
    traj.final_patch = final_patch(tmp_path, base, {"calc.py": "def add(a, b):\n    return a + b  # a + b\n"})
    assert traj.events[0].not_applied and traj.events[0].type == "command"
    ws, sha = make_repo(tmp_path / "ws", base)
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=30))
    assert result.verdict.verified, result.verdict
    assert result.steps[0].action == "noop" and not (ws / "rejected.txt").exists()
    assert result.steps[2].detail == "replace_all calc.py (2 occurrences)"
    assert states(result) == [[], [], ["calc.py"], ["calc.py"]]
