"""One shape per flag across the command tree: the model request flags are the same set with the same
defaults and help on every command that calls a model, ``--note-max-tokens`` is on every command that
writes notes, ``--verbose`` on every command, ``--view`` repeatable wherever views are taken (an unknown
view is one error naming the known ones), the output location is ``--out-dir`` everywhere (the old
spellings still work, with a warning), and output to a pipe is not wrapped at 80 columns."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import typer
from test_cli_names import runner

from takeover.cli import app
from takeover.llm import ModelSettings
from takeover.vocabulary import VIEWS

#: The commands that call a model, and those that write notes (``run`` reads both from the experiment file).
CALL_A_MODEL = ("views", "handoff", "resume", "agent run", "quickstart", "claims")
WRITE_NOTES = ("views", "handoff", "resume", "quickstart")
#: The commands that write files, and where.
WRITE_FILES = ("points", "checkpoint", "views", "agent run", "grade", "show", "handoff", "resume", "quickstart",
               "tasks select")


def commands() -> dict:
    """Every command of the tree by its path (``agent run``), groups left out."""
    found = {}

    def walk(command, path: str) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, f"{path} {name}".strip())
        else:
            found[path] = command

    walk(typer.main.get_command(app), "")
    return found


def option(command, flag: str):
    """The option of ``command`` that ``flag`` names, or None."""
    return next((p for p in command.params if p.param_type_name == "option" and flag in p.opts), None)


def plain(text: str) -> str:
    """A usage error's text without rich's box and line breaks."""
    return " ".join(re.sub("[│╭╮╰╯─]", " ", text).split())


def test_the_model_request_flags_are_one_set_with_one_default_and_help():
    tree = commands()
    defaults = {"--timeout": ModelSettings.model_fields["timeout"].default,
                "--retries": ModelSettings.model_fields["retries"].default,
                "--max-retry-wait": ModelSettings.model_fields["max_retry_wait"].default}
    helps: dict[str, set[str]] = {flag: set() for flag in defaults}
    for path in CALL_A_MODEL:
        for flag, default in defaults.items():
            opt = option(tree[path], flag)
            assert opt is not None, (path, flag)
            helps[flag].add(opt.help.split(" Default: ")[0])
            if path != "quickstart":
                assert opt.default == default, (path, flag)
    assert {flag: len(texts) for flag, texts in helps.items()} == {flag: 1 for flag in defaults}
    # The quickstart's embedded model keeps its server's own timeout and retries unless they are given.
    assert option(tree["quickstart"], "--max-retry-wait").default == defaults["--max-retry-wait"]
    assert "the embedded model's server: 900" in option(tree["quickstart"], "--timeout").help
    # --timeout is the model request's timeout wherever it is a flag of its own.
    assert sorted(path for path, c in tree.items() if option(c, "--timeout")) == sorted(CALL_A_MODEL)
    assert "experiment file" in tree["run"].help and "max_retry_wait" in tree["run"].help


def test_note_max_tokens_is_a_flag_of_every_command_that_writes_notes():
    tree = commands()
    assert sorted(path for path, c in tree.items() if option(c, "--note-max-tokens")) == sorted(WRITE_NOTES)
    assert "note_max_tokens in [notes]" in " ".join(tree["run"].help.split())


def test_verbose_is_a_flag_of_every_command():
    missing = [path for path, c in commands().items() if path != "version" and not option(c, "--verbose")]
    assert missing == []
    assert all(option(c, "--verbose").opts == ["--verbose", "-v"] for p, c in commands().items() if p != "version")


def test_view_is_repeatable_on_every_command_that_takes_views():
    taking = {path: option(c, "--view") for path, c in commands().items() if option(c, "--view")}
    assert sorted(taking) == ["agent run", "export harbor", "handoff", "quickstart", "resume", "views"]
    assert all(opt.multiple for opt in taking.values())


def test_the_output_location_is_out_dir_everywhere():
    tree = commands()
    for path in WRITE_FILES:
        assert option(tree[path], "--out-dir") is not None, path
    for path, command in tree.items():
        visible = {flag for p in command.params if p.param_type_name == "option" and not p.hidden for flag in p.opts}
        assert not visible & {"--out", "-o", "--log-dir", "--output"}, path


@pytest.mark.parametrize("argv", [
    ["views", "run.json", "--dataset", "d.jsonl", "--point-type", "after_first_source_edit", "--out-dir", "v"],
    ["quickstart", "--out-dir", "qs"],
    ["handoff", "session.jsonl"],
    ["resume", "session.jsonl", "--model", "m"],
], ids=lambda argv: argv[0])
def test_an_unknown_view_is_one_error_naming_the_known_views(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner().invoke(app, [*argv, "--view", "repo_only", "--view", "diary"])
    assert result.exit_code == 2, result.output
    assert f"unknown view 'diary'; the views are {', '.join(VIEWS)}" in plain(result.output)
    assert not (tmp_path / "qs").exists() and not (tmp_path / "v").exists()  # refused before any work


def test_tasks_select_writes_its_selection_into_out_dir(tmp_path):
    rows = [{"instance_id": f"acme__calc-{i}", "repo": "acme/calc", "base_commit": "0" * 40, "problem_statement": "x",
             "difficulty": "1-4 hours", "FAIL_TO_PASS": [], "PASS_TO_PASS": []} for i in range(3)]
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    new = runner().invoke(app, ["tasks", "select", "--dataset", str(dataset), "--limit", "2", "--out-dir",
                                str(tmp_path / "sel")])
    assert new.exit_code == 0, new.output
    written = (tmp_path / "sel" / "tasks.jsonl").read_text()
    assert len(written.splitlines()) == 3 and f"wrote {tmp_path / 'sel' / 'tasks.jsonl'}" in new.stdout
    neither = runner().invoke(app, ["tasks", "select", "--dataset", str(dataset)])
    assert neither.exit_code == 2 and "give --out-dir DIR" in plain(neither.output)


def test_output_to_a_pipe_is_not_wrapped_at_80_columns(tmp_path):
    """Rich wraps at 80 columns when stdout is not a terminal; tables and messages print at their natural
    width instead (a subprocess with a pipe, no COLUMNS)."""
    owner, name = "an_organisation_with_a_rather_long_name", "a_repository_whose_name_is_longer_still"
    rows = [{"instance_id": f"{owner}__{name}-12345", "repo": f"{owner}/{name}", "base_commit": "0" * 40,
             "problem_statement": "x", "difficulty": "1-4 hours", "FAIL_TO_PASS": [], "PASS_TO_PASS": []}]
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / ("a-folder-with-a-name-long-enough-to-push-the-summary-line-past-eighty-columns" * 2)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run([sys.executable, "-m", "takeover", "tasks", "select", "--dataset", str(dataset),
                           "--limit", "0", "--out-dir", str(out)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    (summary,) = [line for line in lines if line.startswith("selected ")]
    assert summary.endswith(f"wrote {out / 'tasks.jsonl'}") and len(summary) > 160  # one line, not wrapped
    (row,) = [line for line in lines if rows[0]["repo"] in line]
    assert len(row) > 80 and row.rstrip().endswith("│")  # the whole table row on one line, not folded
    assert max(len(line) for line in lines) == len(summary)  # nothing is padded to a width
