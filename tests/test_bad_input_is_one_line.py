"""Every bad input is one line naming the file, the record and the field, with exit status 2 and no
traceback, and the files that were there before are left as they were: bytes that are not UTF-8 in a
dataset, a predictions file or an experiment file, an output location that cannot be written (checked
before the work), a worker count below one; a dataset or a selection that holds nothing; a trajectory
field of the wrong type, and the reason a trajectory file of an experiment could not be imported."""

from __future__ import annotations

import json

import pytest
from test_claude_code import Log, tool, usage
from user_commands import files_under, takeover

HERE_TASK = {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": "0" * 40,
             "problem_statement": "sub adds", "difficulty": "15 min - 1 hour", "FAIL_TO_PASS": [],
             "PASS_TO_PASS": []}


def _write_dataset(folder, name="tasks.jsonl", tasks=(HERE_TASK,)):
    path = folder / name
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def _experiment(folder, name="e.toml", extra_dataset="", dataset="tasks.jsonl"):
    path = folder / name
    path.write_text(f'out_dir = "out"\noffline = true\n[dataset]\npath = "{dataset}"\n{extra_dataset}'
                    '[predecessor]\ntrajectories = ["runs"]\n[[successors]]\nmodel = "m"\n'
                    'base_url = "http://127.0.0.1:9/v1"\n')
    return path


def test_non_utf8_inputs_unwritable_outputs_and_bad_worker_counts_are_one_line(tmp_path):
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_bytes(json.dumps(HERE_TASK).replace("sub adds", "caf\\u00e9").encode()
                        .replace(b"caf\\u00e9", b"caf\xe9") + b"\n")
    column = dataset.read_bytes().index(b"\xe9")
    predictions = tmp_path / "preds.jsonl"
    predictions.write_bytes(b'{"instance_id": "acme__calc-1", "model_patch": "\xff"}\n')
    experiment = tmp_path / "e.toml"
    experiment.write_bytes(b'name = "caf\xe9"\n')
    run = tmp_path / "run.json"
    run.write_text("{}")
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n")
    before = files_under(tmp_path)

    bad_dataset = f"error: {dataset}: line 1: not UTF-8 text (byte {column}, column {column + 1})"
    cases = [
        (["points", run, "--dataset", dataset], bad_dataset),
        (["grade", "--dataset", dataset, "--gold", "--instance-id", "acme__calc-1", "--out-dir", tmp_path / "g"],
         bad_dataset),
        (["tasks", "select", "--dataset", dataset, "--out-dir", tmp_path / "sel"], bad_dataset),
        (["run", experiment], f"error: {experiment}: line 1: not UTF-8 text (byte 11, column 12)"),
        # The output location is checked before the dataset is read and before any replay.
        (["points", run, "--dataset", dataset, "--out-dir", a_file / "points"],
         (f"error: {a_file / 'points'}: cannot be written: {a_file} is a file, not a folder; give --out-dir "
         "another location")),
        (["checkpoint", run, "--dataset", dataset, "--point-type", "after_first_source_edit", "--out-dir",
          a_file / "cp"], (f"error: {a_file / 'cp'}: cannot be written: {a_file} is a file, not a folder; give "
         "--out-dir another location")),
        (["report", a_file / "out"], (f"error: {a_file / 'out'}: cannot be written: {a_file} is a file, not a "
         "folder; give another location")),
    ]
    for args, line in cases:
        done = takeover(*args)
        assert (done.exit_code, done.errors) == (2, [line]), args
    good = _write_dataset(tmp_path, "good.jsonl")
    graded = takeover("grade", "--dataset", good, "--predictions", predictions, "--out-dir", tmp_path / "g")
    assert (graded.exit_code, graded.errors) == (2, [(f"error: {predictions}: line 1: not UTF-8 text (byte 48, "
                                                     "column 49)")])
    for workers in ("-3", "0"):
        refused = takeover("run", _experiment(tmp_path, "workers.toml", dataset="good.jsonl"), "--workers", workers)
        assert refused.exit_code == 2 and "Invalid value for '--workers'" in refused.stderr
        assert "greater than or equal to 1" in " ".join(refused.stderr.replace("│", " ").split())
    assert {p: v for p, v in files_under(tmp_path).items() if p in before} == before
    assert not (tmp_path / "out").exists() and not (tmp_path / "g").exists()


