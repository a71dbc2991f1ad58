"""Handoff points as Harbor tasks: one task folder per (checkpoint, view) (docs/protocol.md section 8.6).

A Harbor task (Harbor 0.22 or later) is a folder::

    <instance_id>__<point_type>-<event_index>__<view>/
    ├── task.toml            # [metadata] names the point, the view and the predecessor; [verifier] timeout
    ├── instruction.md       # the view's takeover prompt: the checkpoint's views/<view>.md, as it is
    ├── trajectory.json      # raw_trace only: the predecessor's run up to the cut, ATIF, every step copied context
    ├── solution/solve.sh    # Harbor's oracle only: the checkpoint's patch undone, the gold patch applied
    ├── environment/
    │   ├── Dockerfile       # FROM the task's SWE-bench image; the checkpoint's repository at /testbed
    │   ├── freeze.sh        # /testbed's history cut to its starting commit and base_commit (section 5.5)
    │   └── checkpoint.patch
    └── tests/
        ├── test.sh          # final patch, SWE-bench's eval script, the verdict -> /logs/verifier
        ├── eval.sh          # swebench's eval script of the instance (test patch, test command, markers)
        ├── config.json      # instance_id, FAIL_TO_PASS, PASS_TO_PASS, the log parser's name
        ├── swebench_verdict.py  # takeover's verdict (swebench's grading rules), stdlib only: generated from
        │                        # takeover.grading.swebench_rules (:func:`verdict_script`)
        └── swebench/...     # swebench's own Python log parsers, copied from the installed swebench

The verifier writes ``/logs/verifier/reward.txt`` (``1`` resolved, ``0`` not), ``report.json`` (per-test
outcomes in swebench's report shape), ``test_output.log`` and ``final.patch`` (the repository against its
starting commit, untracked files included). :mod:`takeover.report.harbor_jobs` reads the trials back.
"""

from __future__ import annotations

import ast
import json
import shlex
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from takeover import __version__
from takeover._util import harness_version
from takeover._util.folders import building_beside, own_output, replace_whole
from takeover._util.io import atomic_write_json, atomic_write_text, read_text
from takeover.checkpoints import Checkpoint, load_checkpoint
from takeover.environments.official_image import instance_image_name, official_test_spec
from takeover.errors import EnvironmentUnavailable, InputError, TakeoverError
from takeover.grading import swebench_rules
from takeover.grading.log_parsing import resolve_log_parser, task_eval_type
from takeover.grading.seeds import seed_export
from takeover.grading_settings import GradingSettings
from takeover.harbor.predecessor_trace import predecessor_atif
from takeover.repository_states.snapshots import DIFF_ARGS
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.views import HANDOFF_VIEWS, built_views
from takeover.views.folder import refuse_other_checkpoint_views

#: The verdict script's name in a task's ``tests/`` (generated: :func:`verdict_script`).
VERDICT_SCRIPT = "swebench_verdict.py"
#: The line of the verdict script's entry point that imports the rules, replaced by the rules themselves.
_RULES_IMPORT = "from takeover.grading.swebench_rules import"
#: Where the verifier finds the frozen starting commit (written by ``freeze.sh`` at build time).
STARTING_COMMIT_FILE = "/var/lib/takeover/starting_commit"
#: The view whose task also ships the predecessor's trajectory (docs/protocol.md section 7).
RAW_TRACE = "raw_trace"
_SWEBENCH_PARSERS = "swebench.harness.log_parsers"
#: Stand-ins for the swebench names the Python log parsers import (the parsers use no other): ``TestStatus``,
#: and ``TestSpec`` from 4.1's or 5.0's module.
_SHIMS = {
    "swebench/__init__.py": "",
    "swebench/harness/__init__.py": "",
    "swebench/harness/constants.py": (
        "from enum import Enum\n\n\nclass TestStatus(Enum):\n    FAILED = 'FAILED'\n    PASSED = 'PASSED'\n"
        "    SKIPPED = 'SKIPPED'\n    ERROR = 'ERROR'\n    XFAIL = 'XFAIL'\n"),
    "swebench/harness/test_spec/__init__.py": "",
    "swebench/harness/test_spec/test_spec.py": "class TestSpec(object):\n    pass\n",
    "swebench/harness/log_parsers/__init__.py": "",
    "swebench/types.py": "class TestSpec(object):\n    pass\n",  # where swebench 5.0's parsers import it
}

