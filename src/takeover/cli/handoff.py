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
from takeover.cli.options import (
    EVENT_HELP,
    MAX_RETRY_WAIT,
    MODEL_HELP,
    OUT_DIR_HELP,
    REQUEST_TIMEOUT,
    RETRIES,
    VIEW_HELP,
    ApiKeyEnvOption,
    BaseUrlOption,
    CommandTimeoutOption,
    CostLimitOption,
    JsonOption,
    MaxConsecutiveFormatErrorsOption,
    MaxRetryWaitOption,
    NoteMaxTokensOption,
    PromptTokenLimitOption,
    ProtocolOption,
    RawTraceMaxCharsOption,
    RawTraceMaxTokensOption,
    RecordOption,
    RequestTimeoutOption,
    RetriesOption,
    StepLimitOption,
    VerboseOption,
    WallTimeLimitSecondsOption,
    one_view,
)
from takeover.errors import TakeoverError
from takeover.handoff import compose_handoff, handoff_markdown
from takeover.handoff.resume import HandoffBlocked, resume_session
from takeover.limits import RunLimits
from takeover.llm import ModelSettings
from takeover.views.notes import NOTE_MAX_TOKENS
from takeover.vocabulary import INFRA_EXIT_STATUSES

#: The file ``takeover handoff --out-dir DIR`` writes: the takeover prompt alone, named as in a run folder.
PROMPT_FILE = "prompt.md"

SessionArg = Annotated[Path, typer.Argument(
    help="Session file of the agent that stopped: Claude Code (~/.claude/projects/<project>/<id>.jsonl), "
    "Codex CLI (~/.codex/sessions/.../rollout-*.jsonl) or any format takeover reads (detected by content).")]
RepoOpt = Annotated[Path | None, typer.Option(
    "--repo", help="The repository the session worked in (default: the session's working folder).")]


def _settings(model: str | None, base_url: str | None, api_key_env: str | None, timeout: float,
              retries: int, max_retry_wait: float) -> ModelSettings | None:
    if model is None:
        return None
    return ModelSettings(model=model, base_url=base_url, api_key_env=api_key_env or None, timeout=timeout,
                         retries=retries, max_retry_wait=max_retry_wait)


def _fail(exc: Exception) -> typer.Exit:
    print(f"error: {exc}", file=sys.stderr)
    return typer.Exit(2)


