"""Replayed content the record does not determine is named, and the same on a rerun (docs/protocol.md
section 5.3, extension "Unrecorded output").

A predecessor wrote a program's output into a file (``python3 -c '...uuid4()...' > run_id.txt``, like
``pytest test_dummy.py > pytest_output.txt`` and its timing line): the record shows the command, never the
bytes, and a replay writes other bytes each time. The point after it names the file as unrecorded in
``checkpoint.json``; a second checkpoint of the same point on this machine takes the first replay's bytes
(same patch, same hash); a replay elsewhere (another cache) differs in that file only, and the hash of the
rest of the patch is the same. Files whose content the record shows (a here-document, an ``echo``, an
output later printed with ``cat``) are not named.
"""

from __future__ import annotations

import json

from _output_runs import output_run
from user_commands import takeover

from takeover._util.patches import split_patch
from takeover.points import analyze_run, cut_at_event
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.unrecorded_output import output_targets
from takeover.trajectories import read_trajectory


def test_output_targets_are_the_files_output_is_sent_into():
    assert output_targets("pytest test_dummy.py > pytest_output.txt") == ["pytest_output.txt"]
    assert output_targets("python run.py 2>&1 | tee -a log.txt other.txt && echo ok") == ["log.txt", "other.txt"]
    assert output_targets("make >> 'build log.txt' 2> err.txt; ls >/dev/null") == ["build log.txt", "err.txt"]
    assert output_targets("cat <<'EOF' > x.py\nprint(1)\nEOF") == ["x.py"]
    assert output_targets("grep -n 'a' f.py 2>&1; echo $? >&2") == []


def test_the_point_names_the_unrecorded_file_and_a_rerun_here_gives_the_same_patch(monkeypatch, tmp_path):
    task, source, path, _ = output_run(tmp_path)
    run = read_trajectory(path)
    first = analyze_run(run, task, source, replay=ReplaySettings(timeout=60, use_environment=False))
    assert first.replay.verified, first.replay.reason
    point = first.point("after_first_source_edit")
    assert point.event_index == 8
    # run_id.txt holds output the record never shows; greeting.txt (echo), answer.txt (printed by cat) and
    # check.py (a here-document) hold what the record shows.
    assert point.unrecorded_files == ["run_id.txt"]
    assert {"run_id.txt", "greeting.txt", "answer.txt", "check.py"} <= set(split_patch(first.patches[point.type]))
    again = analyze_run(run, task, source, replay=ReplaySettings(timeout=60, use_environment=False))
    assert again.patches == first.patches and again.point(point.type) == point
    cut = cut_at_event(run, task, 4, source, replay=ReplaySettings(timeout=60, use_environment=False))
    assert cut.point.unrecorded_files == ["run_id.txt"]
    assert split_patch(cut.patch)["run_id.txt"] == split_patch(first.patches[point.type])["run_id.txt"]
    assert cut_at_event(run, task, 0, source, replay=ReplaySettings(timeout=60, use_environment=False)).point.unrecorded_files == []
    # Elsewhere (another machine: another cache), the replay writes other bytes there, and only there.
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "elsewhere"))
    other = analyze_run(run, task, source, replay=ReplaySettings(timeout=60, use_environment=False))
    mine, theirs = split_patch(first.patches[point.type]), split_patch(other.patches[point.type])
    assert mine["run_id.txt"] != theirs["run_id.txt"]
    assert {p: d for p, d in mine.items() if p != "run_id.txt"} == {p: d for p, d in theirs.items() if p != "run_id.txt"}


def test_checkpoint_json_names_the_unrecorded_file_and_two_checkpoints_of_the_point_are_one(tmp_path):
    _, _, run, dataset = output_run(tmp_path)
    records = []
    for name in ("cp-1", "cp-2"):
        done = takeover("checkpoint", run, "--point-type", "after_first_source_edit", "--dataset", dataset,
                        "--mirror", tmp_path / "mirror", "--offline", "--out-dir", tmp_path / name)
        assert done.exit_code == 0, done.stderr
        records.append(json.loads((tmp_path / name / "checkpoint.json").read_text()))
    first, second = records
    assert first["unrecorded_files"] == first["point"]["unrecorded_files"] == ["run_id.txt"]
    assert first["patch_sha256"] == second["patch_sha256"] and first["recorded_patch_sha256"] != first["patch_sha256"]
    assert first["recorded_patch_sha256"] == second["recorded_patch_sha256"]
    assert (tmp_path / "cp-1" / "checkpoint.patch").read_bytes() == (tmp_path / "cp-2" / "checkpoint.patch").read_bytes()
