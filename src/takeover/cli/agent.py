"""``takeover agent run``: one predecessor or takeover run of an agent runtime (docs/protocol.md section 8)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from takeover._util.folders import check_writable
from takeover._util.io import read_text
from takeover.agents import (
    COMMAND_BACKENDS,
    DEFAULT_AGENT,
    DEFAULT_COMMAND_BACKEND,
    RUNTIMES,
    run_predecessor,
    run_takeover,
)
from takeover.agents.command.command_runtime import AgentSessionMissing
from takeover.cli.options import (
    AGENT_HELP,
    CHECKPOINT_DIR_HELP,
    MAX_RETRY_WAIT,
    OUT_DIR_HELP,
    REQUEST_TIMEOUT,
    RETRIES,
    VIEW_HELP,
    ApiKeyEnvOption,
    BaseUrlOption,
    CommandTimeoutOption,
    CostLimitOption,
    DatasetOption,
    InstanceIdOption,
    JsonOption,
    MaxConsecutiveFormatErrorsOption,
    MaxRetryWaitOption,
    MirrorOption,
    ModelOption,
    OfflineOption,
    PromptTokenLimitOption,
    ProtocolOption,
    RequestTimeoutOption,
    RetriesOption,
    StepLimitOption,
    VerboseOption,
    WallTimeLimitSecondsOption,
    one_view,
    renamed_flags,
)
from takeover.errors import InputError
from takeover.limits import RunLimits
from takeover.llm import ModelSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import task_by_id
from takeover.vocabulary import INFRA_EXIT_STATUSES

agent_app = typer.Typer(
    help="Run agents: predecessor runs on source tasks, takeover runs from checkpoints.", no_args_is_help=True
)

RENAMED = {
    "--instance": "--instance-id",
    "--out": "--out-dir",
    "--checkpoint": "--checkpoint-dir",
    "--time-limit": "--wall-time-limit-seconds",
    "--max-prompt-tokens": "--prompt-token-limit",
    "--max-cost": "--cost-limit",
    # --backend names the grading backend elsewhere (grade, quickstart); here it was the command backend.
    "--backend": "--command-backend",
}


@agent_app.command("run", cls=renamed_flags(RENAMED))
def run(
    dataset: DatasetOption,
    instance_id: InstanceIdOption,
    model: ModelOption,
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out-dir",
            help=f"{OUT_DIR_HELP}: the run folder (a finished run with the same inputs is kept; another run there "
                 "is refused).",
        ),
    ],
    checkpoint_dir: Annotated[
        Path | None, typer.Option("--checkpoint-dir", help=f"{CHECKPOINT_DIR_HELP} Makes this a takeover run.")
    ] = None,
    view: Annotated[list[str] | None, typer.Option("--view", help=f"{VIEW_HELP} One: a takeover run's view.")] = None,
    prompt_file: Annotated[
        Path | None,
        typer.Option("--prompt-file", help="Prompt text to give instead of the task prompt / the view's prompt file."),
    ] = None,
    base_url: BaseUrlOption = None,
    api_key_env: ApiKeyEnvOption = "OPENAI_API_KEY",
    protocol: ProtocolOption = "text",
    agent: Annotated[
        str, typer.Option("--agent", help=AGENT_HELP)
    ] = DEFAULT_AGENT,
    command_backend: Annotated[
        str,
        typer.Option("--command-backend", help=f"Where the agent's commands run: {' or '.join(COMMAND_BACKENDS)} "
                     "(local: sandboxed on this host; docker: the SWE-bench image)."),
    ] = DEFAULT_COMMAND_BACKEND,
    agent_command: Annotated[
        str | None,
        typer.Option("--agent-command", help="With --agent command: the shell command that runs your agent, with "
                     "{prompt_file}, {session_file}, {workspace}, {model}, {base_url} (docs/usage.md: recipes)."),
    ] = None,
    session_glob: Annotated[
        str | None,
        typer.Option("--session-glob", help="With --agent command: where the agent writes its session record when "
                     "it names the file itself (relative to the run's session/ folder, or ~/... in its home)."),
    ] = None,
    step_limit: StepLimitOption = 500,
    wall_time_limit_seconds: WallTimeLimitSecondsOption = 4 * 3600.0,
    command_timeout: CommandTimeoutOption = 600.0,
    prompt_token_limit: PromptTokenLimitOption = None,
    cost_limit: CostLimitOption = None,
    max_consecutive_format_errors: MaxConsecutiveFormatErrorsOption = 3,
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature.")] = 0.0,
    timeout: RequestTimeoutOption = REQUEST_TIMEOUT,
    retries: RetriesOption = RETRIES,
    max_retry_wait: MaxRetryWaitOption = MAX_RETRY_WAIT,
    mirror: MirrorOption = None,
    offline: OfflineOption = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Run one agent and write its run folder (run.json, events.jsonl, calls.jsonl, patch.diff, native
    trajectory).

    With --json, one line: the run's run.json record (kind, instance_id, exit_status, limits, accounting,
    ...). Exit status: 0 when the run ended on its own (submitted, a limit, format errors); 1 when the model
    endpoint or the environment failed; 2 on bad input (nothing was run).

    Examples:

        takeover agent run --dataset swebench.jsonl --instance-id psf__requests-2317 --model openai/qwen \\
          --base-url http://127.0.0.1:8080/v1 --api-key-env "" --out-dir runs/requests-2317

        takeover agent run --dataset swebench.jsonl --instance-id psf__requests-2317 --model openai/qwen \\
          --base-url http://127.0.0.1:8080/v1 --checkpoint-dir cp/ --view raw_trace --out-dir runs/t1

        takeover agent run --dataset swebench.jsonl --instance-id psf__requests-2317 --model openai/qwen \\
          --base-url http://127.0.0.1:8080/v1 --agent mini-swe-agent --command-backend docker --out-dir runs/d1
    """
    view = one_view(view, "agent run")
    try:
        if protocol not in ("text", "tools"):
            raise InputError("--protocol", f"unknown protocol {protocol!r}: use text or tools")
        if agent not in RUNTIMES:
            raise InputError("--agent", f"unknown agent runtime {agent!r}: use {' or '.join(RUNTIMES)}")
        if command_backend not in COMMAND_BACKENDS:
            raise InputError("--command-backend",
                             f"unknown command backend {command_backend!r}: use {' or '.join(COMMAND_BACKENDS)}")
        if (checkpoint_dir is None) != (view is None):
            raise InputError("--checkpoint-dir/--view", "a takeover run needs both --checkpoint-dir and --view")
        prompt = read_text(prompt_file) if prompt_file else None
        check_writable(out_dir)
        settings = ModelSettings(
            model=model,
            base_url=base_url,
            api_key_env=api_key_env or None,
            temperature=temperature,
            timeout=timeout,
            retries=retries,
            max_retry_wait=max_retry_wait,
        )
        limits = RunLimits(
            step_limit=step_limit,
            wall_time_limit_seconds=wall_time_limit_seconds,
            command_timeout=command_timeout,
            prompt_token_limit=prompt_token_limit,
            cost_limit=cost_limit,
            max_consecutive_format_errors=max_consecutive_format_errors,
        )
        task = task_by_id(dataset, instance_id)
        if task is None:
            raise InputError(dataset, f"no task with instance_id {instance_id!r}", field="instance_id")
        source = RepoSource(mirror, offline=offline)
        if checkpoint_dir is not None:
            record = run_takeover(checkpoint_dir, view, settings, out_dir, task=task, prompt=prompt, limits=limits,
                                  protocol=protocol, agent=agent, command_backend=command_backend,
                                  repo_source=source, agent_command=agent_command, session_glob=session_glob)
        else:
            record = run_predecessor(task, settings, out_dir, limits=limits, protocol=protocol, agent=agent,
                                     command_backend=command_backend, prompt=prompt, repo_source=source,
                                     agent_command=agent_command, session_glob=session_glob)
    except InputError as exc:  # bad options, or --out-dir holding another run: nothing was run
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    except AgentSessionMissing as exc:  # the user's agent ran but left nothing to read: the run failed
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(1) from None
    # Agent outcomes (submitted, limits, format errors) are results: exit 0. A model endpoint or an
    # environment that failed is infrastructure: exit 1, so scripts notice.
    failed = record.exit_status in INFRA_EXIT_STATUSES
    if as_json:
        print(record.model_dump_json())
        if failed:
            raise typer.Exit(1)
        return
    acc = record.accounting
    print(
        f"{record.kind} run {record.instance_id} ({record.agent}): "
        f"{record.exit_status.value if record.exit_status else 'unfinished'}"
        + (f" ({record.exit_detail})" if record.exit_detail else "")
    )
    print(
        f"  events {acc.agent_events}, LLM calls {acc.llm_calls} ({acc.format_errors} format errors), "
        + (f"prompt tokens {acc.prompt_tokens} ({acc.usage}), completion tokens {acc.completion_tokens}"
           if acc.usage != "unavailable" else "prompt tokens n/a, completion tokens n/a (the agent recorded no usage)")
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
    print(f"  run directory: {out_dir}")
    if failed:
        print(f"  exit status {record.exit_status.value}: infrastructure failure, exit code 1")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``takeover agent ...`` to ``app``."""
    app.add_typer(agent_app, name="agent")
