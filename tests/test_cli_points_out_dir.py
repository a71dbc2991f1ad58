"""``takeover points --out-dir``: one file per run, named by instance id, never one run's file replaced by
another run of the same instance (docs/protocol.md section 4.4: what a point records)."""

from __future__ import annotations

from test_checkpoints import _final_patch, mirror  # noqa: F401  (mirror is a fixture)
from test_cli_points_flags import RETURN_2, write_run
from typer.testing import CliRunner

from takeover.cli import app
from takeover.points import RunPoints

WRITE = "python3 -c \"open('pkg/mod.py', 'w').write('def f():\\n    return 2\\n')\""


def test_two_runs_of_one_instance_get_two_files_and_a_rerun_replaces_its_own(mirror, tmp_path):  # noqa: F811
    mirror_dir, task = mirror
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    final = _final_patch(tmp_path, RETURN_2)
    first = write_run(tmp_path / "first.json", task.instance_id, [(WRITE, "", 0)], final)
    second = write_run(tmp_path / "second.json", task.instance_id, [("cat pkg/mod.py", "", 0), (WRITE, "", 0)], final)
    out = tmp_path / "points"
    common = ["--dataset", str(dataset), "--mirror", str(mirror_dir), "--offline", "--no-environment", "--out-dir", str(out)]
    result = CliRunner().invoke(app, ["points", str(first), str(second), *common, "--json"])
    assert result.exit_code == 0, result.output
    saved = {p.name: RunPoints.load(p) for p in sorted(out.iterdir())}
    assert {name: rp.trajectory for name, rp in saved.items()} == {
        f"{task.instance_id}.points.json": str(first), f"{task.instance_id}.2.points.json": str(second)}
    assert [p.event_index for p in saved[f"{task.instance_id}.2.points.json"].points] == [2]
    assert f"another run of {task.instance_id} is in {out}; saved as {task.instance_id}.2.points.json" in result.stderr

    again = CliRunner().invoke(app, ["points", str(second), *common])
    assert again.exit_code == 0, again.output
    assert sorted(p.name for p in out.iterdir()) == sorted(saved)  # the rerun replaced its own file, nothing else
