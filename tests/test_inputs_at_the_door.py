"""Inputs checked at the door (``takeover.input_schemas``): every input kind, each malformed shape, through the
command a user runs on it. Each gives exit status 2 and one ``error:`` line naming the file, the record (where
the file has records) and the field; nothing is graded, exported or written.

The kinds: dataset rows (swebench 4.x and 5.x, JSON Lines, JSON and Parquet), predictions, points files,
checkpoint folders (their views and their predecessor), and a checkpoint used for another run's views.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _output_runs import output_run
from docker_images import tiny_task
from prerequisites import shared
from test_harbor import _checkpoint
from user_commands import takeover

#: What swebench 5.x rows add to a row (``../shared/data/swebench5/``: test lists as JSON-encoded strings).
FIVE = {"image": "swebench/sweb.eval.x86_64.acme_1776_widget-1:latest", "eval_script": "#!/bin/bash\npytest\n",
        "log_parser": "parse_log_pytest", "eval_type": "pass_and_fail"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A run of acme__widget-1 with its dataset, points file, checkpoint (no workspace) and repo_only view; and
    a checkpoint of the tiny flask task with its views, for ``export harbor``."""
    root = tmp_path_factory.mktemp("door")
    task, source, run, dataset = output_run(root / "widget")
    common = ["--dataset", dataset, "--mirror", source.mirror, "--offline"]
    done = takeover("points", run, *common, "--out-dir", root / "points")
    assert done.exit_code == 0, done.stderr
    cp = root / "cp"
    done = takeover("checkpoint", run, *common, "--point-type", "after_first_source_edit", "--no-workspace",
                    "--out-dir", cp)
    assert done.exit_code == 0, done.stderr
    done = takeover("views", run, "--checkpoint-dir", cp, "--dataset", dataset, "--view", "repo_only")
    assert done.exit_code == 0, done.stderr
    flask, flask_source = tiny_task(root / "flask" / "repo")
    cps, flask_dataset = _checkpoint(root / "flask", flask, flask_source)
    return {"root": root, "task": task, "run": run, "dataset": dataset, "mirror": source.mirror, "cp": cp,
            "points": root / "points" / f"{task.instance_id}.points.json", "flask_cp": cps / "event-3",
            "flask_dataset": flask_dataset, "flask_mirror": flask_source.mirror}


def _rows(world, *, five: bool = False) -> list[dict]:
    row = world["task"].model_dump(mode="json")
    if five:
        row = {**row, **FIVE, "FAIL_TO_PASS": json.dumps(row["FAIL_TO_PASS"]),
               "PASS_TO_PASS": json.dumps(row["PASS_TO_PASS"])}
    other = {**row, "instance_id": "acme__widget-2"}
    return [other, row]


def _without(row: dict, field: str) -> dict:
    return {k: v for k, v in row.items() if k != field}


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _grade_empty(world, dataset: Path, tmp: Path) -> list:
    return ["grade", "--dataset", dataset, "--instance-id", world["task"].instance_id, "--empty", "--offline",
            "--out-dir", tmp / "grades"]


def _dataset_case(fmt: str, change, *, five: bool = False):
    """A case: the dataset's second row changed by ``change`` (a row -> a row, or rows -> rows), graded."""
    def build(world, tmp):
        rows = _rows(world, five=five)
        rows = change(rows) if change.__code__.co_varnames[:1] == ("rows",) else [rows[0], change(rows[1])]
        if fmt == "jsonl":
            path, record = _jsonl(tmp / "tasks.jsonl", rows), f"line {len(rows)}"
        elif fmt == "json":
            path, record = tmp / "tasks.json", f"index {len(rows) - 1}"
            path.write_text(json.dumps(rows, indent=1))
        else:
            path, record = _parquet(tmp / "tasks.parquet", rows), f"row {len(rows) - 1}"
        return _grade_empty(world, path, tmp), path, record
    return build


