"""What determines an agent run, and its run folder: the inputs key, and resuming (docs/protocol.md section 8).

A run folder (its files: :mod:`takeover.trajectories.takeover_run`) holds one run. Its ``run.json``
records the run's inputs (:func:`run_inputs`) and their key; a finished run is reused when the same run is
asked for again, and a different run is refused, so that no folder ever mixes two runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from takeover._util.io import sha256_text, stable_form, stable_hash
from takeover.agent_choice import AgentChoice
from takeover.errors import InputError
from takeover.limits import RunLimits
from takeover.llm import ModelSettings
from takeover.sources.tasks import SourceTask
from takeover.trajectories.takeover_run import RunRecord, TakeoverOrigin
from takeover.vocabulary import RunKind


class RunSpec(BaseModel):
    """One agent run as asked for: the task, the prompt, the model, the limits and the agent choice.

    Attributes:
        kind: ``predecessor`` or ``takeover``.
        instance_id, repo, base_commit: the source task.
        prompt: the text given to the agent (the task prompt, or a view's takeover prompt).
        model: endpoint, sampling and retry settings.
        limits: the run's limits.
        agent: the :class:`~takeover.agent_choice.AgentChoice`: the runtime, where its commands run,
            the action protocol and the runtime's own options.
        origin: for a takeover run, the checkpoint and the view.
        task: the source task record, whose prepared environment the commands use (optional).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: RunKind
    instance_id: str
    repo: str
    base_commit: str
    prompt: str
    model: ModelSettings
    limits: RunLimits = Field(default_factory=RunLimits)
    agent: AgentChoice = Field(default_factory=AgentChoice)
    origin: TakeoverOrigin | None = None
    task: SourceTask | None = None


_MODEL_INPUTS = ("model", "temperature", "max_tokens", "extra")
#: The form of :func:`run_inputs` (its ``format``): a run folder whose inputs have another form was written
#: by an earlier version of takeover, and is not reused (:func:`prepare_run_folder` says so). Bumped whenever
#: a default of the limits or the agent choice changes (their stable form leaves defaults out). 3: the limits
#: and the agent choice in their stable form.
INPUTS_FORMAT = 3


def run_inputs(spec: RunSpec) -> dict[str, Any]:
    """What determines an agent run (its key is :func:`inputs_key`): the inputs' ``format``, the task,
    checkpoint patch and view, the prompt's sha256, the model settings that change answers (model,
    temperature, max_tokens, extra), the limits and the agent choice, whole, in their stable form (fields at
    their default left out: :func:`takeover._util.io.stable_form`). Host paths are left out, so that the same
    run in another folder has the same key."""
    return {
        "format": INPUTS_FORMAT,
        "kind": spec.kind,
        "instance_id": spec.instance_id,
        "base_commit": spec.base_commit,
        "checkpoint_patch_sha256": spec.origin.patch_sha256 if spec.origin else None,
        "view": spec.origin.view if spec.origin else None,
        "prompt_sha256": sha256_text(spec.prompt),
        # What the model answers depends on these; the endpoint's address and its transport settings
        # (timeout, retries) do not (a local server restarted on another port is the same model).
        "model": {k: v for k, v in spec.model.public().items() if k in _MODEL_INPUTS},
        "limits": stable_form(spec.limits),
        "agent": stable_form(spec.agent),
    }


def inputs_key(inputs: dict[str, Any]) -> str:
    """The key of :func:`run_inputs` (``run.json``'s ``inputs_key``): :func:`takeover._util.io.stable_hash`
    of the inputs."""
    return stable_hash(inputs)


def _describe(inputs: dict[str, Any]) -> str:
    model = inputs.get("model") or {}
    parts = [f"view {inputs['view']}"] if inputs.get("view") else [str(inputs.get("kind"))]
    parts.append(f"model {model.get('model')}")
    try:  # in their stable form: a field at its default is left out, and read back
        agent = AgentChoice.model_validate(inputs.get("agent") or {})
        limits = RunLimits.model_validate(inputs.get("limits") or {})
    except ValueError:
        return ", ".join(parts)
    return ", ".join([*parts, f"agent {agent.runtime}", f"{limits.step_limit} steps"])


def prepare_run_folder(out_dir: Path, inputs: dict[str, Any]) -> RunRecord | None:
    """Make ``out_dir`` ready for the run of ``inputs`` (:func:`run_inputs`), or find it done.

    A finished run in ``out_dir`` with the same inputs is returned as is (re-runs resume); an unfinished one (a crash) is removed and ``None`` returned: the run starts over,
    because a model loop cannot continue exactly where it died. A folder holding only a ``workspace``
    (a checkout interrupted before the run began) is emptied.

    Raises:
        InputError: ``out_dir`` holds a finished run with other inputs (another model, view, limit,
            prompt or checkpoint) or of an earlier version (:data:`INPUTS_FORMAT`), or files that are not a
            run.
    """
    run_json = out_dir / "run.json"
    if run_json.exists():
        try:
            record = RunRecord.model_validate_json(run_json.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(run_json, f"not a run record ({str(exc).splitlines()[0]})") from None
        if record.finished:
            if record.inputs_key is None or (record.inputs or {}).get("format") != INPUTS_FORMAT:
                raise InputError(out_dir, "holds a run written by an earlier version of takeover, whose inputs "
                                 "have another form: it is not reused; use another --out-dir or delete it")
            if record.inputs_key != inputs_key(inputs):
                theirs = record.inputs or {}
                changed = (sorted(k for k in inputs.keys() | theirs.keys() if theirs.get(k) != inputs.get(k))
                           if theirs else [])
                raise InputError(
                    out_dir,
                    f"holds a different run ({_describe(theirs) if theirs else 'other inputs'}"
                    + (f"; differs in {', '.join(changed)}" if changed else "")
                    + f") than the one asked for ({_describe(inputs)}); use another --out-dir or delete it",
                )
            return record
        shutil.rmtree(out_dir)
    elif out_dir.exists():
        if {p.name for p in out_dir.iterdir()} - {"workspace"}:
            raise InputError(
                out_dir, "run directory exists, is not empty and holds no run.json; choose another --out-dir"
            )
        shutil.rmtree(out_dir / "workspace", ignore_errors=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    return None
