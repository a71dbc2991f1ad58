"""``takeover points`` and ``takeover checkpoint``: handoff points of predecessor runs and one checkpoint.

A thin layer over :func:`takeover.points.analyze_run` and
:func:`takeover.checkpoints.materialize_checkpoint` (docs/protocol.md sections 3-5).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from takeover.errors import InputError, RepositoryUnavailable, TakeoverError


def _task_index(dataset: Path) -> dict:
    from takeover.tasks import load_tasks

    return {t.instance_id: t for t in load_tasks(dataset)}


def _expanded(paths: list[Path]) -> list[Path]:
    """Folders of trajectories expanded (:func:`takeover.trajectories.registry.expand_paths`); a missing
    path stays, so that reading it reports the error beside the others."""
    from takeover.trajectories.registry import expand_paths

    out: list[Path] = []
    for p in paths:
        out.extend(expand_paths([p]) if p.exists() else [p])
    return out


def points_json(rp) -> dict:
    """The ``takeover points --json`` object of one :class:`~takeover.points.RunPoints`."""
    return {
        "instance_id": rp.instance_id,
        "replay": {"verified": rp.replay.verified, "method": rp.replay.method, "first_mismatch": rp.replay.first_mismatch},
        "points": [
            {"type": p.type, "event_index": p.event_index, "changed_source_files": p.changed_source_files,
             "patch_sha256": p.patch_sha256}
            for p in rp.points
        ],
        "missing": [{"type": m.type, "reason": m.reason} for m in rp.missing],
    }


def _print_run(console, rp, where: str) -> None:
    from rich.markup import escape
    from rich.table import Table

    v = rp.replay
    if v.verified:
        verdict = f"[green]verified[/green] ({v.method})"
    else:
        verdict = f"[red]unreplayable[/red] ({escape(str(v.reason))})"
    console.print(f"[bold]{escape(str(rp.instance_id))}[/bold]  {escape(where)}  {rp.events} events  replay: {verdict}")
    if v.mode or v.interpreter:
        console.print(escape(f"  replay: {v.sandbox}; mode {v.mode}; {v.interpreter}"), style="dim")
    if rp.points:
        table = Table(show_edge=False, pad_edge=False)
        for column, justify in (("point", "left"), ("event", "right"), ("changed source files", "left"),
                                ("patch lines", "right"), ("latest verification", "left")):
            table.add_column(column, justify=justify, overflow="fold")
        for p in rp.points:
            table.add_row(p.type, str(p.event_index), escape(", ".join(p.changed_source_files)) or "-",
                          str(p.patch_lines), escape(p.latest_verification_result or "-"))
        console.print(table)
    for m in rp.missing:
        console.print(f"  [yellow]missing[/yellow] {m.type}: {escape(m.reason)}")


def register(app: typer.Typer) -> None:
    """Add ``takeover points`` and ``takeover checkpoint`` to ``app``."""

    @app.command("points")
    def points(
        files: Annotated[list[Path], typer.Argument(help="Predecessor trajectory files or folders of them (any supported format; other JSON in a folder is skipped with a note).")],
        dataset: Annotated[Path, typer.Option("--dataset", help="SWE-bench dataset file (JSONL/JSON/parquet).")],
        mirror: Annotated[Path | None, typer.Option("--mirror", help="Folder of bare repositories owner__name.git (default: $TAKEOVER_MIRROR).")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="One JSON object per trajectory per line.")] = False,
        out: Annotated[Path | None, typer.Option("--out", help="Also save each run's full result as OUT/<instance_id>.points.json (for --points-file).")] = None,
        snapshot_repo: Annotated[Path | None, typer.Option("--snapshot-repo", help="Repository holding the runs' recorded snapshot trees (our own runs).")] = None,
        timeout: Annotated[float, typer.Option("--timeout", help="Seconds per replayed command.")] = 300.0,
        memory_mb: Annotated[int, typer.Option("--memory-mb", help="Memory limit per replayed command (MiB).")] = 4096,
        no_environment: Annotated[bool, typer.Option("--no-environment", help="Replay with the plain interpreter, not the task's environment.")] = False,
        offline: Annotated[bool, typer.Option("--offline", help="Never clone repositories from GitHub.")] = False,
    ) -> None:
        """Print each run's replay verdict and its handoff points (or why each is missing).

        A run whose instance is not in the dataset, or whose repository cannot be obtained, is reported
        on stderr and skipped. Unreadable files are reported too; the exit status is then 2. When no run
        at all could be analysed (every one skipped), the exit status is 1.

        Example:

            takeover points trajs/*.json --dataset swebench_verified.jsonl --mirror /data/mirror --json
        """
        from rich.console import Console
        from rich.markup import escape

        from takeover import sandbox
        from takeover.points import analyze_run
        from takeover.repos import RepoSource
        from takeover.trajectories import read_trajectories
        from takeover.trajectories.registry import is_unknown_format

        err = Console(stderr=True)
        console = Console()
        tasks = _task_index(dataset)
        source = RepoSource(mirror, allow_network=not offline)
        st = sandbox.status()
        if not st.available:
            err.print(f"[yellow]note:[/yellow] {escape(st.message)}")
        bad = analysed = 0
        for path in _expanded(files):
            try:
                runs = read_trajectories(path)
            except InputError as exc:
                if path not in files and is_unknown_format(exc):  # reports and indexes beside the runs
                    print(f"note: skipped {path}: not a trajectory file of any known format", file=sys.stderr)
                else:
                    print(f"error: {exc}", file=sys.stderr)
                    bad += 1
                continue
            except TakeoverError as exc:
                print(f"error: {exc}", file=sys.stderr)
                bad += 1
                continue
            for traj in runs:
                where = f"{path}" + (f" {traj.record}" if traj.record else "")
                task = tasks.get(traj.instance_id or "")
                if task is None:
                    print(f"skipped: {where}: instance {traj.instance_id!r} is not in {dataset}", file=sys.stderr)
                    continue
                try:
                    rp = analyze_run(traj, task, source, snapshot_repo=snapshot_repo, timeout=timeout,
                                     memory_mb=memory_mb, use_environment=not no_environment)
                except RepositoryUnavailable as exc:
                    print(f"skipped: {where}: {exc}", file=sys.stderr)
                    continue
                analysed += 1
                if out is not None:
                    rp.save(out / f"{rp.instance_id}.points.json")
                if as_json:
                    print(json.dumps(points_json(rp), ensure_ascii=False), flush=True)
                else:
                    _print_run(console, rp, where)
        if bad:
            raise typer.Exit(2)
        if not analysed:
            print("error: no trajectory could be analysed (every run was skipped)", file=sys.stderr)
            raise typer.Exit(1)

    @app.command("checkpoint")
    def checkpoint(
        file: Annotated[Path, typer.Argument(help="Predecessor trajectory file (any supported format).")],
        point: Annotated[str, typer.Option("--point", help="after_first_source_edit, after_first_verification_result or after_first_post_failure_edit.")],
        out: Annotated[Path, typer.Option("--out", help="Checkpoint folder: checkpoint.json, checkpoint.patch, workspace/.")],
        dataset: Annotated[Path, typer.Option("--dataset", help="SWE-bench dataset file (JSONL/JSON/parquet).")],
        mirror: Annotated[Path | None, typer.Option("--mirror", help="Folder of bare repositories owner__name.git (default: $TAKEOVER_MIRROR).")] = None,
        state: Annotated[bool, typer.Option("--state", help="Grade the checkpoint and record its handoff state (docs/protocol.md section 6).")] = False,
        record: Annotated[int | None, typer.Option("--record", help="0-based index of the run when FILE holds several.")] = None,
        points_file: Annotated[Path | None, typer.Option("--points-file", help="Saved result of takeover points --out for this run (no replay).")] = None,
        snapshot_repo: Annotated[Path | None, typer.Option("--snapshot-repo", help="Repository holding the run's recorded snapshot trees.")] = None,
        no_workspace: Annotated[bool, typer.Option("--no-workspace", help="Write checkpoint.json and checkpoint.patch only.")] = False,
        timeout: Annotated[float, typer.Option("--timeout", help="Seconds per replayed command.")] = 300.0,
        offline: Annotated[bool, typer.Option("--offline", help="Never clone repositories from GitHub.")] = False,
    ) -> None:
        """Materialize one checkpoint: base_commit + the run's cumulative diff at the handoff point.

        Example:

            takeover checkpoint trajs/psf__requests-1766.json --point after_first_source_edit \\
              --dataset swebench_verified.jsonl --mirror /data/mirror --out cp/ --state
        """
        from rich.console import Console
        from rich.markup import escape

        from takeover.checkpoints import materialize_checkpoint
        from takeover.points import RunPoints, analyze_run, checkpoint_method
        from takeover.repos import RepoSource
        from takeover.trajectories import read_trajectories
        from takeover.vocabulary import POINT_TYPES

        if point not in POINT_TYPES:
            raise InputError("--point", f"unknown point type {point!r}; expected one of {', '.join(POINT_TYPES)}")
        runs = read_trajectories(file)
        if record is None and len(runs) != 1:
            raise InputError(file, f"holds {len(runs)} runs; choose one with --record 0..{len(runs) - 1}")
        index = record or 0
        if not 0 <= index < len(runs):
            raise InputError(file, f"has no run {index} (it holds {len(runs)})", record=f"index {index}")
        traj = runs[index]
        task = _task_index(dataset).get(traj.instance_id or "")
        if task is None:
            raise InputError(file, f"instance {traj.instance_id!r} is not in {dataset}", field="instance_id")
        source = RepoSource(mirror, allow_network=not offline)
        rp = RunPoints.load(points_file) if points_file else analyze_run(
            traj, task, source, snapshot_repo=snapshot_repo, timeout=timeout)
        found = rp.point(point)
        if found is None:
            reason = next((m.reason for m in rp.missing if m.type == point), "not found")
            Console(stderr=True).print(f"[red]no {point} point in this run:[/red] {escape(reason)}")
            raise typer.Exit(1)
        patch = rp.patches.get(point, "")
        cp = materialize_checkpoint(task, traj, found, patch, out, checkpoint_method(rp.replay),
                                    repo_source=source, workspace=not no_workspace)
        if state:
            from takeover.grading import grade_handoff_state

            cp.handoff_state = grade_handoff_state(task, patch, repo_source=source)
            cp.save(out)
        console = Console()
        console.print(f"[bold]{escape(cp.instance_id)}[/bold] {point} at event {found.event_index} ({cp.method})")
        console.print(f"  files: {escape(', '.join(cp.files)) or '(none)'}")
        console.print(f"  patch sha256 {cp.patch_sha256[:16]}..., {found.patch_lines} lines")
        if cp.handoff_state:
            console.print(f"  handoff state: {cp.handoff_state}")
        console.print(escape(f"  wrote {out / 'checkpoint.json'}, {out / 'checkpoint.patch'}"
                             + (f", {cp.workspace}" if cp.workspace else "")))
