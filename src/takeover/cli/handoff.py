"""``takeover handoff`` and ``takeover resume``: the takeover prompt for an interrupted agent session, and a
successor that continues it on a copy of the repository. Thin layers over :mod:`takeover.handoff`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from takeover._util.folders import check_writable
from takeover._util.io import atomic_write_text
from takeover.agents import AgentChoice
from takeover.cli.failures import command
from takeover.cli.options import (
    EVENT_HELP,
    OUT_DIR_HELP,
    VIEW_HELP,
    JsonOption,
    RecordOption,
    VerboseOption,
    agent_choice,
    model_settings,
    note_writer,
    one_view,
    only_flags,
    option_groups,
    replay_settings,
    run_limits,
    view_budgets,
)
from takeover.handoff import compose_handoff, handoff_markdown
from takeover.handoff.resume import resume_session
from takeover.limits import RunLimits
from takeover.llm import ModelSettings
from takeover.replay_settings import ReplaySettings
from takeover.view_budgets import ViewBudgets
from takeover.vocabulary import INFRA_EXIT_STATUSES

#: The file ``takeover handoff --out-dir DIR`` writes: the takeover prompt alone, named as in a run folder.
PROMPT_FILE = "prompt.md"

SessionArg = Annotated[Path, typer.Argument(
    help="Session file of the agent that stopped: Claude Code (~/.claude/projects/<project>/<id>.jsonl), "
    "Codex CLI (~/.codex/sessions/.../rollout-*.jsonl) or any format takeover reads (detected by content).")]
RepoOpt = Annotated[Path | None, typer.Option(
    "--repo", help="The repository the session worked in (default: the session's working folder).")]


#: The replay flags of ``handoff --event``: the session is replayed in a copy of the user's repository, with the
#: interpreters on PATH (a session has no task environment to choose).
session_replay = only_flags(replay_settings, "replay_timeout", "memory_mb", "use_sandbox")


@option_groups(model=note_writer, view_budgets=view_budgets, replay=session_replay)
def handoff(
    session: SessionArg,
    model: ModelSettings | None,
    view_budgets: ViewBudgets,
    replay: ReplaySettings,
    repo: RepoOpt = None,
    view: Annotated[list[str] | None, typer.Option("--view", help=f"{VIEW_HELP} One; default: structured_notes with --model, raw_trace without.")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: the takeover prompt alone, as DIR/{PROMPT_FILE} (it is printed too).")] = None,
    as_json: JsonOption = False,
    record: RecordOption = None,
    event: Annotated[int | None, typer.Option("--event", help=f"{EVENT_HELP} Instead of the last event: the repository as it was then, rebuilt by replaying the session in a scratch copy and verified against the repository now.")] = None,
    verbose: VerboseOption = False,
) -> None:
    """Print the takeover prompt for the agent that continues SESSION on the repository as it is now.

    With --json, one line: the handoff record (session, repository, facts, point, view, prompt, notes).

    Reads the session (secrets masked before any model sees it) and the repository's changes against
    the session's starting commit (recorded by Codex CLI; else HEAD), untracked files included; computes
    the protocol's facts (changed source and test files, artifacts, latest verification and its result,
    the continuation label); writes the notes with the study's validation, retries and leak guard; and
    prints the facts and the prompt. Neither the session file nor the repository is changed. --model
    (with --base-url) names the note writer; without one, the facts and the raw_trace view. --event N
    replays the session under the replay flags (--replay-timeout, --memory-mb, --use-sandbox/--no-sandbox).

    Exit status: 0 with a prompt; 1 when the notes were not accepted (the facts and the reasons are
    printed, no prompt); 2 on bad input.

    Examples:

        takeover handoff ~/.claude/projects/-home-me-calc/0d6f3c52.jsonl --repo ~/calc

        takeover handoff rollout-2025-10-20.jsonl --repo . --model qwen --base-url http://127.0.0.1:8080/v1 --out-dir next/
    """
    prompt_file = out_dir / PROMPT_FILE if out_dir is not None else None
    if prompt_file is not None:
        check_writable(prompt_file, file=True, flag="--out-dir")
    result = compose_handoff(session, repo, model=model, view=one_view(view, "handoff"), record=record,
                             view_budgets=view_budgets, event=event, replay=replay)
    if prompt_file is not None and result.prompt is not None:
        atomic_write_text(prompt_file, result.prompt)
    if as_json:
        print(json.dumps(result.public(), ensure_ascii=False))
    else:
        sys.stdout.write(handoff_markdown(result))
    if prompt_file is not None and result.prompt is not None:
        print(f"wrote the takeover prompt to {prompt_file}", file=sys.stderr)
    if result.size_warning:  # also in the output's notes, which a prompt this size buries
        print(f"warning: {result.size_warning}", file=sys.stderr)
    if result.prompt is None:
        raise typer.Exit(1)



@option_groups(model=model_settings, limits=run_limits, agent=agent_choice, view_budgets=view_budgets)
def resume(
    session: SessionArg,
    model: ModelSettings,
    limits: RunLimits,
    agent: AgentChoice,
    view_budgets: ViewBudgets,
    repo: RepoOpt = None,
    view: Annotated[list[str] | None, typer.Option("--view", help=f"{VIEW_HELP} One; default: structured_notes.")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: the run folder, outside the repository (default: ~/.cache/takeover/resume/<session>-<time>).")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Afterwards apply the successor's changes to the repository's working tree (never staged or committed).")] = False,
    as_json: JsonOption = False,
    record: RecordOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Continue SESSION with a successor agent (by default mini-swe-agent, sandboxed) on a copy of the
    repository. The model (--model, --base-url) writes the notes and runs the successor; --agent,
    --command-backend, --protocol and their options choose the successor as for takeover agent run (its
    commands run on this host).

    The copy is the repository's commit plus its uncommitted changes (untracked files included; files
    ignored by git are not copied). The run is written in takeover's run format to --out-dir, with the
    handoff (handoff.json, handoff.patch) and the successor's own changes (successor.patch). The
    repository is left as it is for you to review, unless --apply: then the successor's changes are
    applied to its working tree, if it has not changed since. Nothing is ever committed or pushed.

    With --json, one line: the resume record (the handoff, the run record, the run folder, the workspace,
    the successor's patch and changed files, whether it was applied).

    Exit status: 0 when the run finished (whatever the agent did); 1 when the notes were not accepted
    or the model endpoint or the environment failed; 2 on bad input.

    Example:

        takeover resume rollout.jsonl --repo ~/calc --model openai/qwen --base-url http://127.0.0.1:8080/v1 --step-limit 50
    """
    if out_dir is not None:
        check_writable(out_dir)
    result = resume_session(session, repo, model, out_dir, view=one_view(view, "resume") or "structured_notes",
                            limits=limits, agent=agent, apply=apply, record=record, view_budgets=view_budgets)
    run = result.record
    failed = run.exit_status in INFRA_EXIT_STATUSES
    if as_json:
        print(json.dumps(result.model_dump(mode="json", exclude={"handoff": {"repository": {"patch"}}}),
                         ensure_ascii=False))
    else:
        acc = run.accounting
        status = run.exit_status.value if run.exit_status else "unfinished"
        print(f"successor run on a copy of {result.handoff.repository.root}: {status}"
              + (f" ({run.exit_detail})" if run.exit_detail else ""))
        print(f"  events {acc.agent_events}, model calls {acc.llm_calls}, prompt tokens {acc.prompt_tokens:,}, "
              f"wall {acc.wall_seconds:.1f}s; {run.sandbox}")
        print(f"  run folder: {result.run_dir}")
        print(f"  the successor's workspace (review it): {result.workspace}")
        if result.successor_patch:
            changed = ", ".join(result.changed_files) or "nothing"
            print(f"  its changes ({changed}): {result.successor_patch}")
        if result.apply_note:
            print(f"  {'applied' if result.applied else 'not applied'}: {result.apply_note}")
        elif result.changed_files:
            print(f"  your repository is unchanged; to take the changes: "
                  f"git -C {result.handoff.repository.root} apply {result.successor_patch}")
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``takeover handoff`` and ``takeover resume`` to ``app``."""
    command(app, "handoff")(handoff)
    command(app, "resume")(resume)
