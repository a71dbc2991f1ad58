"""``takeover rediscovery`` flags on small runs built here (docs/protocol.md section 9.1): the cut as a point
of the predecessor found by replaying it in --mirror (--dataset, --offline, --record), read from a
--points-file, or found in the recorded snapshots of a run whose workspace moved (--snapshot-repo); the
successor's run out of a file holding several (--successor-record) and where it started (--successor-start)."""

from __future__ import annotations

import json
from pathlib import Path

from test_checkpoints import mirror  # noqa: F401  (mirror is a fixture)
from test_cli_points_flags import moved_run
from test_cli_views_flags import widget_run  # noqa: F401  (widget_run is a fixture)
from test_rediscovery_labels import _run, _run_folder, cmd
from typer.testing import CliRunner

from takeover.cli import app


def rediscovery(*args) -> dict:
    result = CliRunner().invoke(app, ["rediscovery", *map(str, args), "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


def refused(*args) -> str:
    """The one-line error of a rediscovery the command refuses (exit status 2)."""
    result = CliRunner().invoke(app, ["rediscovery", *map(str, args), "--json"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, (result.output, result.exception)
    return result.stderr.rstrip("\n")


def labels(record: dict) -> list[tuple[int, str, int | None]]:
    return [(x["event"], x["label"], x["repeats"]) for x in record["labels"]]


def test_point_type_is_found_by_replaying_the_predecessor_in_the_mirror(widget_run, tmp_path, monkeypatch):  # noqa: F811
    """The widget run's first source edit is event 4 (its replay in the mirror says so); the run compared with
    itself from the starting state repeats that edit and the verification before it."""
    run, dataset, mirror_dir = widget_run
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TAKEOVER_MIRROR", raising=False)
    common = [run, run, "--point-type", "after_first_source_edit", "--dataset", dataset, "--successor-start", "base"]
    record = rediscovery(*common, "--mirror", mirror_dir, "--offline", "--record", "0")
    assert record["cut_event"] == 4
    assert labels(record)[:4] == [(0, "redo_edit", 0), (2, "rerun", 2), (4, "redo_edit", 4), (6, "new", None)]
    assert record["figures"]["by_label"] == {"reread": 0, "research": 0, "rerun": 1, "redo_edit": 2, "new": 6}

    # --record picks the run of the predecessor's file: it holds one.
    assert refused(*common, "--mirror", mirror_dir, "--offline", "--record", "1") == (
        f"error: {run}: index 1: has no run 1 (it holds 1)")
    # Without the mirror, --offline refuses to clone the repository from GitHub, and says where it looked.
    (tmp_path / "empty").mkdir()
    unavailable = ("cannot be obtained: {where}, it is not in the cache and network access is off; put a bare "
                   "clone at <mirror>/acme__widget.git (git clone --bare https://github.com/acme/widget.git)")
    sha = json.loads(Path(dataset).read_text())["base_commit"][:12]
    assert refused(*common, "--offline") == "error: acme/widget@" + sha + " " + unavailable.format(
        where="no mirror is given (--mirror or TAKEOVER_MIRROR)")
    assert refused(*common, "--offline", "--mirror", tmp_path / "empty") == "error: acme/widget@" + sha + " " + (
        unavailable.format(where=f"the mirror {tmp_path / 'empty'} has no acme__widget.git"))


def test_points_file_gives_the_cut_without_the_task(widget_run, tmp_path, monkeypatch):  # noqa: F811
    """``takeover points --out-dir`` saves the run's points; --points-file reads the cut from that file, so
    neither the dataset nor the mirror is needed."""
    run, dataset, mirror_dir = widget_run
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    saved = CliRunner().invoke(app, ["points", str(run), "--dataset", str(dataset), "--mirror", str(mirror_dir),
                                     "--offline", "--out-dir", str(tmp_path / "points")])
    assert saved.exit_code == 0, saved.output
    points_file = tmp_path / "points" / "acme__widget-1.points.json"
    events = {p["type"]: p["event_index"] for p in json.loads(points_file.read_text())["points"]}
    assert events == {"after_first_source_edit": 4, "after_first_verification_result": 7,
                      "after_first_post_failure_edit": 10}
    for point_type, event in events.items():
        record = rediscovery(run, run, "--point-type", point_type, "--points-file", points_file)
        assert record["cut_event"] == event, point_type
    # The cut at the post-failure edit (event 10): the successor's own edit there is the one redone.
    late = rediscovery(run, run, "--point-type", "after_first_post_failure_edit", "--points-file", points_file)
    assert [(e, label) for e, label, _ in labels(late) if label != "new"] == [(0, "redo_edit"), (10, "redo_edit")]
    assert refused(run, run, "--point-type", "after_first_source_edit") == (
        "error: --point-type: finding a point needs the task: give --dataset (or --points-file)")


def test_snapshot_repo_finds_the_point_of_a_run_whose_workspace_moved(tmp_path, task_and_mirror, monkeypatch):
    """A run of takeover's own agent keeps a snapshot per event in its workspace's git; the run folder names
    that workspace. After the workspace moves, --snapshot-repo names its new place and the point is found
    from the snapshots, with no mirror to replay in."""
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    task, _ = task_and_mirror
    moved, dataset = moved_run(tmp_path, *task_and_mirror)
    (tmp_path / "empty").mkdir()
    run = tmp_path / "run"
    common = [run, run, "--point-type", "after_first_source_edit", "--dataset", dataset, "--offline",
              "--mirror", tmp_path / "empty"]
    assert refused(*common) == (  # nothing to replay the run in
        f"error: acme/calc@{task.base_commit[:12]} cannot be obtained: the mirror {tmp_path / 'empty'} has no "
        "acme__calc.git, it is not in the cache and network access is off; put a bare clone at "
        "<mirror>/acme__calc.git (git clone --bare https://github.com/acme/calc.git)")
    found = rediscovery(*common, "--snapshot-repo", moved)
    assert found["cut_event"] == 0  # the fix is the run's first action
    assert labels(found) == [(0, "redo_edit", 0), (2, "new", None)]


def _openhands_row(commands: list[str]) -> dict:
    """One OpenHands 0.x ``output.jsonl`` row whose agent runs ``commands`` in /testbed."""
    history = [{"id": 0, "source": "user", "action": "message", "message": "Fix.", "args": {"content": "Fix it."}}]
    for command in commands:
        n = len(history)
        history.append({"id": n, "source": "agent", "action": "run", "message": "Running",
                        "args": {"command": command, "thought": ""}})
        history.append({"id": n + 1, "source": "agent", "observation": "run", "cause": n, "content": "ok\n",
                        "message": "ok", "extras": {"command": command,
                                                    "metadata": {"exit_code": 0, "working_dir": "/testbed"}}})
    return {"instance_id": "acme__calc-1", "instruction": "Fix it.", "metadata": {"llm_config": {"model": "m"}},
            "history": history, "test_result": {"git_patch": ""}}


def test_successor_record_picks_the_successors_run_and_successor_start_its_starting_state(tmp_path):
    """The predecessor reads a.py, then rewrites it (cut after its read). Of the successors' file (two
    OpenHands runs), run 0 lists and reads b.py: nothing the predecessor knew; run 1 reads a.py."""
    pred = _run_folder(tmp_path / "pred", _run([cmd("cat a.py"), cmd("echo hi > a.py"), cmd("ls")]))
    successors = tmp_path / "output.jsonl"
    successors.write_text("".join(json.dumps(_openhands_row(c)) + "\n" for c in (["ls", "cat b.py"], ["cat a.py"])))
    first = rediscovery(pred, successors, "--event", "1", "--successor-record", "0")
    assert labels(first) == [(0, "new", None), (2, "new", None)]
    assert (first["figures"]["actions"], first["figures"]["rediscovery_actions"]) == (2, 0)
    second = rediscovery(pred, successors, "--event", "1", "--successor-record", "1")
    assert labels(second) == [(0, "reread", 0)]
    assert (second["figures"]["actions"], second["figures"]["rediscovery_actions"]) == (1, 1)
    assert refused(pred, successors, "--event", "1") == (
        f"error: {successors}: holds 2 runs; choose one with --successor-record 0..1")
    assert refused(pred, successors, "--event", "1", "--successor-record", "2") == (
        f"error: {successors}: index 2: has no run 2 (it holds 2)")

    # Cut after the rewrite (event 3): a successor that resumed from there reads the rewritten a.py, which
    # the predecessor never read; one that started from the task's starting state rereads what it read.
    succ = _run_folder(tmp_path / "succ", _run([cmd("cat a.py"), cmd("ls")]))
    at_checkpoint = rediscovery(pred, succ, "--event", "3", "--successor-start", "checkpoint")
    assert labels(at_checkpoint) == labels(rediscovery(pred, succ, "--event", "3"))  # the default
    assert labels(at_checkpoint) == [(0, "new", None), (2, "new", None)]
    from_base = rediscovery(pred, succ, "--event", "3", "--successor-start", "base")
    assert labels(from_base) == [(0, "reread", 0), (2, "new", None)]
    assert from_base["figures"]["rediscovery_prompt_tokens"] == 100  # the reread's call
    assert refused(pred, succ, "--event", "3", "--successor-start", "nope") == (
        "error: --successor-start: unknown start 'nope'; expected checkpoint or base")
