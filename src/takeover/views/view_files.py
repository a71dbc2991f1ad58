"""A user's view without Python: a view file (TOML) (docs/protocol.md section 7.8, Extension).

A view file names its view, the handoff inputs it reads, a Jinja template of its block over those inputs and,
for a view a model writes, the writer's prompt (and optionally its system message and a JSON schema of its
answer)::

    name = "progress_file"              # the view's name in tables and files (default: the file's stem)
    description = "what a progress file would say"
    inputs = ["task", "events", "checkpoint"]   # what the templates may read (default: these three)
    template = '''
    Files changed so far: {{ point.changed_source_files | join(", ") }}
    {{ notes }}
    '''

    [writer]                            # present: a model (the study's note writer) writes `notes`
    prompt = '''Write the progress file of this task. {{ problem_statement }} {{ rendered_events | join("\\n") }}'''
    # system = "..."                    # default: the packaged note writer's system message
    # schema = { type = "object", properties = { done = { type = "string" } }, required = ["done"] }

The variables of each input (:func:`handoff_variables`; a template that uses one of an input it did not
declare fails with the file named):

- ``task``: ``task`` (``instance_id``, ``repo``, ``problem_statement``) and ``problem_statement``;
- ``events``: ``events`` (the predecessor's events up to and including the handoff event, each with ``index``,
  ``kind``, ``source``, ``type``, ``text``, ``command``, ``path``, ``exit_code``) and ``rendered_events`` (each
  rendered ``[step N | source | type]`` and its text, as ``raw_trace`` shows it);
- ``checkpoint``: ``checkpoint_patch`` (the diff at the point), ``point`` (``type``, ``event_index``,
  ``changed_source_files``, ``changed_test_files``, ``non_source_artifacts``, ``latest_verification_command``,
  ``latest_verification_result``, ``latest_verification_evidence``, ``validation_after_latest_source_change``)
  and ``facts`` (structured notes' computed fields);
- in ``template`` of a model-written view, ``notes``: the writer's answer (text; the parsed JSON object under a
  schema).

There is no variable for anything after the cut, nor for the handoff state: every prompt passes the leak guard
all the same, and one that carries text the predecessor never saw is refused
(:class:`~takeover.views.leak.ViewLeakError`, naming the file). Templates run in Jinja's sandbox.

The file's identity is its content (:meth:`FileView.definition`): a study's view unit stores it, so editing the
file recomputes the view and what follows from it, and moving it does not.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

import jinja2
import jinja2.sandbox
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from takeover._util.io import read_text
from takeover._util.registries import NoOptions
from takeover.errors import InputError
from takeover.llm import ModelCallError, ModelClient, ModelUsage
from takeover.llm.response_format import ResponseSchema
from takeover.views.evidence import render_event
from takeover.views.handoff_view import Handoff, HandoffView, ViewBlock
from takeover.views.notes import MAX_RETRIES, NOTE_TEMPERATURE, TRUNCATED, NotesFailed, feedback_reason
from takeover.views.paper_views import NoteOptions
from takeover.views.prompt import render
from takeover.views.structured import compute_fields

#: The suffix that makes a ``--view`` value or a ``views`` entry a view file's path.
VIEW_FILE_SUFFIX = ".toml"
FileInput = Literal["task", "events", "checkpoint"]
_EVENT_FIELDS = {"index", "kind", "source", "type", "text", "command", "path", "exit_code"}
_POINT_FIELDS = {"type", "event_index", "changed_source_files", "changed_test_files", "non_source_artifacts",
                 "latest_verification_command", "latest_verification_result", "latest_verification_evidence",
                 "validation_after_latest_source_change"}
_ENV = jinja2.sandbox.SandboxedEnvironment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                           keep_trailing_newline=False, autoescape=False)


def is_view_file(ref: str) -> bool:
    """Whether a ``--view`` value or a ``views`` entry names a view file (ends in ``.toml``) rather than a
    registered view."""
    return ref.endswith(VIEW_FILE_SUFFIX)


class WriterSpec(BaseModel):
    """A view file's ``[writer]``: the request's Jinja ``prompt``, an optional ``system`` message and an
    optional JSON ``schema`` of the answer (asked of the endpoint; the answer must then be a JSON object with
    the schema's required keys)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    prompt: str = Field(min_length=1)
    system: str | None = None
    json_schema: dict[str, Any] | None = Field(None, alias="schema")


class ViewFileSpec(BaseModel):
    """A view file's content (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    description: str = ""
    inputs: tuple[FileInput, ...] = ("task", "events", "checkpoint")
    template: str | None = None
    writer: WriterSpec | None = None

    @model_validator(mode="after")
    def _something_to_show(self) -> ViewFileSpec:
        if self.template is None and self.writer is None:
            raise ValueError("a view file needs a template, a [writer], or both")
        return self


def handoff_variables(handoff: Handoff, inputs: tuple[str, ...]) -> dict[str, Any]:
    """The template variables of ``inputs`` for ``handoff`` (see the module docstring)."""
    out: dict[str, Any] = {}
    if "task" in inputs:
        task = handoff.task
        out["task"] = {"instance_id": task.instance_id, "repo": task.repo, "problem_statement": task.problem_statement}
        out["problem_statement"] = task.problem_statement.strip()
    if "events" in inputs:
        out["events"] = [e.model_dump(mode="json", include=_EVENT_FIELDS) for e in handoff.events]
        out["rendered_events"] = [render_event(e) for e in handoff.events]
    if "checkpoint" in inputs:
        out["checkpoint_patch"] = handoff.checkpoint_patch
        out["point"] = handoff.point.model_dump(mode="json", include=_POINT_FIELDS)
        out["facts"] = compute_fields(handoff.point, handoff.checkpoint_patch).model_dump(mode="json")
    return out


def _json_object(answer: str, schema: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    text = answer.strip()
    fenced = re.fullmatch(r"```[^\n]*\n(.*?)\n?```", text, re.DOTALL)
    text = fenced.group(1) if fenced else text
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"the answer is not JSON ({exc.msg})"
    if not isinstance(value, dict):
        return None, "the answer is not a JSON object"
    missing = [k for k in schema.get("required", []) if k not in value]
    return (None, f"the answer lacks {', '.join(missing)}") if missing else (value, None)


class FileView(HandoffView):
    """The view a view file defines.

    Args:
        spec: the file's content.
        where: the file's path (for error messages).
    """

    def __init__(self, spec: ViewFileSpec, where: str):
        self.spec = spec
        self.name = spec.name
        self.description = spec.description
        self.inputs = spec.inputs
        self.model_written = spec.writer is not None
        self.Options = NoteOptions if self.model_written else NoOptions
        self._where = where

    @property
    def where(self) -> str:
        return self._where

    def definition(self) -> dict[str, Any]:
        return self.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)

    @classmethod
    def from_definition(cls, definition: dict[str, Any], where: str | None = None) -> FileView:
        """The view of a stored :meth:`definition`.

        Raises:
            InputError: a definition that is no view file's.
        """
        where = where or f"view file of {definition.get('name', '?')}"
        try:
            return cls(ViewFileSpec.model_validate(definition), where)
        except ValidationError as exc:
            raise InputError.from_validation(where, exc) from None

    def _render(self, source: str, field: str, variables: dict[str, Any]) -> str:
        try:
            return _ENV.from_string(source).render(**variables).strip()
        except jinja2.TemplateSyntaxError as exc:
            raise InputError(self.where, f"template syntax error: {exc.message}", record=f"line {exc.lineno}",
                             field=field) from None
        except jinja2.UndefinedError as exc:
            raise InputError(self.where, f"the template uses an undefined variable ({exc.message}); its inputs are "
                                         f"{', '.join(self.inputs) or 'none'}", field=field) from None
        except jinja2.sandbox.SecurityError as exc:
            raise InputError(self.where, f"the template does something unsafe: {exc}", field=field) from None

    def build(self, handoff: Handoff, options: Any, writer: ModelClient | None) -> ViewBlock:
        variables = handoff_variables(handoff, self.inputs)
        if self.spec.writer is None:
            return ViewBlock(block=self._render(self.spec.template or "", "template", variables))
        return self._write(handoff, options, writer, variables)

    def _write(self, handoff: Handoff, options: NoteOptions, writer: ModelClient,
               variables: dict[str, Any]) -> ViewBlock:
        """Ask the note writer, and accept an answer as the paper's notes are accepted (docs/protocol.md
        section 7.3): temperature 0, the completion cap, at most two retries, told why (never the hidden text)."""
        spec = self.spec.writer
        system = spec.system if spec.system is not None else render("notes_system.md.j2", handoff.template_dir)
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": self._render(spec.prompt, "writer.prompt", variables)}]
        schema = ResponseSchema(re.sub(r"[^A-Za-z0-9_-]", "_", self.name), spec.json_schema) if spec.json_schema else None
        calls, rejections = [], []
        for attempt in range(1, MAX_RETRIES + 2):
            try:
                completion = writer.complete(messages, temperature=NOTE_TEMPERATURE,
                                             max_tokens=options.note_max_tokens, response_schema=schema)
            except ModelCallError as exc:
                calls.extend(exc.attempts)
                raise NotesFailed(self.name, "model_error", [*rejections, str(exc)], ModelUsage.of(calls),
                                  attempt) from None
            calls.extend(completion.attempts)
            answer = completion.answer.strip()
            notes: Any = answer
            reasons, feedback = [], []
            if schema is not None:
                notes, problem = _json_object(answer, spec.json_schema)
                if problem:
                    reasons.append(problem)
                    feedback.append(problem)
            elif not answer:
                reasons.append("the answer is empty")
                feedback.append("the answer is empty")
            prompt = block = ""
            if not reasons:
                shown = notes if isinstance(notes, str) else json.dumps(notes, indent=2, ensure_ascii=False)
                block = (self._render(self.spec.template, "template", {**variables, "notes": notes})
                         if self.spec.template is not None else shown)
                prompt = handoff.prompt(block)
                for leak in handoff.guard.find(prompt):
                    reasons.append(f"leak ({leak.kind}): {leak.detail}")
                    feedback.append(feedback_reason(leak.kind, leak.detail))
            last = attempt == MAX_RETRIES + 1
            if completion.truncated and (reasons or not last):
                reasons.insert(0, TRUNCATED)
                feedback.append("it was cut off at the length limit, so write a shorter answer")
            if not reasons:
                validation = "truncated" if completion.truncated else ("valid" if attempt == 1 else "retried")
                return ViewBlock(block=block, prompt=prompt, note_usage=ModelUsage.of(calls), validation=validation,
                                 attempts=attempt, rejections=rejections)
            rejections.append(f"attempt {attempt}: " + "; ".join(reasons))
            messages = [*messages, {"role": "assistant", "content": answer},
                        {"role": "user", "content": "Your answer was not accepted: " + "; ".join(sorted(set(feedback)))
                         + ". Answer again."}]
        raise NotesFailed(self.name, "rejected", rejections, ModelUsage.of(calls), MAX_RETRIES + 1)


def read_view_file(path: Path | str) -> FileView:
    """The view of the view file ``path`` (its ``name`` defaults to the file's stem).

    Raises:
        InputError: a missing file, bad TOML, or content that is no view file's (names the file and the field).
    """
    path = Path(path)
    text = read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, f"not valid TOML: {exc}") from None
    data.setdefault("name", path.stem)
    try:
        return FileView(ViewFileSpec.model_validate(data), str(path))
    except ValidationError as exc:
        raise InputError.from_validation(path, exc) from None
