"""``takeover claims OUT_DIR``: the claims of a study's model-written notes checked against the predecessor's
trace, stored with each view unit; optionally judged by a model where the rules leave a claim unsupported.

A thin layer over :func:`takeover.claims.study_claims` and :func:`takeover.claims.unit_claims.judge_study`
(docs/protocol.md section 7.6).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from takeover._util.folders import check_writable
from takeover.claims import study_claims, summary_of
from takeover.claims.unit_claims import judge_study
from takeover.cli.console import output_console
from takeover.cli.failures import command
from takeover.cli.options import JsonOption, VerboseOption, claims_judge, option_groups
from takeover.errors import InputError
from takeover.llm import ModelSettings


@option_groups(judge=claims_judge)
def claims(
    out_dir: Annotated[Path, typer.Argument(help="Output folder of `takeover run` (OUT_DIR).")],
    judge: ModelSettings | None,
    again: Annotated[bool, typer.Option("--again", help="Judge notes the same judge model judged before again.")] = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Check every claim of the study's model-written notes against the predecessor's events up to the cut
    (supported, unsupported, contradicted; OUT_DIR/work/view/<key>/claims.json). `takeover report` does the
    same check; with --judge-model a model also judges the claims the rules leave unsupported, recorded
    apart from the rules' figures.

    Examples:

        takeover claims out/pilot

        takeover claims out/pilot --judge-model openai/qwen --base-url http://127.0.0.1:8080/v1
    """
    if not (out_dir / "plan.json").is_file():
        raise InputError(out_dir, "has no plan.json: give the output folder of `takeover run` or `takeover quickstart`")
    check_writable(out_dir, flag="")
    if judge is not None:
        rows = judge_study(out_dir, judge, again=again)
    else:
        rows = study_claims(out_dir)
    if as_json:
        for r in rows:
            print(json.dumps({"key": r.key, "instance_id": r.instance_id, "point_type": r.point_type,
                              "point_key": r.point_key, "view": r.view, "reason": r.reason, **r.record()},
                             ensure_ascii=False))
        return
    table = Table(title=f"Claims of the notes in {escape(str(out_dir))}")
    for column in ("view", "notes", "claims", "per note", "supported", "unsupported", "contradicted", "judged"):
        table.add_column(column)
    for view in sorted({r.view for r in rows if r.figures is not None}):
        done = [r for r in rows if r.view == view and r.figures is not None]
        s = summary_of([r.figures for r in done])
        judged = [v for r in done if r.judge for v in r.judge.get("verdicts", [])]
        table.add_row(view, str(s["notes"]), str(s["claims"]), str(s["claims_per_note"]), str(s["supported"]),
                      str(s["unsupported"]), str(s["contradicted"]),
                      ", ".join(f"{n} {v}" for v in ("supported", "unsupported", "contradicted", "no_answer")
                                if (n := sum(1 for j in judged if j["verdict"] == v))) or "-")
    console = output_console()
    console.print(table)
    for r in rows:
        if r.reason:
            console.print(f"[yellow]{escape(r.key)}:[/yellow] {escape(r.reason)}")


def register(app: typer.Typer) -> None:
    """Add ``takeover claims`` to ``app``."""
    command(app, "claims")(claims)
