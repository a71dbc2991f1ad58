"""How patches are graded (docs/protocol.md section 6): one record, from the command line and the experiment
file to every grading entry point.

:class:`GradingSettings` is built once, by a command's option group (``--backend``, ``--grading-timeout``,
``--network``, ``--hash-seed``, ``--grading-rules``, ``--backend-option NAME=VALUE``) or from an experiment
file's ``[grading]`` table, and given whole to :func:`takeover.grading.grade_predictions`,
:func:`~takeover.grading.grade`, :func:`~takeover.grading.grade_checkpoint`,
:func:`~takeover.grading.grade_handoff_state`, the Inspect task's scorer and the Harbor export; it is kept in
the inputs of handoff-state and grade units. Its defaults and bounds are declared here only. The backend's
name and its own options are checked by the backends' registry
(:func:`takeover.grading.backends.checked_grading`), which this record does not import.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from takeover._util.harness_version import GRADING_RULES

#: The largest hash seed Python accepts (``PYTHONHASHSEED`` is 0 to 4294967295; 0 turns randomization off).
MAX_SEED = 4294967295


class GradingSettings(BaseModel):
    """How patches are graded: the ``[grading]`` table of an experiment file, the ``grading`` of
    handoff-state and grade unit inputs, the grading option group of ``takeover grade`` and the others.

    Attributes:
        backend: where the tests run, a name of :data:`takeover.grading.backends.BACKENDS` (``--backend``;
            ``local``: a cached venv in the sandbox; ``docker``: SWE-bench's images).
        timeout: seconds allowed for each test run (``--grading-timeout``; the table's ``timeout``).
        network: let the tests use the network (``--network``; off by default, as the sandbox is offline).
            SWE-bench's Docker harness runs tests with the network on, and some suites need it (psf/requests
            calls httpbin.org): without it those tasks never resolve, and their results carry a warning.
        hash_seed: the tests' ``PYTHONHASHSEED`` (``--hash-seed``; 1 to :data:`MAX_SEED`); None: one per
            grading key (:mod:`takeover.grading.seeds`). A verdict that changes with the seed is flaky
            (:mod:`takeover.grading.flaky`).
        grading_rules: whose verdict rules decide, ``swebench-4.1`` or ``swebench-5.0`` (``--grading-rules``;
            docs/protocol.md section 6, extension "Grading rules"); None: the installed harness's.
        options: the backend's own options (JSON values), as its ``Options`` model declares them
            (``--backend-option NAME=VALUE``; ``local``: ``spec_file``, ``keep_workspace``); ``{}`` when it
            has none or takes their defaults.

    Raises:
        pydantic.ValidationError: a value out of range or unknown grading rules.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = "local"
    timeout: float = Field(1800.0, gt=0)
    network: bool = False
    hash_seed: int | None = None
    grading_rules: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("hash_seed")
    @classmethod
    def _seed_in_range(cls, value: int | None) -> int | None:
        if value is not None and not 1 <= value <= MAX_SEED:
            raise ValueError(f"a hash seed is 1 to {MAX_SEED}, got {value}")
        return value

    @field_validator("grading_rules")
    @classmethod
    def _known_rules(cls, value: str | None) -> str | None:
        if value is not None and value not in GRADING_RULES:
            raise ValueError(f"unknown grading rules {value!r}; known: {', '.join(GRADING_RULES)}")
        return value
