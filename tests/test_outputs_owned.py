"""No command writes over what it did not write: every command's output folder is created new or recognised as
this command's own for these inputs (:func:`takeover._util.folders.own_output`, the rule ``checkpoint`` has
followed from the start). A folder of the user's own files, or of another input's output, is refused before any
work with one line naming it, and every file in it is left byte for byte as it was.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_inputs_at_the_door import world  # noqa: F401  (fixture)
from user_commands import files_under, takeover

from takeover.cli import app


def _views(world, out: Path, *views: str) -> list:  # noqa: F811
    return ["views", world["run"], "--checkpoint-dir", world["cp"], "--dataset", world["dataset"],
            *[a for v in views for a in ("--view", v)], "--out-dir", out]


def _views_mine(world, tmp):  # noqa: F811
    out = tmp / "out"
    out.mkdir()
    (out / "repo_only.md").write_text("my own notes on the handoff\n")
    return _views(world, out, "repo_only"), out, out


def _views_of_another_task(world, tmp):  # noqa: F811
    out = tmp / "out"
    shutil.copytree(world["cp"] / "views", out)
    index = json.loads((out / "views.json").read_text())
    (out / "views.json").write_text(json.dumps({**index, "instance_id": "acme__widget-2"}))
    return _views(world, out, "repo_only"), out, out


def _views_of_another_point(world, tmp):  # noqa: F811
    out = tmp / "out"
    shutil.copytree(world["cp"] / "views", out)
    index = json.loads((out / "views.json").read_text())
    index["point"]["event_index"] += 2
    (out / "views.json").write_text(json.dumps(index))
    return _views(world, out, "repo_only"), out, out


def _views_beside_a_file_of_the_user(world, tmp):  # noqa: F811
    out = tmp / "out"
    shutil.copytree(world["cp"] / "views", out)
    (out / "raw_trace.md").write_text("my own trace notes\n")  # views.json does not list it
    return _views(world, out, "raw_trace"), out, out / "raw_trace.md"


def _grade(world, out: Path) -> list:  # noqa: F811
    return ["grade", "--dataset", world["dataset"], "--instance-id", world["task"].instance_id, "--empty",
            "--offline", "--out-dir", out]


def _grading_folder(world, tmp) -> tuple[Path, Path]:  # noqa: F811
    out = tmp / "out"
    folder = out / "empty" / world["task"].instance_id
    folder.mkdir(parents=True)
    return out, folder


def _grade_over_a_foreign_result(world, tmp):  # noqa: F811
    out, folder = _grading_folder(world, tmp)
    (folder / "result.json").write_text("my own results, not takeover's\n")
    return _grade(world, out), out, folder


def _grade_over_another_instances_result(world, tmp):  # noqa: F811
    out, folder = _grading_folder(world, tmp)
    (folder / "result.json").write_text(json.dumps({"instance_id": "acme__widget-2", "resolved": True}))
    return _grade(world, out), out, folder


def _grade_into_a_folder_of_the_user(world, tmp):  # noqa: F811
    out, folder = _grading_folder(world, tmp)
    (folder / "notes.md").write_text("mine\n")
    return _grade(world, out), out, folder


def _checkpoint(world, out: Path) -> list:  # noqa: F811
    return ["checkpoint", world["run"], "--dataset", world["dataset"], "--mirror", world["mirror"], "--offline",
            "--point-type", "after_first_source_edit", "--no-workspace", "--out-dir", out]


def _checkpoint_into_a_folder_of_the_user(world, tmp):  # noqa: F811
    out = tmp / "out"
    out.mkdir()
    (out / "checkpoint.patch").write_text("my own patch\n")
    return _checkpoint(world, out), out, out


def _checkpoint_over_another_point(world, tmp):  # noqa: F811
    out = tmp / "out"
    shutil.copytree(world["cp"], out)
    record = json.loads((out / "checkpoint.json").read_text())
    record["point"]["type"] = "after_first_post_failure_edit"
    (out / "checkpoint.json").write_text(json.dumps(record))
    return _checkpoint(world, out), out, out


def _export(world, tmp) -> tuple[list, Path, Path]:  # noqa: F811
    out = tmp / "out"
    argv = ["export", "harbor", world["flask_cp"], "--dataset", world["flask_dataset"], "--mirror",
            world["flask_mirror"], "--offline", "--image", "example/tiny:1", "--view", "repo_only", "--out-dir", out]
    done = takeover(*argv)
    assert done.exit_code == 0, done.stderr
    return argv, out, next(out.iterdir())


def _export_over_a_task_of_another_checkpoint(world, tmp):  # noqa: F811
    argv, out, task = _export(world, tmp)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('checkpoint_patch_sha256 = "', 'checkpoint_patch_sha256 = "0'))
    return argv, out, task


def _export_over_a_folder_of_the_user(world, tmp):  # noqa: F811
    argv, out, task = _export(world, tmp)
    shutil.rmtree(task)
    task.mkdir()
    (task / "instruction.md").write_text("my own instruction\n")
    return argv, out, task


def _select_over_the_users_dataset(world, tmp):  # noqa: F811
    out = tmp / "out"
    out.mkdir()
    shutil.copy(world["dataset"], out / "tasks.jsonl")  # the user's dataset, named as the selection file
    return ["tasks", "select", "--dataset", out / "tasks.jsonl", "--out-dir", out], out, out / "tasks.jsonl"


def _atif_over_another_runs_trajectory(world, tmp):  # noqa: F811
    out = tmp / "out"
    out.mkdir()
    done = takeover("export", "atif", world["run"], "--out-dir", out)
    assert done.exit_code == 0, done.stderr
    doc = json.loads((out / "trajectory.json").read_text())
    doc["extra"]["instance_id"] = "acme__widget-2"
    (out / "trajectory.json").write_text(json.dumps(doc))
    return ["export", "atif", world["run"], "--out-dir", out], out, out / "trajectory.json"


#: (what is in the way, the command and its output folder, and the path its one error line names).
GUARDED = {
    "views --out-dir: the user's own repo_only.md": _views_mine,
    "views --out-dir: another task's views": _views_of_another_task,
    "views --out-dir: another point's views": _views_of_another_point,
    "views --out-dir: this point's views beside the user's raw_trace.md": _views_beside_a_file_of_the_user,
    "grade --out-dir: a foreign result.json": _grade_over_a_foreign_result,
    "grade --out-dir: another instance's result.json": _grade_over_another_instances_result,
    "grade --out-dir: the user's file in a result folder": _grade_into_a_folder_of_the_user,
    "checkpoint --out-dir: the user's files": _checkpoint_into_a_folder_of_the_user,
    "checkpoint --out-dir: another point's checkpoint": _checkpoint_over_another_point,
    "export harbor --out-dir: a task of the same name from another checkpoint": _export_over_a_task_of_another_checkpoint,
    "export harbor --out-dir: the user's folder named as a task": _export_over_a_folder_of_the_user,
    "tasks select --out-dir: the user's dataset named as the selection file": _select_over_the_users_dataset,
    "export atif --out-dir: another run's trajectory.json": _atif_over_another_runs_trajectory,
}


@pytest.mark.parametrize("case", list(GUARDED))
def test_no_command_writes_into_a_folder_it_did_not_create(case, world, tmp_path):  # noqa: F811
    argv, out, named = GUARDED[case](world, tmp_path)
    before = files_under(out)
    done = takeover(*argv)
    assert done.exit_code == 2, (done.stdout, done.stderr)
    assert len(done.errors) == 1 and done.stderr.strip() == done.errors[0], done.stderr
    assert done.errors[0].startswith(f"error: {named}: ") and "nothing was written" in done.errors[0], done.errors
    assert files_under(out) == before
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(".")) == []  # nothing built beside


def test_a_commands_own_output_for_the_same_inputs_is_taken_again(world, tmp_path):  # noqa: F811
    """The rule refuses what is not the command's; its own output for these inputs is reused or replaced."""
    out = tmp_path / "views"
    shutil.copytree(world["cp"] / "views", out)
    done = takeover(*_views(world, out, "repo_only"))
    assert done.exit_code == 0, done.stderr
    assert json.loads((out / "views.json").read_text())["views"]["repo_only"]["file"] == "repo_only.md"
    argv, exported, task = _export(world, tmp_path / "again")
    again = takeover(*argv)
    assert again.exit_code == 0, again.stderr
    assert sorted(p.name for p in exported.iterdir()) == [task.name]