FREEZE_SH = """#!/bin/bash
# takeover: /testbed keeps only its starting commit (HEAD) and base_commit, each without parents, and no other
# ref, so the successor sees the repository up to its base commit and nothing later (docs/protocol.md
# section 5.5). Then the checkpoint's patch is applied to the working tree.
set -euo pipefail
base="$1"
cd /testbed
git config --global --add safe.directory /testbed
head=$(git rev-parse HEAD)
branch=$(git symbolic-ref -q --short HEAD || echo main)
git config uploadpack.allowAnySHA1InWant true
frozen=$(mktemp -d)
git init -q "$frozen"
git -C "$frozen" fetch -q --depth 1 "file:///testbed" "$head" "$base"
rm -rf /testbed/.git
mv "$frozen/.git" /testbed/.git
rmdir "$frozen"
git update-ref "refs/heads/$branch" "$head"
git symbolic-ref HEAD "refs/heads/$branch"
git reset -q
git reflog expire --expire=now --all
# No gc: base_commit is reachable from no ref (HEAD's parent link is cut), and a prune would drop it.
git cat-file -e "$base^{commit}"
mkdir -p "$(dirname {starting})"
echo "$head" > {starting}
if [ -s /takeover/checkpoint.patch ]; then
  git apply --binary --whitespace=nowarn /takeover/checkpoint.patch
fi
""".replace("{starting}", STARTING_COMMIT_FILE)

SOLVE_SH = """#!/bin/bash
# takeover: the reference solution, for Harbor's oracle agent only (never shown to a successor): the
# checkpoint's edits undone, SWE-bench's gold patch applied.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd /testbed
if [ -s "$here/checkpoint.patch" ]; then
  git apply -R --binary --whitespace=nowarn "$here/checkpoint.patch"
fi
git apply --binary --whitespace=nowarn "$here/gold.patch"
"""

TEST_SH = """#!/bin/bash
# takeover: SWE-bench's evaluation of the repository the agent left at /testbed (docs/protocol.md section 6).
# A verdict that cannot be reached writes no reward: Harbor then reports the trial's verifier as failed.
set -uo pipefail
out=/logs/verifier
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
cd /testbed
git config --global --add safe.directory /testbed >/dev/null 2>&1 || true
start=$(cat {starting} 2>/dev/null || echo {base})
# The final patch: the working tree, untracked files included, against the starting commit.
git add -A >/dev/null 2>&1 && {diff} "$start" > "$out/final.patch"
git reset -q >/dev/null 2>&1
{seed}
bash "$here/eval.sh" > "$out/test_output.log" 2>&1
python=/usr/bin/python3
[ -x "$python" ] || python=python3
"$python" "$here/swebench_verdict.py" "$here/config.json" "$out/test_output.log" "$out"
"""


def task_name(checkpoint: Checkpoint, view: str) -> str:
    """The task folder's name: ``<instance_id>__<point_type>-<event_index>__<view>``."""
    return f"{checkpoint.instance_id}__{checkpoint.point.type}-{checkpoint.point.event_index}__{view}"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML basic string


