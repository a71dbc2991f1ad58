"""The takeover prompt and the task prompt, rendered from Jinja templates (docs/protocol.md section 7).

Templates ship in ``takeover/views/templates/`` and any of them can be overridden by a file of the same
name in a user folder (``template_dir`` / ``--template-dir DIR``); the rest keep the packaged version.
Undefined variables fail loudly (``StrictUndefined``), so a user template with a typo is an error, not a
silently empty prompt.

Every takeover prompt is, in this order and clearly delimited: the takeover preamble
(``<takeover_instructions>``), the view block (``<previous_agent view=...>``; absent for ``repo_only``)
and the original task prompt (``<original_task>``).

Template files and their variables:

- ``task_prompt.md.j2``: ``problem_statement``, ``repo``, ``instance_id``, ``task`` (the :class:`SourceTask`).
- ``preamble.md.j2``: ``has_view``, ``view``.
- ``takeover_prompt.md.j2``: ``view``, ``view_block`` (may be empty), ``task_prompt``, ``has_view``.
- ``view_raw_trace.md.j2``: ``entries`` (rendered events), ``shown``, ``dropped``, ``budget``.
- ``view_summary_notes.md.j2``: ``notes``.
- ``view_structured_notes.md.j2``: ``facts`` (:class:`DeterministicFields`), ``notes`` (:class:`ModelNotes`).
- ``notes_system.md.j2``, ``notes_summary.md.j2``, ``notes_structured.md.j2``, ``notes_retry.md.j2``: the
  note writer's messages (``problem_statement``, ``events``, ``earlier``, ``clip``, ``facts``, ``fields``,
  ``rules``: what the facts rule out, :func:`takeover.views.structured.answer_rules`; ``field_chars``,
  ``min_words``, ``max_words``: the lengths asked for, sized to the completion cap; ``reasons``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from takeover.errors import InputError
from takeover.sources.tasks import SourceTask

PACKAGE_TEMPLATES = Path(__file__).with_name("templates")


@lru_cache(maxsize=16)
def _environment(template_dir: str | None) -> jinja2.Environment:
    searchpath = [template_dir, str(PACKAGE_TEMPLATES)] if template_dir else [str(PACKAGE_TEMPLATES)]
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(searchpath),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(name: str, template_dir: Path | str | None = None, **variables: Any) -> str:
    """Render template ``name`` (user folder first, then the packaged one); trailing whitespace stripped.

    Raises:
        InputError: the template is missing, has a syntax error or uses an undefined variable (names the
            template file and the problem).
    """
    if template_dir is not None and not Path(template_dir).is_dir():
        raise InputError(template_dir, "template folder does not exist")
    env = _environment(str(Path(template_dir).resolve()) if template_dir else None)
    try:
        return env.get_template(name).render(**variables).rstrip()
    except jinja2.TemplateNotFound as exc:
        raise InputError(template_dir or PACKAGE_TEMPLATES, f"template {exc.name!r} not found") from None
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(exc.filename or name, f"template syntax error: {exc.message}", record=f"line {exc.lineno}") from None
    except jinja2.UndefinedError as exc:
        raise InputError(name, f"template uses an undefined variable: {exc.message}") from None


def task_prompt(task: SourceTask, *, template_dir: Path | str | None = None) -> str:
    """The original task prompt: the problem statement of ``task`` (also used for predecessor runs)."""
    return render(
        "task_prompt.md.j2",
        template_dir,
        problem_statement=task.problem_statement.strip(),
        repo=task.repo,
        instance_id=task.instance_id,
        task=task,
    )


def takeover_prompt(
    view: str, view_block: str | None, task: SourceTask, *, template_dir: Path | str | None = None
) -> str:
    """The full takeover prompt: preamble + view block (omitted when empty) + original task prompt."""
    block = (view_block or "").strip()
    return render(
        "takeover_prompt.md.j2",
        template_dir,
        view=view,
        view_block=block,
        has_view=bool(block),
        task_prompt=task_prompt(task, template_dir=template_dir),
    ) + "\n"
