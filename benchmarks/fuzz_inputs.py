"""Damaged inputs through the commands a user runs: count the inputs tried and the tracebacks seen (goal 0).

    .venv/bin/python benchmarks/fuzz_inputs.py [--data DIR] [--paths N] [--seed S] [--keep DIR] [--quick]

For every shared trajectory file of each format (``../shared/data/trajectories``; ``--quick``: one file per
format), for a Claude Code session and a Codex CLI rollout written by the test suite's builders, for a
small dataset (JSON Lines and JSON), a predictions file and an experiment file, it writes variants:

- truncated: cut at 1/8 ... 7/8 of the bytes, one byte short, and in the middle of the last line;
- not UTF-8: a byte 0xff at 10%, 50% and 90% of the file, and a broken two-byte sequence;
- wrong-typed: at ``--paths`` field paths (distinct by shape, chosen with ``--seed``) the value replaced by
  one of another JSON type (and by ``null``); for the experiment file, every key.

and runs each through the commands a user would run on it, in this process, through ``takeover``'s own
entry point (:func:`takeover.cli.main`): trajectories through ``inspect``, ``show``, ``points`` (offline,
no mirror: the replay is not reached for real repositories) and, for the two session formats, ``handoff``;
datasets through ``tasks select``, ``points`` and ``grade --predictions``; predictions through ``grade
--predictions``; experiment files through ``run``. A traceback is an exception that escapes the entry point
(anything but the exit of a command). The output is one line per family (inputs, commands, exit statuses,
tracebacks) and one line per distinct traceback (exception type and the frame it was raised in).

The newest commands, each input judged by what the user got (:data:`OUTCOMES`, a table of counts per
family and the labels of the failures):

- ``report`` on a Harbor job folder whose raw_trace trial has its ``result.json``, verifier ``report.json``
  or ATIF trajectory damaged as above (and empty, a list, interrupted: ``CancelledError`` with no message;
  a second attempt of the other trial), against the report of the good folder;
- ``export harbor`` of a checkpoint folder whose ``checkpoint.json``, patch or a view is damaged, into a
  folder holding the good export (and over a task of another checkpoint of the same name, or the user's own
  folder so named), against the good export;
- ``checkpoint`` (a replay) of a damaged run file, against the good run's checkpoint; the same run sending a
  program's output into a file, checkpointed again three times; into a folder of another checkpoint or of
  the user's files;
- inputs at the door: malformed dataset rows (swebench 4.x and 5.x), predictions, points files of another task
  or run, checkpoint folders whose views or predecessor are another task's, each through ``grade``, ``views``,
  ``checkpoint`` or ``export harbor``; a verdict, view or export from them is a failure;
- output folders holding what the command did not write (the user's files, another task's views, a foreign
  ``result.json``, a user's ``tasks.jsonl``, another run's ``trajectory.json``): any change is a silent
  overwrite.

Measured here (2 shared cores), the newest commands (``--only report,export,checkpoint``, 200 inputs, about
a minute), before -> after the change that named unreadable records, exchanged export folders and pinned
unrecorded output: tracebacks 20 -> 0, silent drops 16 -> 0, verdicts from malformed input 11 -> 0, the same
checkpoint twice giving another patch 3 -> 0, silent overwrites 2 -> 1 (a task exported from another
checkpoint of the same name is still replaced: the overwrite rule of every command's output is not built
yet); clear one-line errors 87 -> 58 and 91 records marked unreadable and listed (exit 2), one interrupted
trial a failed run with its reason, one repeated attempt listed as not counted. Inputs at the door and output folders
(``--only inputs,output``, 25 inputs: malformed dataset rows of both formats, predictions, points files and
checkpoint folders through the command a user runs on them; output folders holding the user's files or another
input's output), before -> after the input schemas and the output rule: verdicts from malformed input 15 -> 0,
silent drops 2 -> 0, silent overwrites 7 -> 0 (and export's last one 1 -> 0), clear one-line errors 1 -> 25.
The full pass, 1428 inputs
through 3759 commands, 0 tracebacks (about 20 minutes, the machine busy); ``--quick``, 421 inputs through 1134 commands of the
older families, 0 tracebacks (2 min 37 s).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import shutil
import sys
import tempfile
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "tests"))  # the suite's builders of session files and small repositories

SUPPORT = {"index.json", "run_results_summary.json"}
#: What a user got from one damaged input of the newest commands (report on Harbor jobs, export harbor,
#: checkpoint replays), worst first; the first five are failures (goal 0).
OUTCOMES = (
    "traceback",
    "silent drop",                          # exit 0, the damaged record left out, nothing said
    "silent overwrite",                     # files that were there changed by a command that failed or refused
    "verdict from malformed input",         # exit 0, a verdict, export or checkpoint other than the good input's
    "same inputs, another checkpoint",      # the same run and point, checkpointed again: another patch
    "clear one-line error",                 # exit 1 or 2, one error line naming the file; nothing changed
    "marked unreadable, listed, exit 2",    # report: the record is a row marked unreadable, listed with why
    "failed run with its reason",           # report: an interrupted trial, a failed run saying so
    "listed as not counted",                # report: a second attempt of a trial, named in the report
    "unaffected (part not read)",           # exit 0, the same result as the good input
    "valid input (null where Harbor allows it)",  # report: a trial as Harbor may write it, read as such
    "other",
)
BAD_OUTCOMES = OUTCOMES[:5] + ("other",)


# --- variants ---------------------------------------------------------------------------------------


def truncated(data: bytes) -> Iterator[tuple[str, bytes]]:
    n = len(data)
    for k in range(1, 8):
        yield f"cut at {k}/8", data[: n * k // 8]
    yield "one byte short", data[:-1]
    body = data.rstrip(b"\n")
    last = body.rfind(b"\n") + 1
    yield "cut in the last line", body[: last + max(1, (len(body) - last) // 2)]


def not_utf8(data: bytes) -> Iterator[tuple[str, bytes]]:
    n = len(data)
    for pct in (10, 50, 90):
        at = n * pct // 100
        yield f"0xff at {pct}%", data[:at] + b"\xff" + data[at:]
    quote = data.find(b'"', n // 3)
    at = quote + 1 if quote >= 0 else n // 3
    yield "broken 2-byte sequence", data[:at] + b"\xc3(" + data[at:]


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield prefix, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:50]):
            yield from _paths(v, (*prefix, i))


def _shape(path: tuple) -> tuple:
    return tuple("*" if isinstance(p, int) else p for p in path)


def _others(value: Any) -> list[Any]:
    """Values of other JSON types than ``value``'s: the kinds of damage a hand edit or another tool makes."""
    if isinstance(value, bool) or value is None:
        return ["yes", [value]]
    if isinstance(value, (int, float)):
        return [str(value), [value]]
    if isinstance(value, str):
        return [[value], 7]
    if isinstance(value, list):
        return ["a string", {"0": value[0] if value else None}]
    return ["a string", [value]]