def task_toml(metadata: dict[str, Any], *, verifier_timeout: float, agent_timeout: float | None) -> str:
    """``task.toml``: schema 1.4, ``[metadata]`` (None values left out), the verifier's and agent's time limits."""
    lines = ['schema_version = "1.4"', "", "[metadata]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in metadata.items() if v is not None]
    lines += ["", "[verifier]", f"timeout_sec = {float(verifier_timeout)!r}"]
    lines += ["", "[agent]"] + ([f"timeout_sec = {float(agent_timeout)!r}"] if agent_timeout else [])
    lines += ["", "[environment]", "build_timeout_sec = 1800.0", 'workdir = "/testbed"']
    return "\n".join(lines) + "\n"


def task_metadata(checkpoint: Checkpoint, folder: Path, view: str) -> dict[str, Any]:
    """The task's ``[metadata]``: the point (``point_key`` pairs its views), the view and the predecessor."""
    point = checkpoint.point
    return {
        "exported_by": f"takeover {__version__}", "instance_id": checkpoint.instance_id, "repo": checkpoint.repo,
        "base_commit": checkpoint.base_commit, "point_type": point.type, "event_index": point.event_index,
        "point_key": f"{checkpoint.instance_id}@{point.type}:{point.event_index}", "view": view,
        "handoff_state": checkpoint.handoff_state, "checkpoint_dir": str(folder.resolve()),
        "checkpoint_patch_sha256": checkpoint.patch_sha256, "predecessor_trajectory": checkpoint.trajectory,
        "predecessor_record": checkpoint.trajectory_record,
    }


def _parser_files(task: SourceTask) -> tuple[dict[str, str], str]:
    parser = resolve_log_parser(None, task.repo)
    if parser.__module__ != f"{_SWEBENCH_PARSERS}.python":
        raise EnvironmentUnavailable(f"{task.instance_id}: {task.repo}'s log parser {parser.__name__} is not one of "
                                     "swebench's Python parsers; only Python tasks are exported to Harbor")
    source = resources.files(_SWEBENCH_PARSERS).joinpath("python.py").read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("swebench"):
            shim = f"{node.module.replace('.', '/')}.py"
            names = {a.name for a in node.names}
            if shim not in _SHIMS or not all(f"class {n}(" in _SHIMS[shim] for n in names):
                raise EnvironmentUnavailable(f"swebench's log parsers import {', '.join(sorted(names))} from "
                                             f"{node.module}, which the Harbor verifier does not provide")
    return {**_SHIMS, "swebench/harness/log_parsers/python.py": source}, parser.__name__


def _check_view(folder: Path, view: str, checkpoint: Checkpoint) -> None:
    """Refuse an unknown view, one not built for the checkpoint ``folder`` (``views/<view>.md``), or a views
    folder whose ``views.json`` names another task, point or checkpoint patch (docs/protocol.md section 5.5):
    its prompts are another checkpoint's. Any view that was built is exported (a view file's by the name it
    declares)."""
    prompt = folder / "views" / f"{view}.md"
    if not prompt.is_file() and view not in HANDOFF_VIEWS:
        raise InputError("--view", f"unknown view {view!r}: no views/{view}.md in {folder}, and no registered view "
                         f"has that name ({HANDOFF_VIEWS.choices()})")
    if not prompt.is_file():
        raise InputError(prompt, f"view {view} was not built for this checkpoint; build it with "
                         f"takeover views RUN --checkpoint-dir {folder} --view {view}")
    refuse_other_checkpoint_views(folder, checkpoint)


def _held_task(dest: Path) -> dict[str, Any] | None:
    """The ``[metadata]`` of the task folder ``dest`` when takeover exported it, else ``None``."""
    try:
        metadata = tomllib.loads((dest / "task.toml").read_text(encoding="utf-8")).get("metadata")
    except (OSError, ValueError):
        return None
    ok = isinstance(metadata, dict) and str(metadata.get("exported_by", "")).startswith("takeover")
    return metadata if ok else None


def refuse_other_task(dest: Path, checkpoint: Checkpoint, view: str) -> dict[str, Any] | None:
    """The ``[metadata]`` of the task folder ``dest`` when it is this (checkpoint, view)'s earlier export (the
    same instance, point, view and checkpoint patch: replaced whole), or ``None`` for a new folder: the rule
    every command's output follows (:func:`takeover._util.folders.own_output`).

    Raises:
        InputError: ``dest`` holds a task exported from another checkpoint, or files takeover did not export;
            nothing has been written.
    """
    point = checkpoint.point
    return own_output(
        dest, read=_held_task, record="task.toml (takeover export harbor's)",
        identity=lambda m: {k: m.get(k) for k in ("instance_id", "point_type", "event_index", "view",
                                                  "checkpoint_patch_sha256")},
        wanted={"instance_id": checkpoint.instance_id, "point_type": point.type, "event_index": point.event_index,
                "view": view, "checkpoint_patch_sha256": checkpoint.patch_sha256},
        describe=lambda m: f"the task exported from another checkpoint (patch "
                           f"{str(m.get('checkpoint_patch_sha256'))[:12]}, {m.get('checkpoint_dir')})",
        what=f"the task of the checkpoint {checkpoint.patch_sha256[:12]}")


def export_task(checkpoint_dir: Path | str, view: str, task: SourceTask, out_dir: Path | str, *,
                repo_source: RepoSource | None = None, image: str | None = None,
                grading: GradingSettings | None = None, agent_timeout: float | None = None,
                seed_trajectory: bool = True) -> Path:
    """Write the Harbor task of (``checkpoint_dir``, ``view``) under ``out_dir``; returns its folder.

    Args:
        task: the checkpoint's instance (its dataset row: test patch, test lists, version).
        repo_source: where swebench's eval script reads requirement files (a mirror, or offline).
        image: the environment's base image (default: swebench's name of the instance image).
        grading: how the verifier grades (:class:`takeover.grading_settings.GradingSettings`, whole; default:
            its defaults): its ``timeout`` is the verifier's (``task.toml``), its ``grading_rules`` decide the
            verdict (``config.json``; default: the installed harness's), its ``hash_seed`` is the tests'
            ``PYTHONHASHSEED`` (``test.sh``; default: the test runner's own). The tests run in the task's own
            container (SWE-bench's image, as Harbor runs it): the backend, its options and ``network`` are
            Harbor's there, not read.
        agent_timeout: seconds (``task.toml``); no agent limit by default.
        seed_trajectory: a raw_trace task ships ``trajectory.json`` (Harbor then runs it only with agents that
            can load an ATIF trajectory: Claude Code, Codex CLI in Harbor 0.25); the trace is in the
            instruction either way.

    Raises:
        InputError: a broken checkpoint folder, an unknown view, a view that was not built, a task that is
            not the checkpoint's, or (raw_trace) a predecessor trajectory that cannot be read.
        EnvironmentUnavailable: the task has no SWE-bench specification or no Python log parser.
    """
    grading = grading or GradingSettings()
    folder = Path(checkpoint_dir)
    checkpoint, patch = load_checkpoint(folder)
    _check_view(folder, view, checkpoint)
    if task.instance_id != checkpoint.instance_id:
        raise InputError(folder / "checkpoint.json", f"is of {checkpoint.instance_id}, not {task.instance_id}",
                         field="instance_id")
    prompt = folder / "views" / f"{view}.md"
    instruction = read_text(prompt)  # before any work: a view that is not UTF-8 names its file
    spec = official_test_spec(task, repo_source)
    verdict = verdict_files(task, grading)
    dest = Path(out_dir) / task_name(checkpoint, view)
    refuse_other_task(dest, checkpoint, view)
    with building_beside(dest) as beside:
        # Built one level down: neither the task being built nor the earlier one it replaces, which ends up
        # here, is ever a folder of OUT that Harbor would load as a task.
        tmp = beside / "task"
        tmp.mkdir()
        tmp.chmod(0o755)  # other users see the task
        atomic_write_text(tmp / "instruction.md", instruction)
        if view == RAW_TRACE and seed_trajectory:
            atomic_write_json(tmp / "trajectory.json", predecessor_atif(checkpoint, folder))
        atomic_write_text(tmp / "environment" / "Dockerfile", (
            f"FROM {image or instance_image_name(task.instance_id)}\n"
            "COPY checkpoint.patch freeze.sh /takeover/\n"
            f"RUN bash /takeover/freeze.sh {checkpoint.base_commit} && rm -rf /takeover\n"
            "WORKDIR /testbed\n"))
        atomic_write_text(tmp / "environment" / "freeze.sh", FREEZE_SH)
        atomic_write_text(tmp / "environment" / "checkpoint.patch", patch)
        diff = shlex.join(["git", *DIFF_ARGS, "--cached"])
        seed = seed_export(grading.hash_seed) if grading.hash_seed is not None else "# the test runner's own hash seed"
        atomic_write_text(tmp / "tests" / "test.sh", TEST_SH.replace("{starting}", STARTING_COMMIT_FILE)
                          .replace("{base}", checkpoint.base_commit).replace("{diff}", diff).replace("{seed}", seed))
        (tmp / "tests" / "test.sh").chmod(0o755)
        atomic_write_text(tmp / "tests" / "eval.sh", spec.eval_script)
        for rel, text in verdict.items():
            atomic_write_text(tmp / "tests" / rel, text)
        atomic_write_text(tmp / "solution" / "solve.sh", SOLVE_SH)
        (tmp / "solution" / "solve.sh").chmod(0o755)
        atomic_write_text(tmp / "solution" / "checkpoint.patch", patch)
        atomic_write_text(tmp / "solution" / "gold.patch", task.patch or "")
        metadata = task_metadata(checkpoint, folder, view)
        atomic_write_text(tmp / "task.toml", task_toml(metadata, verifier_timeout=grading.timeout,
                                                        agent_timeout=agent_timeout))
        # An earlier export of the same task is exchanged with this one in one step: a reader, Harbor or a
        # kill -9 sees one of the two whole, never a task with some of its files.
        replace_whole(tmp, dest)
    return dest


def verdict_files(task: SourceTask, grading: GradingSettings | None = None) -> dict[str, str]:
    """The files of a task's ``tests/`` that decide its verdict from the test log, by path: the verdict script
    (:func:`verdict_script`), ``config.json`` (the instance, its FAIL_TO_PASS and PASS_TO_PASS tests, its log
    parser and ``eval_type``, the verdict rules of ``grading``: by default the installed harness's) and
    swebench's own Python log parsers.

    Raises:
        EnvironmentUnavailable: the task has no Python log parser.
    """
    parsers, parser_name = _parser_files(task)
    rules = harness_version.grading_rules((grading or GradingSettings()).grading_rules)
    config = {"instance_id": task.instance_id, "repo": task.repo, "log_parser": parser_name,
              "eval_type": task_eval_type(task), "grading_rules": rules,
              "FAIL_TO_PASS": list(task.FAIL_TO_PASS), "PASS_TO_PASS": list(task.PASS_TO_PASS)}
    return {VERDICT_SCRIPT: verdict_script(), "config.json": json.dumps(config, indent=2) + "\n", **parsers}


def verdict_script() -> str:
    """The verdict script a task ships as ``tests/swebench_verdict.py``: :mod:`takeover.harbor.swebench_verdict`
    (its entry point) with its import of the verdict rules replaced by their one source,
    :mod:`takeover.grading.swebench_rules`, so that the script in the container decides as grading does
    (both run on Python 3.6, standard library only)."""
    rules = Path(swebench_rules.__file__).read_text(encoding="utf-8")
    entry = resources.files("takeover.harbor").joinpath("swebench_verdict.py").read_text(encoding="utf-8")
    doc, _, code = entry.partition('"""\n\n')
    lines = [line for line in code.splitlines() if not line.startswith(_RULES_IMPORT)]
    end = _imports_end(lines)
    header = (f"{doc}\n\nGenerated by takeover {__version__} from takeover/harbor/swebench_verdict.py, the rules those "
              "of\ntakeover/grading/swebench_rules.py (as they are, after the imports).\n\"\"\"")
    return "\n\n".join([header, "\n".join(lines[:end]).strip("\n"), _without_docstring(rules),
                        "\n".join(lines[end:]).strip("\n")]) + "\n"


def _imports_end(lines: list[str]) -> int:
    """The index of the first line after the leading imports (and blank lines) of ``lines``."""
    i = 0
    while i < len(lines) and (not lines[i].strip() or lines[i].startswith(("import ", "from "))):
        i += 1
    return i


def _without_docstring(source: str) -> str:
    """``source`` without its module docstring (the generated script has one of its own)."""
    tree = ast.parse(source)
    first = tree.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return "\n".join(source.splitlines()[first.end_lineno:]).strip("\n")
    return source


def checkpoint_folders(root: Path | str) -> list[Path]:
    """``root`` when it is a checkpoint folder, else every checkpoint folder below it (a study's output
    folder holds one per handoff point), sorted.

    Raises:
        InputError: ``root`` does not exist or holds no ``checkpoint.json``.
    """
    root = Path(root)
    if (root / "checkpoint.json").is_file():
        return [root]
    found = sorted(p.parent for p in root.rglob("checkpoint.json")) if root.is_dir() else []
    if not found:
        raise InputError(root, "no checkpoint.json in this folder or below it (write them with takeover checkpoint)")
    return found


def export_tasks(root: Path | str, views: list[str] | None, tasks: dict[str, SourceTask], out_dir: Path | str,
                 **options: Any) -> list[Path]:
    """:func:`export_task` for every checkpoint folder under ``root`` x ``views`` (default: every view built
    for the checkpoint, ``views/<view>.md``); returns the task folders in checkpoint then view order.

    Every checkpoint folder is read, and its instance and views found, before any task is written; each task
    then appears whole or not at all (:func:`export_task`). An export that stops part-way says which tasks
    it wrote before it stopped.

    Args:
        tasks: ``{instance_id: task}`` holding every checkpoint's instance.
        options: as :func:`export_task` (``repo_source``, ``image``, ``grading``, ``agent_timeout``,
            ``seed_trajectory``).

    Raises:
        InputError: as :func:`export_task`; a checkpoint whose instance is not in ``tasks``; no view built.
            Raised part-way, the message ends with the tasks already written.
    """
    planned: list[tuple[Path, str, SourceTask]] = []
    for folder in checkpoint_folders(root):
        checkpoint, _ = load_checkpoint(folder)
        task = tasks.get(checkpoint.instance_id)
        if task is None:
            raise InputError(folder / "checkpoint.json", f"instance {checkpoint.instance_id} is not in the dataset",
                             field="instance_id")
        names = views or built_views(folder)
        if not names:
            raise InputError(folder / "views", "no view was built for this checkpoint; build them with "
                             f"takeover views RUN --checkpoint-dir {folder}")
        for view in names:
            _check_view(folder, view, checkpoint)
            refuse_other_task(Path(out_dir) / task_name(checkpoint, view), checkpoint, view)
            if view == RAW_TRACE and options.get("seed_trajectory", True):
                predecessor_atif(checkpoint, folder)  # its predecessor is this checkpoint's, before any task
        planned += [(folder, view, task) for view in names]
    written: list[Path] = []
    for folder, view, task in planned:
        try:
            written.append(export_task(folder, view, task, out_dir, **options))
        except TakeoverError as exc:
            if not written:
                raise
            raise _stopped_after(exc, written) from None
    return written


def _stopped_after(exc: TakeoverError, written: list[Path]) -> TakeoverError:
    """``exc`` with what an export had written when it stopped: the tasks, each whole."""
    shown = ", ".join(p.name for p in written[:5]) + (f" and {len(written) - 5} more" if len(written) > 5 else "")
    tail = f"; stopped there: {len(written)} task(s) were written before, each whole, in {written[0].parent}: {shown}"
    if isinstance(exc, InputError):
        return InputError(exc.path, exc.reason + tail, record=exc.record, field=exc.field)
    return type(exc)(f"{exc}{tail}")
