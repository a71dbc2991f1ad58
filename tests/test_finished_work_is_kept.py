"""No command destroys finished work (docs/protocol.md section 5): a checkpoint folder that holds another
point's checkpoint is refused before any work and left byte for byte as it was, a rerun of the same
checkpoint keeps it, and of two checkpoints written into one folder at once one is kept whole."""

from __future__ import annotations

import threading

from test_checkpoints import _final_patch, _steps, analyzed, mirror  # noqa: F401  (fixtures)
from test_cli_points_flags import write_run
from user_commands import files_under, takeover

from takeover.checkpoints import load_checkpoint, materialize_checkpoint
from takeover.errors import InputError
from takeover.points import checkpoint_method


def test_a_checkpoint_folder_holding_another_point_is_refused_and_left_unchanged(mirror, tmp_path):  # noqa: F811
    mirror_dir, task = mirror
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    run = write_run(tmp_path / "run.json", task.instance_id, _steps(),
                    _final_patch(tmp_path, {"pkg/mod.py": "def f():\n    return 2\n"}))
    common = [run, "--dataset", dataset, "--mirror", mirror_dir, "--offline", "--replay-timeout", "60"]
    cp = tmp_path / "cp"
    first = takeover("checkpoint", *common, "--point-type", "after_first_source_edit", "--out-dir", cp)
    assert first.exit_code == 0, first.stderr
    assert "+    return 3" in (cp / "checkpoint.patch").read_text()
    before = files_under(tmp_path)

    other = takeover("checkpoint", *common, "--point-type", "after_first_post_failure_edit", "--out-dir", cp)
    assert other.exit_code == 2
    assert other.errors == [(f"error: {cp}: holds the checkpoint of acme__widget-1 after_first_source_edit "
                            "(event 4); nothing was written: give another --out-dir for acme__widget-1 "
                            "after_first_post_failure_edit, or remove this one")]
    assert files_under(tmp_path) == before

    # The same checkpoint again is kept (its verified workspace reused), and is still readable.
    again = takeover("checkpoint", *common, "--point-type", "after_first_source_edit", "--out-dir", cp)
    assert again.exit_code == 0, again.stderr
    def checkpoint_files(found):  # the verification's git index cache in workspace/.git is not the checkpoint
        return {p: h for p, (h, _) in found.items() if p.startswith(f"{cp}/") and "/.git/" not in p}

    assert checkpoint_files(files_under(cp)) == checkpoint_files(before)
    # Nothing is left beside the folder by either build.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".cp")) == []

    # A folder of files that are not a checkpoint is refused too, before the replay.
    stray = tmp_path / "notes"
    stray.mkdir()
    (stray / "todo.txt").write_text("mine\n")
    kept = files_under(tmp_path)
    refused = takeover("checkpoint", *common, "--point-type", "after_first_source_edit", "--out-dir", stray)
    assert refused.exit_code == 2
    assert refused.errors == [(f"error: {stray}: is not empty and holds no readable checkpoint.json; nothing was "
                              "written: give a new or empty --out-dir")]
    assert files_under(tmp_path) == kept


def test_of_two_concurrent_checkpoints_into_one_folder_one_is_kept_whole(analyzed, tmp_path):  # noqa: F811
    task, source, traj, rp = analyzed
    out = tmp_path / "cp"
    outcomes: dict[str, object] = {}

    def write(point_type: str) -> None:
        point = rp.point(point_type)
        try:
            outcomes[point_type] = materialize_checkpoint(task, traj, point, rp.patches[point_type], out,
                                                          checkpoint_method(rp.replay), repo_source=source)
        except InputError as exc:
            outcomes[point_type] = exc

    threads = [threading.Thread(target=write, args=(p,)) for p in ("after_first_source_edit",
                                                                   "after_first_post_failure_edit")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    kept = [p for p, o in outcomes.items() if not isinstance(o, InputError)]
    refused = [o for o in outcomes.values() if isinstance(o, InputError)]
    assert len(kept) == 1 and len(refused) == 1
    checkpoint, patch = load_checkpoint(out)  # whole and readable: its patch matches its record
    assert checkpoint.point.type == kept[0] and patch == rp.patches[kept[0]]
    assert [p.name for p in tmp_path.iterdir()] == ["cp"]  # nothing left beside it