def _set(doc: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    doc = json.loads(json.dumps(doc))
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = new
    return doc


def wrong_typed(docs: list[Any], n_paths: int, rng: random.Random) -> Iterator[tuple[str, list[Any]]]:
    """Variants of ``docs`` (the records of a file) with one value changed to another type, or to null."""
    by_shape: dict[tuple, tuple[int, tuple, Any]] = {}
    for i, doc in enumerate(docs):
        for path, value in _paths(doc):
            if path and _shape(path) not in by_shape:
                by_shape[_shape(path)] = (i, path, value)
    shapes = sorted(by_shape, key=repr)
    rng.shuffle(shapes)
    for shape in shapes[:n_paths]:
        i, path, value = by_shape[shape]
        for new in [*_others(value), None][:3]:
            if new is None and value is None:
                continue
            label = ".".join(map(str, path))
            yield f"{label} = {json.dumps(new)[:30]}", [*docs[:i], _set(docs[i], path, new), *docs[i + 1:]]


def json_variants(data: bytes, n_paths: int, rng: random.Random, *, lines: bool) -> Iterator[tuple[str, bytes]]:
    yield from (("truncated: " + k, v) for k, v in truncated(data))
    yield from (("not UTF-8: " + k, v) for k, v in not_utf8(data))
    text = data.decode("utf-8")
    docs = [json.loads(x) for x in text.splitlines() if x.strip()] if lines else [json.loads(text)]
    for label, changed in wrong_typed(docs, n_paths, rng):
        if lines:
            yield "wrong type: " + label, "".join(json.dumps(d) + "\n" for d in changed).encode()
        else:
            yield "wrong type: " + label, json.dumps(changed[0], indent=1).encode()


# --- the experiment file: a small TOML writer for the variants -------------------------------------


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def toml_text(doc: dict) -> str:
    top = [f"{k} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict) and
           not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v))]
    parts = ["\n".join(top)]
    for k, v in doc.items():
        if isinstance(v, dict):
            parts.append(f"[{k}]\n" + "\n".join(f"{a} = {_toml_value(b)}" for a, b in v.items()))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            parts += [f"[[{k}]]\n" + "\n".join(f"{a} = {_toml_value(b)}" for a, b in x.items()) for x in v]
    return "\n\n".join(parts) + "\n"


def toml_variants(doc: dict) -> Iterator[tuple[str, bytes]]:
    data = toml_text(doc).encode()
    yield from (("truncated: " + k, v) for k, v in truncated(data))
    yield from (("not UTF-8: " + k, v) for k, v in not_utf8(data))
    for path, value in _paths(doc):
        if not path or isinstance(path[-1], int):
            continue
        for new in _others(value)[:2]:
            if isinstance(new, list) and any(isinstance(x, (dict, type(None))) for x in new):
                continue  # TOML has no null, and a list of tables is another shape
            try:
                text = toml_text(_set(doc, path, new))
            except TypeError:  # TOML has no null
                continue
            yield f"wrong type: {'.'.join(map(str, path))} = {json.dumps(new)[:30]}", text.encode()


# --- running a command ------------------------------------------------------------------------------


class Tally:
    """Inputs tried, commands run, exit statuses and tracebacks, per family."""

    def __init__(self, log: Path | None = None) -> None:
        self.log = log.open("w", encoding="utf-8", buffering=1) if log else None
        self.only: str | None = None
        self.inputs: Counter = Counter()
        self.commands: Counter = Counter()
        self.statuses: dict[str, Counter] = defaultdict(Counter)
        self.tracebacks: dict[str, list[str]] = defaultdict(list)
        self.by_family: Counter = Counter()
        self.outcomes: dict[str, Counter] = defaultdict(Counter)
        self.examples: dict[tuple[str, str], list[str]] = defaultdict(list)

    def run(self, family: str, label: str, argv: list[str]) -> tuple[Any, str, str] | None:
        """Run ``takeover ARGV``; ``(exit status or "traceback", stdout, stderr)``, ``None`` when skipped."""
        from takeover.cli import main

        if self.only and not family.startswith(tuple(self.only.split(","))):
            return None
        self.commands[family] += 1
        out, err = io.StringIO(), io.StringIO()
        saved = sys.argv
        sys.argv = ["takeover", *argv]
        status: Any = 0
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                main()
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - what we count
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"
            self.tracebacks[f"{type(exc).__name__} at {where}"].append(f"{family}: {argv[0]}: {label}")
            self.by_family[family] += 1
            status = "traceback"
        finally:
            sys.argv = saved
        if "Traceback (most recent call last)" in err.getvalue() + out.getvalue():
            self.tracebacks["a traceback printed as text"].append(f"{family}: {argv[0]}: {label}")
            self.by_family[family] += 1
        self.statuses[family][status] += 1
        if self.log:
            said = (err.getvalue().strip().splitlines() or [""])[-1][:300]
            self.log.write(f"{family}\t{label}\t{argv[0]}\t{status}\t{said}\n")
        return status, out.getvalue(), err.getvalue()

    def outcome(self, family: str, label: str, outcome: str) -> None:
        """Count what the user got from one input of ``family`` (:data:`OUTCOMES`)."""
        self.outcomes[family][outcome] += 1
        self.examples[(family, outcome)].append(label)
        if self.log:
            self.log.write(f"{family}\t{label}\toutcome\t{outcome}\n")

    def report(self) -> None:
        print(f"{'family':<28} {'inputs':>6} {'commands':>8} {'tracebacks':>10}  exit statuses")
        for family in self.commands:
            statuses = ", ".join(f"{k}: {v}" for k, v in sorted(self.statuses[family].items(), key=str))
            print(f"{family:<28} {self.inputs[family]:>6} {self.commands[family]:>8} {self.by_family[family]:>10}  "
                  f"{statuses}")
        total = sum(self.by_family.values())
        print(f"{'all':<28} {sum(self.inputs[f] for f in self.commands):>6} {sum(self.commands.values()):>8} {total:>10}")
        for sig, where in sorted(self.tracebacks.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(where):>4} x {sig}   e.g. {where[0]}")
        if not self.outcomes:
            return
        families = list(self.outcomes)
        print(f"\n{'outcome':<44}" + "".join(f"{f:>22}" for f in families) + f"{'all':>8}")
        for name in OUTCOMES:
            counts = [self.outcomes[f][name] for f in families]
            print(f"{name:<44}" + "".join(f"{c:>22}" for c in counts) + f"{sum(counts):>8}")
        print(f"{'inputs':<44}" + "".join(f"{sum(self.outcomes[f].values()):>22}" for f in families)
              + f"{sum(sum(c.values()) for c in self.outcomes.values()):>8}")
        for (family, name), labels in sorted(self.examples.items()):
            if name in BAD_OUTCOMES:
                print(f"  {family}: {name}: {len(labels)}, e.g. {'; '.join(labels[:3])}")


