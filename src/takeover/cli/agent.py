"""``takeover agent run``: one predecessor or takeover run of an agent runtime (docs/protocol.md section 8)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from takeover._util.folders import check_writable
from takeover._util.io import read_text
from takeover.agents import AgentChoice
from takeover.agents.runs import run_predecessor, run_takeover
from takeover.cli.failures import command
from takeover.cli.options import (
    CHECKPOINT_DIR_HELP,
    OUT_DIR_HELP,
    VIEW_HELP,
    DatasetOption,
    InstanceIdOption,
    JsonOption,
    VerboseOption,
    agent_choice,
    model_settings,
    one_view,
    option_groups,
    repo_source,
    run_limits,
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


@command(agent_app, "run")
@option_groups(model=model_settings, agent=agent_choice, limits=run_limits, repo_source=repo_source)
def run(
    dataset: DatasetOption,
    instance_id: InstanceIdOption,
    model: ModelSettings,
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out-dir",
            help=f"{OUT_DIR_HELP}: the run folder (a finished run with the same inputs is kept; another run there "
                 "is refused).",
        ),
    ],
    agent: AgentChoice,
    limits: RunLimits,
    repo_source: RepoSource,
    checkpoint_dir: Annotated[
        Path | None, typer.Option("--checkpoint-dir", help=f"{CHECKPOINT_DIR_HELP} Makes this a takeover run.")
    ] = None,
    view: Annotated[list[str] | None, typer.Option("--view", help=f"{VIEW_HELP} One: a takeover run's view.")] = None,
    prompt_file: Annotated[
        Path | None,
        typer.Option("--prompt-file", help="Prompt text to give instead of the task prompt / the view's prompt file."),
    ] = None,
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

        takeover agent run ... --agent command --agent-option agent_command='claude -p < {prompt_file}'

        takeover agent run ... --command-backend docker --command-backend-option image=my/image:tag
    """
    view = one_view(view, "agent run")
    if (checkpoint_dir is None) != (view is None):
        raise InputError("--checkpoint-dir/--view", "a takeover run needs both --checkpoint-dir and --view")
    prompt = read_text(prompt_file) if prompt_file else None
    check_writable(out_dir)
    task = task_by_id(dataset, instance_id)
    if task is None:
        raise InputError(dataset, f"no task with instance_id {instance_id!r}", field="instance_id")
    # Bad options or an --out-dir holding another run end it here, nothing run (exit status 2); a user's agent
    # that ran but left nothing to read is a failed run (1): takeover.cli.failure says so.
    if checkpoint_dir is not None:
        record = run_takeover(checkpoint_dir, view, model, out_dir, task=task, prompt=prompt, limits=limits,
                              agent=agent, repo_source=repo_source)
    else:
        record = run_predecessor(task, model, out_dir, limits=limits, agent=agent, prompt=prompt,
                                 repo_source=repo_source)
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
