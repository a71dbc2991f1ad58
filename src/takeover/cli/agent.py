"""``takeover agent run``: one predecessor or takeover run over mini-swe-agent (docs/protocol.md section 8)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

agent_app = typer.Typer(
    help="Run agents: predecessor runs on source tasks, takeover runs from checkpoints.", no_args_is_help=True
)


def _find_task(dataset: Path, instance: str):
    from takeover.errors import InputError
    from takeover.tasks import load_tasks

    for task in load_tasks(dataset):
        if task.instance_id == instance:
            return task
    raise InputError(dataset, f"no task with instance_id {instance!r}", field="instance_id")


@agent_app.command("run")
def run(
    dataset: Annotated[Path, typer.Option("--dataset", help="SWE-bench file (.jsonl, .json or .parquet).")],
    instance: Annotated[str, typer.Option("--instance", help="instance_id of the source task.")],
    model: Annotated[
        str, typer.Option("--model", help="Model name as the endpoint knows it (litellm naming).")
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Run directory to write (a finished run with the same inputs is kept; another run there "
            "is refused).",
        ),
    ],
    checkpoint: Annotated[
        Path | None, typer.Option("--checkpoint", help="Checkpoint folder: makes this a takeover run.")
    ] = None,
    view: Annotated[
        str | None, typer.Option("--view", help="Handoff view of a takeover run (repo_only, raw_trace, ...).")
    ] = None,
    prompt_file: Annotated[
        Path | None,
        typer.Option(
            "--prompt-file", help="Prompt text to give instead of the task prompt / the view's prompt file."
        ),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint root.")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Variable holding the API key (never the key itself).")
    ] = "OPENAI_API_KEY",
    protocol: Annotated[
        str, typer.Option("--protocol", help="text (one bash block per reply) or tools.")
    ] = "text",
    backend: Annotated[
        str, typer.Option("--backend", help="local (sandboxed) or docker (SWE-bench image).")
    ] = "local",
    step_limit: Annotated[int, typer.Option("--step-limit", help="Maximum model calls.")] = 500,
    time_limit: Annotated[
        float, typer.Option("--time-limit", help="Wall-clock limit of the run, seconds.")
    ] = 4 * 3600.0,
    command_timeout: Annotated[
        float, typer.Option("--command-timeout", help="Per-command limit, seconds.")
    ] = 600.0,
    max_prompt_tokens: Annotated[
        int | None, typer.Option("--max-prompt-tokens", help="Stop at this many cumulative prompt tokens.")
    ] = None,
    max_cost: Annotated[
        float | None, typer.Option("--max-cost", help="Stop at this cost (US dollars).")
    ] = None,
    temperature: Annotated[float, typer.Option("--temperature")] = 0.0,
    max_retry_wait: Annotated[
        float,
        typer.Option(
            "--max-retry-wait", help="Longest wait between two model attempts (seconds), Retry-After included."
        ),
    ] = 60.0,
    mirror: Annotated[
        Path | None,
        typer.Option(
            "--mirror", help="Folder of bare repositories owner__name.git (default $TAKEOVER_MIRROR)."
        ),
    ] = None,
    offline: Annotated[bool, typer.Option("--offline", help="Never clone from GitHub.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print run.json instead of a summary.")] = False,
) -> None:
    """Run one agent and write its run directory (run.json, events.jsonl, calls.jsonl, patch.diff, native trajectory).

    Example: takeover agent run --dataset swebench.jsonl --instance psf__requests-2317 --model qwen
    --base-url http://127.0.0.1:8080/v1 --api-key-env "" --out runs/requests-2317
    """
    from takeover.agents import run_predecessor, run_takeover
    from takeover.errors import InputError
    from takeover.limits import RunLimits
    from takeover.llm import ModelSettings
    from takeover.repos import RepoSource
    from takeover.vocabulary import ExitStatus

    try:
        if protocol not in ("text", "tools"):
            raise InputError("--protocol", f"unknown protocol {protocol!r}: use text or tools")
        if (checkpoint is None) != (view is None):
            raise InputError("--checkpoint/--view", "a takeover run needs both --checkpoint and --view")
        prompt = prompt_file.read_text(encoding="utf-8") if prompt_file else None
        settings = ModelSettings(
            name=model,
            base_url=base_url,
            api_key_env=api_key_env or None,
            temperature=temperature,
            max_retry_wait=max_retry_wait,
        )
        limits = RunLimits(
            step_limit=step_limit,
            wall_time_limit_seconds=time_limit,
            command_timeout=command_timeout,
            prompt_token_limit=max_prompt_tokens,
            cost_limit=max_cost,
        )
        task = _find_task(dataset, instance)
        source = RepoSource(mirror, allow_network=not offline)
        if checkpoint is not None:
            record = run_takeover(
                checkpoint,
                view,
                settings,
                out,
                task=task,
                prompt=prompt,
                limits=limits,
                protocol=protocol,
                backend=backend,
                repo_source=source,
            )
        else:
            record = run_predecessor(
                task,
                settings,
                out,
                limits=limits,
                protocol=protocol,
                backend=backend,
                prompt=prompt,
                repo_source=source,
            )
    except InputError as exc:  # bad options, or --out holding another run: nothing was run
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    # Agent outcomes (submitted, limits, format errors) are results: exit 0. A model endpoint or an
    # environment that failed is infrastructure: exit 1, so scripts notice.
    failed = record.exit_status in (ExitStatus.model_error, ExitStatus.environment_error)
    if json_out:
        print(record.model_dump_json(indent=2))
        if failed:
            raise typer.Exit(1)
        return
    acc = record.accounting
    print(
        f"{record.kind} run {record.instance_id}: {record.exit_status.value if record.exit_status else 'unfinished'}"
        + (f" ({record.exit_detail})" if record.exit_detail else "")
    )
    print(
        f"  events {acc.agent_events}, LLM calls {acc.llm_calls} ({acc.format_errors} format errors), "
        f"prompt tokens {acc.prompt_tokens} ({acc.usage}), completion tokens {acc.completion_tokens}"
    )
    print(
        f"  wall {acc.wall_seconds:.1f}s = model {acc.model_seconds:.1f}s + commands {acc.command_seconds:.1f}s "
        f"+ harness {acc.overhead_seconds:.1f}s"
    )
    setup = f"{record.setup_seconds:.1f}s" if record.setup_seconds is not None else "unknown"
    print(f"  setup (checkout, environment) {setup}, before the run's wall time")
    print(f"  {record.sandbox}; commands see the workspace at {record.command_root or record.workspace}")
    if record.path_note:
        print(f"  note: {record.path_note}")
    print(f"  run directory: {out}")
    if failed:
        print(f"  exit status {record.exit_status.value}: infrastructure failure, exit code 1")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``takeover agent ...`` to ``app``."""
    app.add_typer(agent_app, name="agent")
