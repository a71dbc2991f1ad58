"""The handoff task: ``inspect eval takeover/handoff -T checkpoints=DIR -T dataset=FILE`` (docs/protocol.md
section 8.5).

Parameters (``-T name=value``):

- ``checkpoints``: a checkpoint folder, or a folder of them (``takeover checkpoint``, views built with
  ``takeover views --checkpoint-dir``);
- ``dataset``: the SWE-bench dataset file the scorer grades against;
- ``views``: ``all`` (default) or a comma-separated list of view names;
- ``mirror``, ``offline``: where repositories come from (for the sandbox's repository and for grading);
- ``solver``: ``react`` (default: Inspect's ReAct agent with a ``bash`` tool), or inspect-swe's
  ``claude_code`` / ``codex_cli`` where the package and the sandbox have them;
- ``command_timeout``: seconds per bash command (docs/protocol.md section 8.1; the run limits' default);
- ``grading``: how the final repository is graded, the grading record whole
  (:class:`takeover.grading_settings.GradingSettings`, as a mapping: ``-T grading='{backend: docker, timeout:
  600, hash_seed: 7}'``; its keys are the experiment file's ``[grading]``); default: its defaults.

The sandbox is Inspect's ``local`` one unless ``--sandbox`` says otherwise. Run limits are Inspect's own
(``--message-limit``, ``--token-limit``, ``--time-limit``, ``--working-limit``, ``--cost-limit``); their
relation to the protocol's limits is in docs/protocol.md section 8.5.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.agent import Agent, as_solver, react
from inspect_ai.tool import bash
from pydantic import ValidationError

from takeover.errors import EnvironmentUnavailable, InputError
from takeover.grading_settings import GradingSettings
from takeover.inspect_task.dataset import handoff_samples
from takeover.inspect_task.scoring import handoff_scorer
from takeover.inspect_task.workspace import checkpoint_repository
from takeover.limits import RunLimits
from takeover.llm.tokens import estimator_name

#: The prompt of the default ReAct agent: the sample's input (the takeover prompt) carries the task.
REACT_PROMPT = ("You are a software engineer working in the repository in your current folder. Use the bash tool "
                "to inspect, edit and test it, and call submit() when the task is done.")
SOLVERS = ("react", "claude_code", "codex_cli")


def _agent(name: str, command_timeout: int) -> Agent:
    if name == "react":
        return react(prompt=REACT_PROMPT, tools=[bash(timeout=command_timeout)])
    if name not in SOLVERS:
        raise InputError("solver", f"unknown solver {name!r}; expected one of {', '.join(SOLVERS)}")
    try:
        import inspect_swe
    except ImportError:
        raise EnvironmentUnavailable(f"the {name} solver needs inspect-swe: pip install inspect-swe") from None
    return getattr(inspect_swe, name)()


@task
def handoff(
    checkpoints: str,
    dataset: str,
    views: str = "all",
    mirror: str | None = None,
    offline: bool = False,
    solver: str = "react",
    command_timeout: int = int(RunLimits().command_timeout),
    grading: dict[str, Any] | None = None,
) -> Task:
    """Handoff points x views as Inspect samples, solved by an Inspect agent in a sandbox holding the
    checkpoint's repository and scored by takeover's SWE-bench grading (module docstring).

    Raises:
        InputError: no checkpoint folder, a view that was not built, an unknown view or solver, a grading
            record with an unknown key or a bad value.
        EnvironmentUnavailable: an inspect-swe solver without inspect-swe.
    """
    # Loading takeover's estimator points tiktoken at the vocabularies litellm ships (takeover.llm.tokens),
    # so that Inspect's own token counts (mockllm's usage, compaction) work offline too.
    estimator_name()
    try:
        settings = GradingSettings.model_validate(grading or {})
    except ValidationError as exc:
        error = exc.errors()[0]
        raise InputError("grading", error["msg"], field=".".join(map(str, error["loc"])) or None) from None
    return Task(
        dataset=handoff_samples(checkpoints, views),
        solver=[checkpoint_repository(mirror=mirror, offline=offline), as_solver(_agent(solver, command_timeout))],
        scorer=handoff_scorer(dataset, mirror=mirror, offline=offline, grading=settings),
        sandbox="local",
    )
