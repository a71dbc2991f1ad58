"""What determines an agent run, and its run folder: the inputs key, and resuming (docs/protocol.md section 8).

A run folder (its files: :mod:`takeover.trajectories.takeover_run`) holds one run. Its ``run.json``
records the run's inputs (:func:`run_inputs`) and their key; a finished run is reused when the same run is
asked for again, and a different run is refused, so that no folder ever mixes two runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from takeover._util.io import sha256_text, stable_hash
from takeover.errors import InputError
from takeover.limits import EARLIER_FIELD_NAMES, RunLimits
from takeover.llm import ModelSettings
from takeover.llm.settings import EARLIER_FIELD_NAMES as EARLIER_MODEL_FIELD_NAMES
from takeover.sources.tasks import SourceTask
from takeover.trajectories.takeover_run import RunRecord, TakeoverOrigin
from takeover.vocabulary import ActionProtocol, RunKind


class RunSpec(BaseModel):
    """One agent run as asked for: the task, the prompt, the model, the limits and where commands run.

    Attributes:
        kind: ``predecessor`` or ``takeover``.
        instance_id, repo, base_commit: the source task.
        prompt: the text given to the agent (the task prompt, or a view's takeover prompt).
        model: endpoint, sampling and retry settings.
        limits: the run's limits.
        protocol: ``text`` (one bash block per response; the paper's) or ``tools`` (native tool calls).
        backend: ``local`` (sandboxed when possible) or ``docker`` (the SWE-bench image).
        origin: for a takeover run, the checkpoint and the view.
        task: the source task record, whose prepared environment the commands use (optional).
        image: the docker backend's image (default: the instance's SWE-bench image).
    """

    model_config = ConfigDict(frozen=True)

    kind: RunKind
    instance_id: str
    repo: str
    base_commit: str
    prompt: str
    model: ModelSettings
    limits: RunLimits = Field(default_factory=RunLimits)
    protocol: ActionProtocol = "text"
    backend: str = "local"
    origin: TakeoverOrigin | None = None
    task: SourceTask | None = None
    image: str | None = None


_MODEL_INPUTS = ("model", "temperature", "max_tokens", "extra")


def run_inputs(spec: RunSpec) -> dict[str, Any]:
    """What determines an agent run (its ``inputs_key`` is :func:`takeover._util.io.stable_hash` of this):
    task, checkpoint patch and view, the prompt's sha256, the model settings that change answers (model,
    temperature, max_tokens, extra), limits, protocol and backend. Host paths are left out, so that the
    same run in another folder has the same key."""
    return {
        "kind": spec.kind,
        "instance_id": spec.instance_id,
        "base_commit": spec.base_commit,
        "checkpoint_patch_sha256": spec.origin.patch_sha256 if spec.origin else None,
        "view": spec.origin.view if spec.origin else None,
        "prompt_sha256": sha256_text(spec.prompt),
        # What the model answers depends on these; the endpoint's address and its transport settings
        # (timeout, retries) do not (a local server restarted on another port is the same model).
        "model": {k: v for k, v in spec.model.public().items() if k in _MODEL_INPUTS},
        "limits": spec.limits.model_dump(mode="json"),
        "protocol": spec.protocol,
        "backend": spec.backend,
    }


def _keys(inputs: dict[str, Any]) -> set[str]:
    """The keys the same inputs have had: today's, and those of earlier versions, whose limits had their
    earlier names (:data:`takeover.limits.EARLIER_FIELD_NAMES`) and whose model settings named the model
    ``name`` (:data:`takeover.llm.settings.EARLIER_FIELD_NAMES`)."""
    earlier = {name: old for old, name in EARLIER_FIELD_NAMES.items()}
    limits = {earlier.get(k, k): v for k, v in (inputs.get("limits") or {}).items()}
    earlier_model = {name: old for old, name in EARLIER_MODEL_FIELD_NAMES.items()}
    model = {earlier_model.get(k, k): v for k, v in (inputs.get("model") or {}).items()}
    return {stable_hash(inputs), stable_hash({**inputs, "limits": limits}), stable_hash({**inputs, "model": model}),
            stable_hash({**inputs, "limits": limits, "model": model})}


def _today(inputs: dict[str, Any]) -> dict[str, Any]:
    """Recorded inputs with their limits and model settings under today's names."""
    try:
        limits = RunLimits.model_validate(inputs.get("limits"))
    except ValidationError:  # not limits at all: shown as they are
        return inputs
    model = {EARLIER_MODEL_FIELD_NAMES.get(k, k): v for k, v in (inputs.get("model") or {}).items()}
    return {**inputs, "limits": limits.model_dump(mode="json"), "model": model}


def _describe(inputs: dict[str, Any]) -> str:
    model = inputs.get("model") or {}
    parts = [f"view {inputs['view']}"] if inputs.get("view") else [str(inputs.get("kind"))]
    parts.append(f"model {model.get('model')}")
    limits = inputs.get("limits") or {}
    parts.append(f"{limits.get('step_limit')} steps")
    return ", ".join(parts)


def prepare_run_folder(out_dir: Path, inputs: dict[str, Any]) -> RunRecord | None:
    """Make ``out_dir`` ready for the run of ``inputs`` (:func:`run_inputs`), or find it done.

    A finished run in ``out_dir`` with the same inputs is returned as is (re-runs resume; runs of earlier
    versions too); an unfinished one (a crash) is removed and ``None`` returned: the run starts over,
    because a model loop cannot continue exactly where it died. A folder holding only a ``workspace``
    (a checkout interrupted before the run began) is emptied.

    Raises:
        InputError: ``out_dir`` holds a finished run with other inputs (another model, view, limit,
            prompt or checkpoint), or files that are not a run.
    """
    run_json = out_dir / "run.json"
    if run_json.exists():
        try:
            record = RunRecord.model_validate_json(run_json.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(run_json, f"not a run record ({str(exc).splitlines()[0]})") from None
        if record.finished:
            # Records written before inputs keys existed cannot be checked: they are kept as they are.
            if record.inputs_key is not None and record.inputs_key not in _keys(inputs):
                theirs = _today(record.inputs) if record.inputs else {}
                changed = sorted(k for k in inputs if theirs.get(k) != inputs[k]) if theirs else []
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