def test_an_empty_dataset_a_selection_of_nothing_and_a_missing_mirror_are_said(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    dataset = _write_dataset(tmp_path)
    (tmp_path / "runs").mkdir()
    before = files_under(tmp_path)

    graded = takeover("grade", "--dataset", empty, "--gold", "--instance-id", "acme__calc-1",
                      "--out-dir", tmp_path / "g")
    assert (graded.exit_code, graded.errors) == (2, [f"error: {empty}: holds no tasks (an empty dataset)"])
    nothing = takeover("run", _experiment(tmp_path, "none.toml", 'difficulties = ["1-4 hours"]\n'), "--no-progress")
    assert nothing.exit_code == 2
    assert nothing.errors == [(f"error: {dataset}: field 'dataset': the experiment selects no task: the dataset "
                              "holds 1 task(s); 0 with an imported trajectory (0 run(s) imported)")]
    assert "Every planned unit is done" not in nothing.stdout

    missing = takeover("grade", "--dataset", dataset, "--gold", "--instance-id", "acme__calc-1", "--offline",
                       "--mirror", tmp_path / "no-such-mirror", "--out-dir", tmp_path / "g")
    assert missing.exit_code == 1
    assert f"the mirror folder {tmp_path / 'no-such-mirror'} does not exist" in missing.stdout
    assert {p: v for p, v in files_under(tmp_path).items() if p in before} == before


@pytest.mark.parametrize(("damage", "line"), [
    (lambda d: d["info"].update(submission=["diff"]), "field 'info.submission': expected string, got array"),
    (lambda d: d.update(messages="hello"), "field 'messages': expected array, got string"),
    (lambda d: d["messages"][1].update(role=None), "messages[1]: field 'role': expected string, got null"),
])
def test_a_trajectory_field_of_the_wrong_type_is_named_with_the_type(tmp_path, damage, line):
    doc = {"instance_id": "acme__calc-1", "trajectory_format": "mini-swe-agent-1",
           "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "fix"},
                        {"role": "assistant", "content": "THOUGHT: go\n\n```bash\nls\n```"}],
           "info": {"exit_status": "Submitted", "submission": ""}}
    damage(doc)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    before = files_under(tmp_path)
    done = takeover("inspect", path)
    assert (done.exit_code, done.errors) == (2, [f"error: {path}: {line}"])
    assert files_under(tmp_path) == before


def test_a_claude_code_bash_command_that_is_a_list_is_named(tmp_path):
    log = Log()
    log.user("Run the tests.")
    log.assistant("msg_1", [tool("t1", "Bash", command=["pytest", "-q"])], usage(1, 2, 3, 85))
    log.result("t1", "ok")
    path = log.write(tmp_path / "session.jsonl")
    done = takeover("inspect", path)
    assert (done.exit_code, done.errors) == (
        2, [f"error: {path}: line 2: field 'message.content[0].input.command': expected string, got array"])


def test_the_reason_a_trajectory_file_was_not_imported_reaches_the_run_and_the_report(tmp_path):
    _write_dataset(tmp_path)
    (tmp_path / "runs").mkdir()
    damaged = tmp_path / "runs" / "acme__calc-1.traj.json"
    damaged.write_text('{"instance_id": "acme__calc-1", "messages": [')
    experiment = _experiment(tmp_path, extra_dataset='instance_ids = ["acme__calc-1"]\n')
    before = files_under(tmp_path)
    done = takeover("run", experiment, "--no-progress")
    reason = (f"{damaged}: line 1: not valid JSON: Expecting value at column 46 (truncated or malformed file)")
    assert done.exit_code == 1, done.stderr
    assert f"acme__calc-1: its trajectory file could not be read: {reason}" in done.stdout
    assert "Nothing was planned: no selected instance has a predecessor run" in done.stdout
    report = (tmp_path / "out" / "report.md").read_text()
    assert f"## Runs not imported\n\n- acme__calc-1: its trajectory file could not be read: {reason}\n" in report
    assert (tmp_path / "out" / "import_notes.txt").read_text() == f"skipped {reason}\n"
    assert {p: v for p, v in files_under(tmp_path).items() if p in before} == before