def handoff(
    session: SessionArg,
    repo: RepoOpt = None,
    model: Annotated[str | None, typer.Option("--model", help=f"{MODEL_HELP} The note writer (without one: the facts and the raw_trace view).")] = None,
    base_url: BaseUrlOption = None,
    api_key_env: ApiKeyEnvOption = "OPENAI_API_KEY",
    view: Annotated[list[str] | None, typer.Option("--view", help=f"{VIEW_HELP} One; default: structured_notes with --model, raw_trace without.")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: the takeover prompt alone, as DIR/{PROMPT_FILE} (it is printed too).")] = None,
    as_json: JsonOption = False,
    record: RecordOption = None,
    raw_trace_max_chars: RawTraceMaxCharsOption = None,
    raw_trace_max_tokens: RawTraceMaxTokensOption = None,
    note_max_tokens: NoteMaxTokensOption = NOTE_MAX_TOKENS,
    timeout: RequestTimeoutOption = REQUEST_TIMEOUT,
    retries: RetriesOption = RETRIES,
    max_retry_wait: MaxRetryWaitOption = MAX_RETRY_WAIT,
    event: Annotated[int | None, typer.Option("--event", help=f"{EVENT_HELP} Instead of the last event: the repository as it was then, rebuilt by replaying the session in a scratch copy and verified against the repository now.")] = None,
    verbose: VerboseOption = False,
) -> None:
    """Print the takeover prompt for the agent that continues SESSION on the repository as it is now.

    With --json, one line: the handoff record (session, repository, facts, point, view, prompt, notes).

    Reads the session (secrets masked before any model sees it) and the repository's changes against
    the session's starting commit (recorded by Codex CLI; else HEAD), untracked files included; computes
    the protocol's facts (changed source and test files, artifacts, latest verification and its result,
    the continuation label); writes the notes with the study's validation, retries and leak guard; and
    prints the facts and the prompt. Neither the session file nor the repository is changed.

    Exit status: 0 with a prompt; 1 when the notes were not accepted (the facts and the reasons are
    printed, no prompt); 2 on bad input.

    Examples:

        takeover handoff ~/.claude/projects/-home-me-calc/0d6f3c52.jsonl --repo ~/calc

        takeover handoff rollout-2025-10-20.jsonl --repo . --model qwen --base-url http://127.0.0.1:8080/v1 --out-dir next/
    """
    prompt_file = out_dir / PROMPT_FILE if out_dir is not None else None
    try:
        if prompt_file is not None:
            check_writable(prompt_file, file=True, flag="--out-dir")
        result = compose_handoff(
            session, repo, model=_settings(model, base_url, api_key_env, timeout, retries, max_retry_wait),
            view=one_view(view, "handoff"), record=record, raw_trace_max_chars=raw_trace_max_chars,
            raw_trace_max_tokens=raw_trace_max_tokens, note_max_tokens=note_max_tokens, event=event,
        )
    except TakeoverError as exc:
        raise _fail(exc) from None
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



def resume(
    session: SessionArg,
    model: Annotated[str, typer.Option("--model", help=f"{MODEL_HELP} The successor (it also writes the notes).")],
    repo: RepoOpt = None,
    base_url: BaseUrlOption = None,
    api_key_env: ApiKeyEnvOption = "OPENAI_API_KEY",
    view: Annotated[list[str] | None, typer.Option("--view", help=f"{VIEW_HELP} One; default: structured_notes.")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: the run folder, outside the repository (default: ~/.cache/takeover/resume/<session>-<time>).")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Afterwards apply the successor's changes to the repository's working tree (never staged or committed).")] = False,
    step_limit: StepLimitOption = 500,
    wall_time_limit_seconds: WallTimeLimitSecondsOption = 4 * 3600.0,
    command_timeout: CommandTimeoutOption = 600.0,
    prompt_token_limit: PromptTokenLimitOption = None,
    cost_limit: CostLimitOption = None,
    max_consecutive_format_errors: MaxConsecutiveFormatErrorsOption = 3,
    protocol: ProtocolOption = "text",
    as_json: JsonOption = False,
    record: RecordOption = None,
    raw_trace_max_chars: RawTraceMaxCharsOption = None,
    raw_trace_max_tokens: RawTraceMaxTokensOption = None,
    note_max_tokens: NoteMaxTokensOption = NOTE_MAX_TOKENS,
    timeout: RequestTimeoutOption = REQUEST_TIMEOUT,
    retries: RetriesOption = RETRIES,
    max_retry_wait: MaxRetryWaitOption = MAX_RETRY_WAIT,
    verbose: VerboseOption = False,
) -> None:
    """Continue SESSION with a successor agent (mini-swe-agent, sandboxed) on a copy of the repository.

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
    try:
        if protocol not in ("text", "tools"):
            raise typer.BadParameter(f"unknown protocol {protocol!r}: use text or tools")
        if out_dir is not None:
            check_writable(out_dir)
        limits = RunLimits(step_limit=step_limit, wall_time_limit_seconds=wall_time_limit_seconds,
                           command_timeout=command_timeout, prompt_token_limit=prompt_token_limit,
                           cost_limit=cost_limit, max_consecutive_format_errors=max_consecutive_format_errors)
        result = resume_session(
            session, repo, _settings(model, base_url, api_key_env, timeout, retries, max_retry_wait), out_dir,
            view=one_view(view, "resume") or "structured_notes",
            limits=limits, protocol=protocol, apply=apply, record=record,
            raw_trace_max_chars=raw_trace_max_chars, raw_trace_max_tokens=raw_trace_max_tokens,
            note_max_tokens=note_max_tokens,
        )
    except HandoffBlocked as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(1) from None
    except TakeoverError as exc:
        raise _fail(exc) from None
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
    app.command("handoff")(handoff)
    app.command("resume")(resume)