def _predictions_case(rows_of, record: str, *, suffix: str = ".jsonl"):
    def build(world, tmp):
        iid = world["task"].instance_id
        path = tmp / f"preds{suffix}"
        rows = rows_of(iid)
        if suffix == ".jsonl":
            _jsonl(path, rows)
        else:
            path.write_text(rows)
        return (["grade", "--dataset", world["dataset"], "--predictions", path, "--offline", "--out-dir",
                 tmp / "grades"], path, record)
    return build


def _points_case(change, command: str):
    def build(world, tmp):
        doc = json.loads(world["points"].read_text())
        path = tmp / "points.json"
        path.write_text(json.dumps(change(doc)))
        common = [world["run"], "--dataset", world["dataset"], "--points-file", path, "--point-type",
                  "after_first_source_edit", "--out-dir", tmp / "out"]
        return [command, *common], path, None
    return build


def _flask_copy(world, tmp: Path) -> Path:
    cp = tmp / "cps" / "event-3"
    shutil.copytree(world["flask_cp"], cp, ignore=shutil.ignore_patterns("workspace"))
    return cp


def _export(world, cp: Path, tmp: Path, *views: str) -> list:
    return ["export", "harbor", cp, "--dataset", world["flask_dataset"], "--mirror", world["flask_mirror"],
            "--offline", "--image", "example/tiny:1", *[a for v in views for a in ("--view", v)],
            "--out-dir", tmp / "tasks"]


def _views_of_another_task(world, tmp):
    cp = _flask_copy(world, tmp)
    index = json.loads((cp / "views" / "views.json").read_text())
    (cp / "views" / "views.json").write_text(json.dumps({**index, "instance_id": "pallets__flask-1"}))
    return _export(world, cp, tmp, "repo_only"), cp / "views" / "views.json", None


def _views_of_another_point(world, tmp):
    cp = _flask_copy(world, tmp)
    index = json.loads((cp / "views" / "views.json").read_text())
    index["point"]["event_index"] = 2
    (cp / "views" / "views.json").write_text(json.dumps(index))
    return _export(world, cp, tmp, "repo_only"), cp / "views" / "views.json", None


def _relative_predecessor_in_the_current_folder(world, tmp):
    """The checkpoint names its run by a relative path; the current folder holds another task's file by that
    name: it must not be shipped as the predecessor."""
    cp = _flask_copy(world, tmp / "elsewhere")
    record = json.loads((cp / "checkpoint.json").read_text())
    (cp / "checkpoint.json").write_text(json.dumps({**record, "trajectory": "run.json"}))
    here = tmp / "here"
    here.mkdir()
    shutil.copy(world["run"], here / "run.json")  # acme__widget-1's run, not the flask task's
    return ["--chdir", here, *_export(world, cp, tmp, "raw_trace")], cp / "checkpoint.json", None


def _predecessor_of_another_task(world, tmp):
    cp = _flask_copy(world, tmp)
    record = json.loads((cp / "checkpoint.json").read_text())
    (cp / "checkpoint.json").write_text(json.dumps({**record, "trajectory": str(world["run"])}))
    return _export(world, cp, tmp, "raw_trace"), world["run"], None


def _checkpoint_of_another_task(world, tmp):
    cp = tmp / "cp"
    shutil.copytree(world["cp"], cp, ignore=shutil.ignore_patterns("views"))
    record = json.loads((cp / "checkpoint.json").read_text())
    (cp / "checkpoint.json").write_text(json.dumps({**record, "instance_id": "acme__widget-2"}))
    return (["views", world["run"], "--checkpoint-dir", cp, "--dataset", world["dataset"], "--view", "repo_only",
             "--out-dir", tmp / "views"], cp / "checkpoint.json", None)


