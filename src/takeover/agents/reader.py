"""Read a run directory written by :mod:`takeover.agents.runner` back as a :class:`Trajectory`.

Format name ``takeover``. Two entry points, both registered with the trajectory reader registry (issue 2),
so ``takeover inspect RUN_DIR`` and ``takeover inspect RUN_DIR/events.jsonl`` work, and handoff point
detection reads recorded snapshots instead of replaying (docs/protocol.md section 5 source (a)):

- ``takeover-dir``: a directory holding ``run.json`` (a :class:`RunRecord`) and ``events.jsonl``;
- ``takeover``: the ``events.jsonl`` file itself (JSON Lines of :class:`Event`; its folder must hold
  ``run.json``).

The trajectory's ``metadata`` carries ``snapshot_repo`` (the run's workspace, whose git objects hold every
``Event.snapshot`` tree), ``run_dir``, ``repo``, ``base_commit``, ``kind``, ``usage`` and the run's
accounting. ``final_patch`` is ``patch.diff``; ``task_prompt`` is ``prompt.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

from takeover.agents.records import RunRecord
from takeover.errors import InputError
from takeover.trajectories.events import Event, LLMCall, Trajectory

FORMAT = "takeover"
FORMAT_VERSION = "takeover-run-1"
_EVENT_KEYS = {"index", "kind", "source", "type", "snapshot", "llm_call", "format_error"}


def _jsonl(path: Path, model):
    rows = []
    if not path.exists():
        return rows
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rows.append(model.model_validate(json.loads(line)))
            except json.JSONDecodeError as exc:
                raise InputError(
                    path, f"not valid JSON ({exc.msg} at column {exc.colno})", record=f"line {lineno}"
                ) from None
            except ValueError as exc:
                err = getattr(exc, "errors", lambda: [{}])()[0]
                field = ".".join(str(p) for p in err.get("loc", ())) or None
                raise InputError(
                    path, err.get("msg", str(exc).splitlines()[0]), record=f"line {lineno}", field=field
                ) from None
    return rows


def load_record(run_dir: Path | str) -> RunRecord:
    """The :class:`RunRecord` of a run directory.

    Raises:
        InputError: ``run.json`` is missing or is not a run record.
    """
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        raise InputError(path, "missing: not a takeover run directory")
    try:
        return RunRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(path, f"not a run record ({str(exc).splitlines()[0]})") from None


def read_run(run_dir: Path | str) -> Trajectory:
    """The :class:`Trajectory` of a run directory (also of a crashed run: whatever was flushed).

    Raises:
        InputError: ``run.json``, ``events.jsonl`` or ``calls.jsonl`` is damaged (names file, line, field).
    """
    run_dir = Path(run_dir)
    record = load_record(run_dir)
    events = _jsonl(run_dir / "events.jsonl", Event)
    calls = _jsonl(run_dir / "calls.jsonl", LLMCall)
    for i, ev in enumerate(events):
        if ev.index != i:
            raise InputError(
                run_dir / "events.jsonl",
                f"event index {ev.index} where {i} was expected",
                record=f"line {i + 1}",
                field="index",
            )
    patch = run_dir / "patch.diff"
    prompt = run_dir / "prompt.md"
    return Trajectory(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        source_path=str(run_dir / "events.jsonl"),
        instance_id=record.instance_id,
        model=record.model.get("name"),
        exit_status=record.exit_status.value if record.exit_status else None,
        task_prompt=prompt.read_text(encoding="utf-8") if prompt.exists() else None,
        final_patch=patch.read_bytes().decode("utf-8", "surrogateescape") if patch.exists() else None,
        working_dir=record.command_root or (record.workspace if record.backend == "local" else "/testbed"),
        events=events,
        llm_calls=calls,
        metadata={
            "run_dir": str(run_dir),
            "snapshot_repo": record.workspace,
            "repo": record.repo,
            "base_commit": record.base_commit,
            "kind": record.kind,
            "usage": record.accounting.usage,
            "finished": record.finished,
            "accounting": record.accounting.model_dump(mode="json"),
            "origin": record.origin.model_dump(mode="json") if record.origin else None,
        },
    )


# -- registry hooks (issue 2) -------------------------------------------------------------------------


def _detect_dir(source) -> bool:
    run_json = source.path / "run.json"
    if not (run_json.is_file() and (source.path / "events.jsonl").exists()):
        return False
    try:
        data = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and {"run_id", "kind", "accounting", "limits"} <= set(data)


def _detect_events(source) -> bool:
    try:
        first = source.first()
    except InputError:
        return False
    return (
        isinstance(first, dict) and _EVENT_KEYS <= set(first) and (source.path.parent / "run.json").is_file()
    )


def _read_dir(source) -> list[Trajectory]:
    return [read_run(source.path)]


def _read_events(source) -> list[Trajectory]:
    return [read_run(source.path.parent)]


def _readers():
    from takeover.trajectories.registry import Reader

    return [
        Reader(
            name="takeover",
            detect=_detect_events,
            read=_read_events,
            priority=5,
            description="events.jsonl of a takeover agent run (run.json beside it)",
        ),
        Reader(
            name="takeover-dir",
            detect=_detect_dir,
            read=_read_dir,
            priority=5,
            directories=True,
            description="a takeover agent run directory (run.json + events.jsonl)",
        ),
    ]


def register() -> None:
    """Register both readers (idempotent)."""
    from takeover.trajectories.registry import register_reader

    for reader in _readers():
        register_reader(reader, replace=True)


try:
    READERS = _readers()
except ImportError:  # the registry is not available: read_run still works
    READERS = []