# --- the inputs -------------------------------------------------------------------------------------


def trajectory_files(data: Path, quick: bool) -> dict[str, list[Path]]:
    from takeover.trajectories import detect_format

    found: dict[str, list[Path]] = defaultdict(list)
    for p in sorted((data / "trajectories").rglob("*")):
        if p.is_file() and p.name not in SUPPORT and "eval_reports" not in p.parts:
            found[detect_format(p)].append(p)
    if quick:
        return {k: v[:1] for k, v in found.items()}
    return found


def session_files(work: Path) -> dict[str, list[Path]]:
    import test_claude_code
    import test_codex_cli

    folder = work / "sessions"
    folder.mkdir()
    return {"claude-code": [test_claude_code.session_file(folder)], "codex-cli": [test_codex_cli.rollout_file(folder)]}


def small_dataset(data: Path, ids: set[str], work: Path) -> tuple[Path, Path]:
    """The shared dataset's rows of ``ids`` (and two more), as JSON Lines and as a JSON list."""
    rows = []
    with open(data / "swebench_verified.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["instance_id"] in ids or len(rows) < 2:
                rows.append(row)
    jsonl, js = work / "dataset.jsonl", work / "dataset.json"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    js.write_text(json.dumps(rows, indent=1))
    return jsonl, js


def write_variants(folder: Path, name: str, variants: Iterator[tuple[str, bytes]]) -> Iterator[tuple[str, Path]]:
    folder.mkdir(parents=True, exist_ok=True)
    for n, (label, data) in enumerate(variants):
        path = folder / f"{n:03d}-{name}"
        path.write_bytes(data)
        yield label, path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--paths", type=int, default=8, help="field paths changed per file (wrong-typed)")
    parser.add_argument("--seed", type=int, default=20260430)
    parser.add_argument("--quick", action="store_true", help="one trajectory file per format")
    parser.add_argument("--keep", type=Path, help="write the variants here and keep them (default: a temp folder)")
    parser.add_argument("--only", help="run only the families whose name starts with one of these, comma-separated "
                                       "(e.g. experiment, or report,export,checkpoint)")
    parser.add_argument("--log", type=Path, help="write one line per command run: family, input, command, exit "
                                                 "status, last line on stderr")
    args = parser.parse_args()

    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.pop("TAKEOVER_MIRROR", None)
    rng = random.Random(args.seed)
    work = args.keep or Path(tempfile.mkdtemp(prefix="takeover-fuzz-"))
    work.mkdir(parents=True, exist_ok=True)
    tally = Tally(args.log)
    tally.only = args.only
    try:
        run_all(args, rng, work, tally)
    finally:
        tally.report()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def run_all(args: argparse.Namespace, rng: random.Random, work: Path, tally: Tally) -> None:
    import os

    from conftest import make_repo

    trajectories = {**trajectory_files(args.data, args.quick), **session_files(work)}
    ids = set()
    for files in trajectories.values():
        for f in files:
            with contextlib.suppress(Exception):
                from takeover.trajectories import read_trajectories

                ids |= {t.instance_id for t in read_trajectories(f) if t.instance_id}
    dataset, dataset_json = small_dataset(args.data, ids, work)
    repo, _ = make_repo(work / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    out = work / "out"

    def traj_commands(fmt: str) -> Callable[[Path], list[list[str]]]:
        def commands(path: Path) -> list[list[str]]:
            cmds = [["inspect", str(path)], ["show", str(path), "--out-dir", str(out / "pages")],
                    ["points", str(path), "--dataset", str(dataset), "--offline", "--out-dir", str(out / "points")]]
            if fmt in ("claude-code", "codex-cli"):
                cmds.append(["handoff", str(path), "--repo", str(repo)])
            return cmds
        return commands

    for fmt, files in trajectories.items():
        for f in files:
            lines = f.suffix == ".jsonl"
            family = f"trajectory {fmt}"
            for label, path in write_variants(work / "traj" / fmt, f.name, json_variants(
                    f.read_bytes(), args.paths, rng, lines=lines)):
                tally.inputs[family] += 1
                for argv in traj_commands(fmt)(path):
                    tally.run(family, f"{f.name}: {label}", argv)

    preds = work / "preds.jsonl"
    with open(dataset, encoding="utf-8") as fh:
        some_id = min(json.loads(line)["instance_id"] for line in fh if json.loads(line)["instance_id"] in ids)
    preds.write_text(json.dumps({"instance_id": some_id, "model_name_or_path": "m", "model_patch": ""}) + "\n")
    mini = next(iter(trajectories.get("mini-swe-agent", [])), None)
    for base, lines in ((dataset, True), (dataset_json, False)):
        family = f"dataset {base.suffix}"
        for label, path in write_variants(work / "dataset", base.name, json_variants(
                base.read_bytes(), args.paths, rng, lines=lines)):
            tally.inputs[family] += 1
            tally.run(family, label, ["tasks", "select", "--dataset", str(path), "--out-dir", str(out / "tasks"),
                                      "--limit", "0"])
            tally.run(family, label, ["grade", "--dataset", str(path), "--predictions", str(preds), "--offline",
                                      "--out-dir", str(out / "grades")])
            if mini is not None:
                tally.run(family, label, ["points", str(mini), "--dataset", str(path), "--offline"])

    for base, lines in ((preds, True), (work / "preds.json", False)):
        if not lines:
            base.write_text(json.dumps({some_id: {"instance_id": some_id, "model_name_or_path": "m",
                                                   "model_patch": ""}}, indent=1))
        family = f"predictions {base.suffix}"
        for label, path in write_variants(work / "preds", base.name, json_variants(
                base.read_bytes(), args.paths, rng, lines=lines)):
            tally.inputs[family] += 1
            tally.run(family, label, ["grade", "--dataset", str(dataset), "--predictions", str(path), "--offline",
                                      "--out-dir", str(out / "grades")])

    family = "experiment .toml"
    experiment = {
        "name": "fuzz", "out_dir": str(out / "experiment"), "offline": True, "views": ["repo_only"],
        "point_types": ["after_first_source_edit"], "bootstrap_resamples": 10,
        "dataset": {"path": str(dataset), "difficulties": [], "limit": 1, "instance_ids": [some_id]},
        "predecessor": {"trajectories": [str(mini.parent if mini else work / "traj")]},
        "successors": [{"model": "openai/none", "base_url": "http://127.0.0.1:9/v1", "retries": 0}],
        "limits": {"step_limit": 2, "wall_time_limit_seconds": 30}, "grading": {"timeout": 30},
        "execution": {"workers": 1},
    }
    for label, path in write_variants(work / "experiment", "experiment.toml", toml_variants(experiment)):
        tally.inputs[family] += 1
        tally.run(family, label, ["run", str(path), "--no-progress"])

    os.environ["TAKEOVER_CACHE"] = str(work / "cache")  # the replays' store of unrecorded output, not the user's
    fuzz_report(args, rng, work, tally)
    fuzz_export(args, rng, work, tally)
    fuzz_checkpoint(args, rng, work, tally)
    fuzz_door(work, tally)
    fuzz_outputs(work, tally)



# --- the newest commands: report on Harbor jobs, export harbor, checkpoint replays -------------------


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def _hashes(folder: Path, replace: dict[str, str] | None = None) -> dict[str, str]:
    """``{relative path: sha256}`` of the files below ``folder`` (text with ``replace`` applied first)."""
    import hashlib

    found = {}
    for p in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if p.is_file():
            data = p.read_bytes()
            for old, new in (replace or {}).items():
                data = data.replace(old.encode(), new.encode())
            found[str(p.relative_to(folder))] = hashlib.sha256(data).hexdigest()
    return found


def _csv_rows(path: Path) -> list[dict]:
    import csv

    if not path.is_file():
        return []
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


#: Fields that Harbor itself may write as ``null``: of a trial's ``result.json`` (its ``TrialResult``) and of
#: its ATIF ``agent/trajectory.json`` (its ``Trajectory``).
HARBOR_NULLABLE = {
    "result.json": ("agent_result", "verifier_result", "verifier_result.rewards", "exception_info", "started_at",
                    "finished_at", "agent_execution", "agent_execution.*", "agent_info.model_info",
                    "agent_info.model_info.provider", "source", "step_results", "config.agent.*"),
    "agent/trajectory.json": ("session_id", "trajectory_id", "notes", "final_metrics", "final_metrics.*", "extra",
                              "agent.model_name", "agent.extra", "steps.*.observation", "steps.*.metrics",
                              "steps.*.metrics.*", "steps.*.tool_calls", "steps.*.reasoning_content",
                              "steps.*.model_name", "steps.*.extra", "steps.*.is_copied_context",
                              "steps.*.llm_call_count", "steps.*.timestamp", "steps.*.observation.results.*.content",
                              "steps.*.observation.results.*.source_call_id", "steps.*.observation.results.*.extra"),
}


def harbor_allows_null(label: str) -> bool:
    """Whether the variant ``label`` (``FILE: wrong type: PATH = null``) sets a field Harbor may write as
    null."""
    import fnmatch

    for file, patterns in HARBOR_NULLABLE.items():
        if label.startswith(f"{file}: wrong type: "):
            path = label.removeprefix(f"{file}: wrong type: ").removesuffix(" = null")
            return any(fnmatch.fnmatch(path, pattern) for pattern in patterns)
    return False


def harbor_jobs(folder: Path) -> Path:
    """A Harbor job folder: a trial of the exported repo_only task (solved) and one of the raw_trace task
    (not solved, with its verifier report and ATIF trajectory): ``folder/jobs``."""
    from test_foreign_records import _trial

    from takeover.trajectories.atif_writer import to_atif
    from takeover.trajectories.events import Event, Trajectory

    job = folder / "jobs" / "codex"
    _trial(job, "a__1", "repo_only")
    trial = _trial(job, "a__2", "raw_trace", verifier_result={"rewards": {"reward": 0.0}})
    (trial / "verifier").mkdir()
    (trial / "verifier" / "report.json").write_text(json.dumps({"acme__calc-1": {
        "resolved": False, "patch_successfully_applied": True, "tests_status": {
            "FAIL_TO_PASS": {"success": [], "failure": ["t1"]}, "PASS_TO_PASS": {"success": ["t2"], "failure": []}}}},
        indent=1))
    events = [Event(index=0, kind="action", source="agent", type="command", command="ls", llm_call=0),
              Event(index=1, kind="observation", source="environment", type="command", text="calc.py", cause=0)]
    (trial / "agent").mkdir()
    (trial / "agent" / "trajectory.json").write_text(json.dumps(to_atif(Trajectory(
        format="atif", instance_id="acme__calc-1", events=events)), indent=1))
    return folder / "jobs"


def fuzz_report(args: argparse.Namespace, rng: random.Random, work: Path, tally: Tally) -> None:
    """``takeover report`` on a job folder whose raw_trace trial has a damaged ``result.json``, verifier
    report or ATIF trajectory (and a trial Harbor recorded as interrupted)."""
    family = "report harbor jobs"
    base = harbor_jobs(work / "report-base")
    trial = base / "codex" / "a__2"
    done = tally.run(family, "good", ["report", str(base), "--no-plots"])
    if done is None:
        return
    good = next(r for r in _csv_rows(base / "results.csv") if r["view"] == "raw_trace")

    def variants() -> Iterator[tuple[str, str, bytes]]:
        for rel in ("result.json", "verifier/report.json", "agent/trajectory.json"):
            for label, data in json_variants((trial / rel).read_bytes(), args.paths, rng, lines=False):
                yield f"{rel}: {label}", rel, data
        yield "result.json: empty", "result.json", b""
        yield "result.json: a list", "result.json", b"[]"
        interrupted = {**json.loads((trial / "result.json").read_text()), "verifier_result": None, "exception_info": {
            "exception_type": "CancelledError", "exception_message": "", "exception_traceback": "", "occurred_at":
            "2026-01-01T00:00:10Z"}}
        yield "interrupted (CancelledError, no message)", "result.json", json.dumps(interrupted).encode()
        yield "a second attempt of the repo_only trial", "", b""

    for n, (label, rel, data) in enumerate(variants()):
        tally.inputs[family] += 1
        jobs = work / "report" / f"{n:03d}" / "jobs"
        shutil.copytree(base, jobs)
        for made in ("report.json", "report.md", "report.html", "results.csv"):  # the good input's report
            (jobs / made).unlink(missing_ok=True)
        if rel:
            (jobs / "codex" / "a__2" / rel).write_bytes(data)
        else:  # harbor run -k 2: the same task and agent again, not solved this time
            shutil.copytree(jobs / "codex" / "a__1", jobs / "codex" / "a__9")
            result = json.loads((jobs / "codex" / "a__9" / "result.json").read_text())
            result.update(trial_name="a__9", verifier_result={"rewards": {"reward": 0.0}})
            (jobs / "codex" / "a__9" / "result.json").write_text(json.dumps(result))
        status, _, err = tally.run(family, label, ["report", str(jobs), "--no-plots"])
        row = next((r for r in _csv_rows(jobs / "results.csv") if r["view"] == "raw_trace"), None)
        listed = []
        with contextlib.suppress(OSError, ValueError):
            listed = json.loads((jobs / "report.json").read_text()).get("unreadable_records") or []
        if status == "traceback":
            outcome = "traceback"
        elif label.startswith("a second attempt"):
            repeated = []
            with contextlib.suppress(OSError, ValueError):
                repeated = json.loads((jobs / "report.json").read_text()).get("repeated_runs") or []
            outcome = "listed as not counted" if status == 0 and repeated else "silent drop"
        elif label.startswith("interrupted"):
            outcome = ("failed run with its reason" if status == 0 and row and row["status"] == "failed"
                       and "interrupted" in row["reason"] else "other")
        elif status == 0 and row is None:
            outcome = "silent drop"
        elif status == 0 and label.endswith(" = null") and harbor_allows_null(label):
            outcome = "valid input (null where Harbor allows it)"
        elif status == 0:
            same = {k: v for k, v in row.items() if k != "reason"} == {k: v for k, v in good.items() if k != "reason"}
            outcome = "unaffected (part not read)" if same else "verdict from malformed input"
        elif listed and (row is None or row["status"] == "unreadable") and len(_errors(err)) == 1:
            outcome = "marked unreadable, listed, exit 2"
        elif len(_errors(err)) == 1 and str(jobs / "codex" / "a__2") in _errors(err)[0]:
            outcome = "clear one-line error"
        else:
            outcome = "other"
        tally.outcome(family, label, outcome)


def fuzz_export(args: argparse.Namespace, rng: random.Random, work: Path, tally: Tally) -> None:
    """``takeover export harbor`` of a checkpoint folder with a damaged ``checkpoint.json``, patch or view,
    into a folder that holds the good export already; and into a folder where a task of the same name is
    another checkpoint's, or the user's own."""
    from docker_images import tiny_task
    from test_harbor import _checkpoint

    family = "export harbor"
    if tally.only and not family.startswith(tuple(tally.only.split(","))):
        return
    task, source = tiny_task(work / "export-base" / "repo")
    cps, dataset = _checkpoint(work / "export-base", task, source)
    good_cp = cps / "event-3"
    options = ["--dataset", str(dataset), "--mirror", str(source.mirror), "--offline", "--image", "example/tiny:1",
               "--no-seed-trajectory", "--view", "repo_only", "--view", "raw_trace"]
    reference = work / "export-base" / "out"
    tally.run(family, "good", ["export", "harbor", str(good_cp), *options, "--out-dir", str(reference)])
    want = _hashes(reference, {str(good_cp.resolve()): "<cps>"})

    def variants() -> Iterator[tuple[str, str, bytes | None]]:
        for label, data in json_variants((good_cp / "checkpoint.json").read_bytes(), args.paths, rng, lines=False):
            yield f"checkpoint.json: {label}", "checkpoint.json", data
        patch = (good_cp / "checkpoint.patch").read_bytes()
        yield "checkpoint.patch: cut", "checkpoint.patch", patch[: len(patch) // 2]
        yield "checkpoint.patch: empty", "checkpoint.patch", b""
        for label, data in not_utf8((good_cp / "views" / "repo_only.md").read_bytes()):
            yield f"views/repo_only.md: {label}", "views/repo_only.md", data
        yield "views/raw_trace.md: removed", "views/raw_trace.md", None
        yield "an existing task of another checkpoint", "", b""
        yield "an existing folder of the user's, named as a task", "", b""

    for n, (label, rel, data) in enumerate(variants()):
        tally.inputs[family] += 1
        here = work / "export" / f"{n:03d}"
        cp, out = here / "cps" / "event-3", here / "out"
        shutil.copytree(good_cp, cp, ignore=shutil.ignore_patterns("workspace"))
        shutil.copytree(reference, out)
        if label.startswith("an existing task"):  # the earlier export of this task's name came from another run
            task_toml = next(out.glob("*repo_only")) / "task.toml"
            task_toml.write_text(task_toml.read_text().replace("checkpoint_patch_sha256 = \"", "checkpoint_patch_sha256 = \"0"))
        elif label.startswith("an existing folder"):
            mine = next(out.glob("*repo_only"))
            shutil.rmtree(mine)
            mine.mkdir()
            (mine / "notes.md").write_text("my notes\n")
        elif data is None:
            (cp / rel).unlink()
        elif rel:
            (cp / rel).write_bytes(data)
        before = _hashes(out)
        status, _, err = tally.run(family, label, ["export", "harbor", str(cp), *options, "--out-dir", str(out)])
        after = _hashes(out, {str(cp.resolve()): "<cps>"})
        if status == "traceback":
            outcome = "traceback"
        elif status == 0 and label.startswith("an existing"):
            outcome = "silent overwrite"  # another run's task, or the user's folder, replaced without a word
        elif status == 0 and len({p.split("/")[0] for p in after}) < len({p.split("/")[0] for p in want}):
            outcome = "silent drop"
        elif status == 0:
            outcome = "unaffected (part not read)" if after == want else "verdict from malformed input"
        elif _hashes(out) != before and not any("were written before" in line for line in _errors(err)):
            outcome = "silent overwrite"  # a stop part-way that does not say what it wrote
        elif len(_errors(err)) == 1 and (str(here) in _errors(err)[0] or str(out) in _errors(err)[0]):
            outcome = "clear one-line error"
        else:
            outcome = "other"
        tally.outcome(family, label, outcome)


def fuzz_checkpoint(args: argparse.Namespace, rng: random.Random, work: Path, tally: Tally) -> None:
    """``takeover checkpoint`` (a replay) of a damaged run file; the same run checkpointed again (another
    folder: the same patch?); into a folder that holds another checkpoint, or the user's files."""
    from _output_runs import SAME_EACH_TIME, output_run

    family = "checkpoint replays"
    if tally.only and not family.startswith(tuple(tally.only.split(","))):
        return
    # The damaged runs are of a run whose replay is the same each time; the same run checkpointed again is
    # one that sends a program's output (a fresh uuid, like pytest's timing line) into a file it keeps.
    root = work / "checkpoint-base"
    _, _, good_run, dataset = output_run(root / "same", SAME_EACH_TIME)
    _, _, output, _ = output_run(root / "output")
    mirror = root / "same" / "mirror"

    def checkpoint(run: Path, out: Path, label: str) -> tuple[Any, str] | None:
        done = tally.run(family, label, ["checkpoint", str(run), "--point-type", "after_first_source_edit",
                                         "--dataset", str(dataset), "--mirror", str(mirror), "--offline",
                                         "--no-workspace", "--out-dir", str(out)])
        return None if done is None else (done[0], done[2])

    if checkpoint(good_run, root / "cp", "good") is None:
        return
    good = json.loads((root / "cp" / "checkpoint.json").read_text())
    checkpoint(output, root / "cp-output", "good, output into a file")
    good_output = json.loads((root / "cp-output" / "checkpoint.json").read_text())

    def variants() -> Iterator[tuple[str, bytes | None]]:
        for label, data in json_variants(good_run.read_bytes(), args.paths, rng, lines=False):
            yield f"run.json: {label}", data
        for k in range(3):
            yield f"the same run again ({k + 1})", None
        yield "into a folder holding another checkpoint", None
        yield "into a folder holding the user's files", None

    for n, (label, data) in enumerate(variants()):
        tally.inputs[family] += 1
        here = work / "checkpoint" / f"{n:03d}"
        here.mkdir(parents=True)
        run, out = here / "run.json", here / "cp"
        run.write_bytes(data if data is not None else (output if "same run" in label else good_run).read_bytes())
        if label.startswith("into a folder holding another"):
            shutil.copytree(root / "cp", out)
            record = json.loads((out / "checkpoint.json").read_text())
            record["instance_id"] = "acme__widget-2"
            (out / "checkpoint.json").write_text(json.dumps(record))
        elif label.startswith("into a folder holding the user's"):
            out.mkdir()
            (out / "notes.md").write_text("my notes\n")
        before = _hashes(out)
        status, err = checkpoint(run, out, label)
        made = None
        with contextlib.suppress(OSError, ValueError):
            made = json.loads((out / "checkpoint.json").read_text())
        same = made is not None and (made["patch_sha256"], made["point"]) == (good["patch_sha256"], good["point"])
        if status == "traceback":
            outcome = "traceback"
        elif label.startswith("into a folder"):
            outcome = ("clear one-line error" if status != 0 and _hashes(out) == before and len(_errors(err)) == 1
                       else "silent overwrite")
        elif label.startswith("the same run"):
            again = made is not None and made["patch_sha256"] == good_output["patch_sha256"]
            outcome = "unaffected (part not read)" if status == 0 and again else "same inputs, another checkpoint"
        elif status == 0:
            outcome = "unaffected (part not read)" if same else "verdict from malformed input"
        elif before == {} and _hashes(out) == {} and len([x for x in err.splitlines() if x.strip()]) >= 1:
            outcome = "clear one-line error"
        else:
            outcome = "other"
        tally.outcome(family, label, outcome)


# --- inputs at the door and output folders: malformed rows, predictions, points files, checkpoint folders ---


_DOOR_WORLDS: dict[Path, dict[str, Any]] = {}


def _door_world(work: Path) -> dict[str, Any]:
    """The inputs the door family damages (built once): a calculator task that grades in seconds (its dataset
    row, its mirror), a run of another small task with its points file and checkpoint (views built), and a
    checkpoint of the tiny flask task with its views (for ``export harbor``)."""
    if work in _DOOR_WORLDS:
        return _DOOR_WORLDS[work]
    from _output_runs import output_run
    from conftest import CALC_BUGGY, CALC_ENV_SPEC, CALC_TEST, make_repo
    from docker_images import tiny_task
    from test_harbor import _checkpoint

    root = work / "door-base"
    _, sha = make_repo(root / "src" / "calc", {"calc.py": CALC_BUGGY, "test_calc.py": CALC_TEST},
                       bare_mirror=root / "mirror" / "acme__calc.git")
    row = {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "version": "0.1",
           "problem_statement": "add() subtracts instead of adding", "FAIL_TO_PASS": ["test_calc.py::test_add"],
           "PASS_TO_PASS": [], "patch": "", "test_patch": "", "takeover_env_spec": CALC_ENV_SPEC}
    task, source, run, dataset = output_run(root / "widget")
    common = ["--dataset", str(dataset), "--mirror", str(source.mirror), "--offline"]
    world = {"root": root, "row": row, "calc_mirror": root / "mirror", "run": run, "dataset": dataset,
             "points": root / "points" / f"{task.instance_id}.points.json", "cp": root / "cp"}
    for argv in (["points", str(run), *common, "--out-dir", str(root / "points")],
                 ["checkpoint", str(run), *common, "--point-type", "after_first_source_edit", "--no-workspace",
                  "--out-dir", str(root / "cp")],
                 ["views", str(run), "--checkpoint-dir", str(root / "cp"), "--dataset", str(dataset), "--view",
                  "repo_only"]):
        _quiet(argv)
    flask, flask_source = tiny_task(root / "flask" / "repo")
    cps, flask_dataset = _checkpoint(root / "flask", flask, flask_source)
    world.update(flask_cp=cps / "event-3", flask_dataset=flask_dataset, flask_mirror=flask_source.mirror)
    _DOOR_WORLDS[work] = world
    return world


def _quiet(argv: list[str]) -> None:
    """Run ``takeover ARGV`` to build an input (not counted); it must succeed."""
    from takeover.cli import main

    saved, sys.argv = sys.argv, ["takeover", *argv]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main()
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"building the fuzz's inputs: takeover {' '.join(argv)} exited {exc.code}") from None
    finally:
        sys.argv = saved


def _jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def door_variants(world: dict[str, Any]) -> Iterator[tuple[str, str, Callable[[Path], tuple[list[str], Path]]]]:
    """``(label, what exit 0 means, build)``: ``build(folder)`` writes the damaged input and returns the command
    and the file its error must name."""
    row, f2p = world["row"], "FAIL_TO_PASS"
    calc = ["--mirror", str(world["calc_mirror"]), "--offline"]

    def grade_rows(rows: list) -> Callable[[Path], tuple[list[str], Path]]:
        def build(here: Path) -> tuple[list[str], Path]:
            data = _jsonl(here / "tasks.jsonl", rows)
            return ["grade", "--dataset", str(data), "--instance-id", "acme__calc-1", "--empty", *calc,
                    "--out-dir", str(here / "out")], data
        return build

    def without(field: str) -> dict:
        return {k: v for k, v in row.items() if k != field}

    five = {**row, "FAIL_TO_PASS": json.dumps(row[f2p]), "PASS_TO_PASS": "[]", "image": "x:latest",
            "eval_script": "#!/bin/bash\n", "log_parser": "parse_log_pytest", "eval_type": "pass_and_fail"}
    verdict = "verdict from malformed input"
    yield "4.x row without FAIL_TO_PASS", verdict, grade_rows([without(f2p)])
    yield "4.x row with FAIL_TO_PASS null", verdict, grade_rows([{**row, f2p: None}])
    yield "4.x row with FAIL_TO_PASS an empty string", verdict, grade_rows([{**row, f2p: ""}])
    yield "4.x row without PASS_TO_PASS", verdict, grade_rows([without("PASS_TO_PASS")])
    yield "4.x row with test_patch null", verdict, grade_rows([{**row, "test_patch": None}])
    yield "4.x rows, one instance_id twice (the second without its test)", "silent drop", grade_rows(
        [row, {**row, f2p: []}])
    yield "5.x row without FAIL_TO_PASS", verdict, grade_rows([{k: v for k, v in five.items() if k != f2p}])
    yield "5.x row with an unknown eval_type", verdict, grade_rows([{**five, "eval_type": "fail_and_pass"}])
    yield "5.x row with log_parser a number", verdict, grade_rows([{**five, "log_parser": 7}])

    def grade_predictions(preds: Any, suffix: str = ".jsonl") -> Callable[[Path], tuple[list[str], Path]]:
        def build(here: Path) -> tuple[list[str], Path]:
            data = _jsonl(here / "tasks.jsonl", [row])
            path = here / f"preds{suffix}"
            if suffix == ".jsonl":
                _jsonl(path, preds)
            else:
                path.write_text(preds)
            return ["grade", "--dataset", str(data), "--predictions", str(path), *calc, "--out-dir",
                    str(here / "out")], path
        return build

    iid = row["instance_id"]
    yield "prediction without model_patch", verdict, grade_predictions([{"instance_id": iid, "model_name_or_path": "m"}])
    yield "two predictions for one model and instance", "silent overwrite", grade_predictions(
        [{"instance_id": iid, "model_name_or_path": "m", "model_patch": p} for p in ("", "diff --git a/x b/x\n")])
    yield "preds.json naming one instance twice", "silent drop", grade_predictions(
        f'{{"{iid}": {{"model_patch": ""}}, "{iid}": {{"model_patch": ""}}}}', ".json")

    def views_with_points(change: Callable[[dict], dict], command: str) -> Callable[[Path], tuple[list[str], Path]]:
        def build(here: Path) -> tuple[list[str], Path]:
            here.mkdir(parents=True, exist_ok=True)
            path = here / "points.json"
            path.write_text(json.dumps(change(json.loads(world["points"].read_text()))))
            return [command, str(world["run"]), "--dataset", str(world["dataset"]), "--points-file", str(path),
                    "--point-type", "after_first_source_edit", "--no-workspace" if command == "checkpoint" else
                    "--view=repo_only", "--out-dir", str(here / "out")], path
        return build

    yield "points file of another task (views)", verdict, views_with_points(
        lambda d: {**d, "instance_id": "acme__widget-2"}, "views")
    yield "points file of another task (checkpoint)", verdict, views_with_points(
        lambda d: {**d, "instance_id": "acme__widget-2"}, "checkpoint")
    yield "points file of another run of the task", verdict, views_with_points(
        lambda d: {**d, "events": d["events"] + 2}, "checkpoint")

    def export(change: Callable[[Path, Path], Path], view: str) -> Callable[[Path], tuple[list[str], Path]]:
        def build(here: Path) -> tuple[list[str], Path]:
            cp = here / "elsewhere" / "cps" / "event-3"
            shutil.copytree(world["flask_cp"], cp, ignore=shutil.ignore_patterns("workspace"))
            named = change(cp, here)
            return ["export", "harbor", str(cp), "--dataset", str(world["flask_dataset"]), "--mirror",
                    str(world["flask_mirror"]), "--offline", "--image", "example/tiny:1", "--view", view,
                    "--out-dir", str(here / "out")], named
        return build

    def views_of_another_task(cp: Path, here: Path) -> Path:
        index = json.loads((cp / "views" / "views.json").read_text())
        (cp / "views" / "views.json").write_text(json.dumps({**index, "instance_id": "pallets__flask-1"}))
        shutil.copy(world["cp"] / "views" / "repo_only.md", cp / "views" / "repo_only.md")  # its prompt
        return cp / "views" / "views.json"

    def relative_predecessor(cp: Path, here: Path) -> Path:
        record = json.loads((cp / "checkpoint.json").read_text())
        (cp / "checkpoint.json").write_text(json.dumps({**record, "trajectory": "run.json"}))
        (here / "cwd").mkdir()
        shutil.copy(world["run"], here / "cwd" / "run.json")  # another task's run, in the current folder
        return cp / "checkpoint.json"

    def predecessor_of_another_task(cp: Path, here: Path) -> Path:
        record = json.loads((cp / "checkpoint.json").read_text())
        (cp / "checkpoint.json").write_text(json.dumps({**record, "trajectory": str(world["run"])}))
        return world["run"]

    yield "checkpoint folder whose views are another task's", verdict, export(views_of_another_task, "repo_only")
    yield "relative predecessor path, another task's run in the current folder", verdict, export(
        relative_predecessor, "raw_trace")
    yield "predecessor of another task", verdict, export(predecessor_of_another_task, "raw_trace")


def fuzz_door(work: Path, tally: Tally) -> None:
    """Malformed rows, predictions, points files and checkpoint folders, through the command a user runs on
    them: each must be refused at the door (exit 2, one line naming the file), never graded, viewed or
    exported."""
    import os

    family = "inputs at the door"
    if tally.only and not family.startswith(tuple(tally.only.split(","))):
        return
    world = _door_world(work)
    for n, (label, if_done, build) in enumerate(door_variants(world)):
        tally.inputs[family] += 1
        here = work / "door" / f"{n:03d}"
        here.mkdir(parents=True)
        argv, named = build(here)
        cwd = os.getcwd()
        os.chdir(here / "cwd" if (here / "cwd").is_dir() else here)
        try:
            status, _, err = tally.run(family, label, argv)
        finally:
            os.chdir(cwd)
        out = here / "out"
        written = out.exists() and any(out.rglob("*"))
        if status == "traceback":
            outcome = "traceback"
        elif status == 0:
            outcome = if_done
        elif len(_errors(err)) == 1 and _errors(err)[0].startswith(f"error: {named}") and not written:
            outcome = "clear one-line error"
        else:
            outcome = "other"
        tally.outcome(family, label, outcome)


def fuzz_outputs(work: Path, tally: Tally) -> None:
    """Output folders holding what the command did not write: the user's own files, another task's views,
    a foreign grading result. Each must be refused with one line, every file left as it was."""
    family = "output folders"
    if tally.only and not family.startswith(tuple(tally.only.split(","))):
        return
    world = _door_world(work)
    row = world["row"]
    views = ["views", str(world["run"]), "--checkpoint-dir", str(world["cp"]), "--dataset", str(world["dataset"]),
             "--view", "repo_only", "--out-dir"]
    grade = ["grade", "--instance-id", row["instance_id"], "--empty", "--mirror", str(world["calc_mirror"]),
             "--offline", "--out-dir"]

    def mine(out: Path) -> None:
        out.mkdir(parents=True)
        (out / "repo_only.md").write_text("my own notes on this handoff\n")

    def another_tasks_views(out: Path) -> None:
        shutil.copytree(world["cp"] / "views", out)
        index = json.loads((out / "views.json").read_text())
        (out / "views.json").write_text(json.dumps({**index, "instance_id": "acme__widget-2"}))

    def foreign_result(out: Path) -> None:
        (out / "empty" / row["instance_id"]).mkdir(parents=True)
        (out / "empty" / row["instance_id"] / "result.json").write_text("my own results\n")

    def another_instances_result(out: Path) -> None:
        (out / "empty" / row["instance_id"]).mkdir(parents=True)
        (out / "empty" / row["instance_id"] / "result.json").write_text(json.dumps(
            {"instance_id": "acme__calc-2", "resolved": True}))

    def users_dataset(out: Path) -> None:
        out.mkdir(parents=True)
        shutil.copy(world["dataset"], out / "tasks.jsonl")  # named as the selection file

    def another_runs_atif(out: Path) -> None:
        out.mkdir(parents=True)
        (out / "trajectory.json").write_text(json.dumps({"schema_version": "ATIF-v1.7", "extra": {
            "instance_id": "acme__widget-2", "final_patch": ""}, "steps": []}))

    select = ["tasks", "select", "--dataset", "{out}/tasks.jsonl", "--limit", "0", "--out-dir"]
    atif = ["export", "atif", str(world["run"]), "--out-dir"]
    cases = [("views --out-dir holding the user's repo_only.md", views, mine),
             ("views --out-dir holding another task's views", views, another_tasks_views),
             ("grade --out-dir over a foreign result.json", grade, foreign_result),
             ("grade --out-dir over another instance's result.json", grade, another_instances_result),
             ("tasks select --out-dir holding the user's tasks.jsonl", select, users_dataset),
             ("export atif --out-dir holding another run's trajectory.json", atif, another_runs_atif)]
    for n, (label, argv, fill) in enumerate(cases):
        tally.inputs[family] += 1
        here = work / "outputs-cases" / f"{n:03d}"
        here.mkdir(parents=True)
        out = here / "out"
        fill(out)
        extra = ["--dataset", str(_jsonl(here / "tasks.jsonl", [row]))] if argv[0] == "grade" else []
        before = _hashes(out)
        status, _, err = tally.run(family, label, [a.replace("{out}", str(out)) for a in (*argv, str(out), *extra)])
        if status == "traceback":
            outcome = "traceback"
        elif status == 0 or _hashes(out) != before:
            outcome = "silent overwrite"
        elif len(_errors(err)) == 1 and str(out) in _errors(err)[0]:
            outcome = "clear one-line error"
        else:
            outcome = "other"
        tally.outcome(family, label, outcome)


if __name__ == "__main__":
    main()