F2P = "FAIL_TO_PASS"
#: (case, its command's arguments and the file, the record and the field its one error line names).
CASES = {
    "4.x row without FAIL_TO_PASS": (_dataset_case("jsonl", lambda row: _without(row, F2P)), F2P),
    "4.x row with FAIL_TO_PASS null": (_dataset_case("jsonl", lambda row: {**row, F2P: None}), F2P),
    "4.x row with FAIL_TO_PASS a bare string": (_dataset_case("jsonl", lambda row: {**row, F2P: "test_f"}), F2P),
    "4.x row with FAIL_TO_PASS a list of numbers": (_dataset_case("jsonl", lambda row: {**row, F2P: [1]}), F2P),
    "4.x row without PASS_TO_PASS": (_dataset_case("jsonl", lambda row: _without(row, "PASS_TO_PASS")), "PASS_TO_PASS"),
    "4.x row without base_commit": (_dataset_case("jsonl", lambda row: _without(row, "base_commit")), "base_commit"),
    "4.x row with instance_id a number": (_dataset_case("jsonl", lambda row: {**row, "instance_id": 7}), "instance_id"),
    "4.x row with an empty repo": (_dataset_case("jsonl", lambda row: {**row, "repo": ""}), "repo"),
    "4.x row with test_patch a list": (_dataset_case("jsonl", lambda row: {**row, "test_patch": ["x"]}), "test_patch"),
    "4.x rows, one instance_id twice": (_dataset_case("jsonl", lambda rows: [*rows, rows[1]]), "instance_id"),
    "4.x JSON list without FAIL_TO_PASS": (_dataset_case("json", lambda row: _without(row, F2P)), F2P),
    "4.x JSON list, one instance_id twice": (_dataset_case("json", lambda rows: [*rows, rows[0]]), "instance_id"),
    "5.x row without FAIL_TO_PASS": (_dataset_case("jsonl", lambda row: _without(row, F2P), five=True), F2P),
    "5.x row with FAIL_TO_PASS not JSON": (_dataset_case("jsonl", lambda row: {**row, F2P: "[t"}, five=True), F2P),
    "5.x row with an unknown eval_type": (_dataset_case("jsonl", lambda row: {**row, "eval_type": "both"}, five=True),
                                          "eval_type"),
    "5.x row with eval_script a number": (_dataset_case("jsonl", lambda row: {**row, "eval_script": 3}, five=True),
                                          "eval_script"),
    "5.x Parquet row without FAIL_TO_PASS": (_dataset_case("parquet", lambda row: {**row, F2P: None}, five=True), F2P),
    "5.x Parquet rows, one instance_id twice": (_dataset_case("parquet", lambda rows: [*rows, rows[1]], five=True),
                                                "instance_id"),
    "prediction without model_patch": (_predictions_case(
        lambda iid: [{"instance_id": iid, "model_name_or_path": "m"}], "line 1"), "model_patch"),
    "prediction with model_patch a number": (_predictions_case(
        lambda iid: [{"instance_id": iid, "model_name_or_path": "m", "model_patch": 0}], "line 1"), "model_patch"),
    "prediction with model_name_or_path a list": (_predictions_case(
        lambda iid: [{"instance_id": iid, "model_name_or_path": ["m"], "model_patch": ""}], "line 1"),
        "model_name_or_path"),
    "two predictions for one model and instance": (_predictions_case(
        lambda iid: [{"instance_id": iid, "model_name_or_path": "m", "model_patch": p} for p in ("", "x")],
        "line 2"), "instance_id"),
    "preds.json naming one instance twice": (_predictions_case(
        lambda iid: f'{{"{iid}": {{"model_patch": ""}}, "{iid}": {{"model_patch": "x"}}}}', "key 'acme__widget-1'",
        suffix=".json"), "instance_id"),
    "preds.json whose record names another instance than its key": (_predictions_case(
        lambda iid: json.dumps({iid: {"instance_id": "acme__widget-2", "model_patch": ""}}), "key 'acme__widget-1'",
        suffix=".json"), "instance_id"),
    "points file of another task (views)": (_points_case(lambda d: {**d, "instance_id": "acme__widget-2"}, "views"),
                                            "instance_id"),
    "points file of another task (checkpoint)": (_points_case(lambda d: {**d, "instance_id": "acme__widget-2"},
                                                              "checkpoint"), "instance_id"),
    "points file of another run of the task": (_points_case(lambda d: {**d, "events": d["events"] + 2}, "checkpoint"),
                                               "events"),
    "points file of another trajectory format": (_points_case(lambda d: {**d, "format": "swe-agent"}, "views"),
                                                 "format"),
    "checkpoint folder whose views are another task's": (_views_of_another_task, "instance_id"),
    "checkpoint folder whose views are another point's": (_views_of_another_point, "point.event_index"),
    "relative predecessor path, another task's run in the current folder": (
        _relative_predecessor_in_the_current_folder, "trajectory"),
    "predecessor of another task": (_predecessor_of_another_task, "instance_id"),
    "checkpoint folder of another task (views)": (_checkpoint_of_another_task, "instance_id"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_malformed_input_is_one_line_naming_file_record_and_field_and_nothing_is_written(case, world, tmp_path,
                                                                                          monkeypatch):
    build, field = CASES[case]
    argv, file, record = build(world, tmp_path)
    if argv[0] == "--chdir":
        monkeypatch.chdir(argv[1])
        argv = argv[2:]
    done = takeover(*argv)
    assert done.exit_code == 2, (done.stdout, done.stderr)
    assert len(done.errors) == 1 and done.stderr.strip() == done.errors[0], done.stderr
    line = done.errors[0]
    assert line.startswith(f"error: {file}: "), line
    if record:
        assert line.startswith(f"error: {file}: {record}: "), line
    assert f"field {field!r}" in line, line
    for out in ("grades", "tasks", "out", "views"):
        assert not (tmp_path / out).exists(), f"{out} was written: {line}"


def test_the_messages_a_user_sees(world, tmp_path):
    """The lines the issue asks for, word for word: a row without FAIL_TO_PASS, a points file of another task."""
    rows = _rows(world)
    dataset = _jsonl(tmp_path / "tasks.jsonl", [rows[0], _without(rows[1], F2P)])
    done = takeover(*_grade_empty(world, dataset, tmp_path))
    assert done.errors == [(f"error: {dataset}: line 2: field 'FAIL_TO_PASS': missing: the tests a fix must make pass; "
                           "without them any patch, even the empty one, would be graded resolved")]
    argv, points, _ = _points_case(lambda d: {**d, "instance_id": "acme__widget-2"}, "views")(world, tmp_path)
    done = takeover(*argv)
    assert done.errors == [(f"error: {points}: field 'instance_id': this points file was made for another task: "
                           f"'acme__widget-2', not 'acme__widget-1'; give the points file of this run (takeover "
                           f"points {world['run']} --out-dir DIR)")]


def test_the_shared_datasets_pass_the_door_in_both_formats():
    """The 500 Verified rows as swebench 4.x wrote them and as 5.x does (JSON-encoded test lists, the grading
    fields) all pass the schema: the door refuses malformed rows, not a format."""
    from takeover.sources.tasks import load_tasks

    four = load_tasks(shared("swebench_verified.jsonl"))
    five = load_tasks(next(shared("swebench5").glob("*.parquet")))
    assert len(four) == len(five) == 500
    # The same tests (17 rows list them in another order in 5.x), and every row has some.
    assert {t.instance_id: sorted(t.FAIL_TO_PASS) for t in four} == {t.instance_id: sorted(t.FAIL_TO_PASS) for t in five}
    assert all(t.FAIL_TO_PASS for t in four)


def test_the_inspect_task_refuses_a_checkpoint_whose_views_are_another_tasks(world, tmp_path):
    """The Inspect task reads the same checkpoint folders as ``export harbor``, through the same check."""
    from takeover.errors import InputError
    from takeover.inspect_task.dataset import handoff_samples

    _, index, _ = _views_of_another_task(world, tmp_path)
    with pytest.raises(InputError) as refused:
        handoff_samples(index.parents[1], "repo_only")
    assert (refused.value.path, refused.value.field) == (str(index), "instance_id")
    assert len(handoff_samples(world["flask_cp"], "repo_only")) == 1
