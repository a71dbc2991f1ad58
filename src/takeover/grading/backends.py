"""The grading backends by name (docs/protocol.md section 6): the one place a backend is registered.

Each backend is a :class:`~takeover.grading.backend.GradingBackend` in a folder of its own; this mapping
is how every caller finds one (the ``--backend`` flag and its help, ``[grading] backend`` in an
experiment file, the quickstart, :func:`takeover.grading.grade_predictions`)::

    from takeover.grading.backends import grading_backend

    backend = grading_backend("docker")
    backend.tests_network(False)  # True: the harness's containers have the network

A grading record (:class:`~takeover.grading_settings.GradingSettings`) names its backend and carries that
backend's own options; :func:`checked_grading` checks both here, so that the record needs no backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from takeover._util.registries import Registry, checked_options
from takeover.errors import InputError
from takeover.grading.backend import GradingBackend
from takeover.grading.docker import DockerBackend
from takeover.grading.local import LocalBackend
from takeover.grading_settings import GradingSettings

#: The grading backends by name, the default (:class:`GradingSettings`'s ``backend``) first.
BACKENDS: Registry[GradingBackend] = Registry("backend", {b.name: b for b in (LocalBackend(), DockerBackend())},
                                              where="--backend")
#: The name of a registered backend, as a field type: a record or setting holding any other name is
#: refused, the error listing the known ones.
GradingBackendName = Literal[tuple(BACKENDS)]  # type: ignore[valid-type]


def grading_backend(name: str) -> GradingBackend:
    """The backend registered as ``name``.

    Raises:
        InputError: no backend has that name (the message lists the known ones; the path is ``--backend``).
    """
    return BACKENDS.named(name)


def describe_backends() -> str:
    """The backends in words, for help texts: ``local (a cached venv, sandboxed) or docker (the official
    SWE-bench images)``."""
    parts = [f"{b.name} ({b.description})" for b in BACKENDS.values()]
    return ", ".join(parts[:-1]) + f" or {parts[-1]}" if len(parts) > 1 else parts[0]


def checked_grading(grading: GradingSettings, base_dir: Path | str | None = None) -> GradingSettings:
    """``grading`` once its backend is registered and its options are the backend's own: validated by the
    backend's ``Options`` model and written back in its form (defaults left out). With ``base_dir`` (an
    experiment file's folder), an option that is a relative path is made absolute against it.

    Raises:
        InputError: an unknown backend (``field``: ``backend``) or an option the backend refuses
            (``options.NAME``).
    """
    backend = BACKENDS.get(grading.backend)
    if backend is None:
        raise InputError("grading", f"unknown {BACKENDS.kind} {grading.backend!r}: use {BACKENDS.choices()}",
                         field="backend")
    options = checked_options(backend.Options, grading.options, where=f"backend {grading.backend}")
    if base_dir is not None:
        fields = backend.Options.model_fields
        options = {name: str(Path(base_dir) / value) if _is_path(fields[name].annotation) and isinstance(value, str)
                   and not Path(value).expanduser().is_absolute() else value for name, value in options.items()}
    return grading.model_copy(update={"options": options})


def backend_options(grading: GradingSettings) -> object:
    """The options of ``grading``'s backend as its ``Options`` model holds them.

    Raises:
        InputError: an unknown backend or an option it refuses (see :func:`checked_grading`).
    """
    checked = checked_grading(grading)
    return BACKENDS[checked.backend].Options.model_validate(checked.options)


def _is_path(annotation: object) -> bool:
    """Whether a field's annotation admits a :class:`~pathlib.Path` (``Path``, ``Path | None``, ...)."""
    return annotation is Path or Path in getattr(annotation, "__args__", ())