def test_every_command_that_writes_an_output_folder_is_guarded():
    """Each command with --out-dir is in the table above, or writes a single file (listed with its rule)."""
    import typer.main

    commands = {}
    group = typer.main.get_command(app)

    def walk(cmd, prefix=""):
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{prefix}{name} ")
        if any("--out-dir" in getattr(p, "opts", ()) for p in getattr(cmd, "params", ())):
            commands[prefix.strip()] = cmd

    walk(group)
    guarded = {case.split(" --out-dir")[0] for case in GUARDED}
    assert set(commands) - guarded <= SINGLE_FILES.keys(), set(commands) - guarded - SINGLE_FILES.keys()


#: Commands whose --out-dir is not in the table above, and why.
SINGLE_FILES = {
    "points": "DIR/<instance_id>.points.json; a file there that is not this run's points is never replaced: the run "
              "gets DIR/<instance_id>.2.points.json (the next free name)",
    "show": "DIR/NAME.html, the page of a run (left: a file of that name is replaced)",
    "handoff": "DIR/prompt.md (left: a file of that name is replaced)",
    "resume": "a run folder, new for each session and time",
    "agent run": "a run folder: the run's own rule (a folder holding another run is refused)",
    "quickstart": "an experiment's folder: its units' own rule (a unit's output is reused only under its key)",
}
