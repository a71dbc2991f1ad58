"""``takeover grade``: SWE-bench grading of a patch or a predictions file (docs/protocol.md section 6)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from takeover._util.folders import check_writable
from takeover._util.io import read_text
from takeover._util.sandbox import status
from takeover.cli.console import is_watched, output_console, progress_line
from takeover.cli.failures import command
from takeover.cli.options import (
    OUT_DIR_HELP,
    DatasetOption,
    InstanceIdsOption,
    JsonOption,
    VerboseOption,
    grading_settings,
    option_groups,
    repo_source,
)
from takeover.errors import InputError
from takeover.grading import Prediction, grade_predictions, grading_backend, read_predictions
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import load_tasks, task_index

# Per run, under the current folder: a shared cache folder would mix runs and users (and the gold/empty
# logs of one run would overwrite another's).
DEFAULT_OUT_DIR = Path("takeover-grades")


def _outcome(o, graded: bool) -> str:
    # No tests ran (an error, or a patch that did not apply): no count, rather than a misleading 0/0.
    return f"{len(o.success)}/{len(o.success) + len(o.failure)}" if graded else "-"


@option_groups(grading=grading_settings, repo_source=repo_source)
def grade_command(
    dataset: DatasetOption,
    grading: GradingSettings,
    repo_source: RepoSource,
    instance_id: InstanceIdsOption = None,
    patch: Annotated[Path | None, typer.Option("--patch", help="Candidate patch file (unified diff).")] = None,
    gold: Annotated[bool, typer.Option("--gold", help="Grade the task's reference patch.")] = False,
    empty: Annotated[bool, typer.Option("--empty", help="Grade the empty patch.")] = False,
    predictions: Annotated[
        Path | None, typer.Option("--predictions", help="SWE-bench predictions (preds.json or .jsonl) to grade.")
    ] = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out-dir", help=f"{OUT_DIR_HELP}: logs, report.json and result.json in "
                          "DIR/<gold|empty|patch|model>/<instance_id>/ (default ./takeover-grades in the current "
                          "folder).")] = None,
    as_json: JsonOption = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Grade again even when --out-dir holds a result graded under the same key (same patch, "
                        "dataset row, environment specification, backend and versions).")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Grade a patch with the task's SWE-bench tests and print resolved / handoff state.

    With --json, one line per graded prediction, in input order: instance_id, resolved, handoff_state,
    FAIL_TO_PASS and PASS_TO_PASS (success and failure lists), backend, env_seconds, env_cached,
    env_build_seconds, test_seconds, log_path, applied, apply_error, timed_out, error, network, warnings,
    grading_rules (whose verdict rules decided it), harness (the swebench that parsed the log),
    eval_script_source, hash_seed, hash_seeds, flaky (the tests that flipped with the hash seed, both seeds; or null).
    With output to a file or pipe, one line per graded prediction also goes to stderr as it finishes.
    Exit status: 0 when every prediction was graded, 1 when grading one failed, 2 on bad input.

    Examples:

        takeover grade --dataset swebench_verified.jsonl --instance-id pallets__flask-5014 --gold --json

        takeover grade --dataset swebench_verified.jsonl --predictions preds.jsonl --backend docker \\
          --grading-timeout 3600 --out-dir grades/

        takeover grade --dataset tasks.jsonl --instance-id acme__calc-1 --patch fix.diff \\
          --backend-option spec_file=envs.toml
    """
    chosen = sum(bool(x) for x in (patch, gold, empty, predictions))
    if chosen != 1:
        raise InputError("command line", "give exactly one of --patch FILE, --gold, --empty, --predictions FILE")
    if predictions is None and not instance_id:
        raise InputError("command line", "--instance-id ID is required with --patch, --gold or --empty")
    log_dir = out_dir if out_dir is not None else Path.cwd() / DEFAULT_OUT_DIR
    check_writable(log_dir)
    tasks = load_tasks(dataset)
    by_id = task_index(tasks)
    for iid in instance_id or []:
        if iid not in by_id:
            raise InputError(dataset, f"no task with instance_id {iid!r}", field="instance_id")
    if predictions is not None:
        preds = read_predictions(predictions, instance_ids=by_id)
        if instance_id:
            preds = [p for p in preds if p.instance_id in set(instance_id)]
    else:
        preds = []
        for iid in instance_id or []:
            if patch is not None:
                text = read_text(patch)
                preds.append(Prediction(instance_id=iid, model_name_or_path="patch", model_patch=text))
            elif gold:
                preds.append(Prediction(instance_id=iid, model_name_or_path="gold", model_patch=by_id[iid].patch))
            else:
                preds.append(Prediction(instance_id=iid, model_name_or_path="empty", model_patch=""))
    # One prediction at a time (grading is sequential either way), so that each shows when it is done.
    lines = not is_watched()
    results = []
    for number, pred in enumerate(preds, 1):
        results += grade_predictions(tasks, [pred], grading, log_dir=log_dir,
                                     repo_source=repo_source, force=force)
        if lines:
            r = results[-1]
            verdict = "error" if r.error else ("flaky" if r.flaky else "resolved" if r.resolved else "not resolved")
            progress_line(f"grade {number}/{len(preds)} {verdict} ({r.handoff_state or 'no handoff state'}), "
                          f"environment {r.env_seconds:.1f} s, tests {r.test_seconds:.1f} s: {r.instance_id}")
    if as_json:
        for r in results:
            print(json.dumps(r.summary(), ensure_ascii=False), flush=True)
    else:
        console = output_console()
        table = Table(title=f"SWE-bench grading ({grading.backend} backend)")
        for col in ("instance_id", "resolved", "handoff state", "FAIL_TO_PASS", "PASS_TO_PASS", "env s", "test s"):
            # Fold rather than cut ("59/…"): every cell stays readable on a narrow terminal.
            table.add_column(col, overflow="fold")
        for r in results:
            table.add_row(escape(r.instance_id), "flaky" if r.flaky else "yes" if r.resolved else "no",
                          r.handoff_state or "error",
                          _outcome(r.FAIL_TO_PASS, not r.error), _outcome(r.PASS_TO_PASS, not r.error),
                          f"{r.env_seconds:.1f}",
                          f"{r.test_seconds:.1f}")
        console.print(table)
        if results and grading_backend(results[0].backend).uses_sandbox and not results[0].sandboxed:
            console.print(f"[yellow]{escape(status().message)}[/yellow]", highlight=False)
        for r in results:
            if r.apply_error:
                console.print(f"[yellow]{escape(r.instance_id)}: patch does not apply:[/yellow] {escape(r.apply_error)}",
                              markup=True, highlight=False)
            if r.error:
                console.print(f"[red]{escape(r.instance_id)}: {escape(r.error)}[/red]", highlight=False)
            if r.timed_out:
                console.print(f"[red]{escape(r.instance_id)}: tests timed out after {grading.timeout:.0f} s "
                              "(process group killed)[/red]")
            if r.reuse_note:
                console.print(f"{escape(r.instance_id)}: {escape(r.reuse_note)}", highlight=False)
            console.print(f"log: {escape(str(r.log_path))}", highlight=False)
    for r in results:  # plain stderr lines: also seen with --json, and never parsed as markup
        for w in r.warnings:
            print(f"warning: {r.instance_id}: {w}", file=sys.stderr)
    if any(r.error for r in results):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``takeover grade``."""
    command(app, "grade")(grade_command)
