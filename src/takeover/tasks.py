"""Source tasks: SWE-bench instances, loading and the seeded selection (PROTOCOL.md section 2).

Loaders and ``select_tasks`` are filled in by the tasks work (issue 2); the record is shared by every stage.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


def _as_test_list(value: Any) -> list[str]:
    """FAIL_TO_PASS / PASS_TO_PASS arrive as JSON lists or as JSON-encoded strings (Hugging Face)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = value.strip()
        if not value:
            return []
        value = json.loads(value)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of test names or a JSON-encoded list of strings")
    return list(value)


class SourceTask(BaseModel):
    """One SWE-bench instance (PROTOCOL.md section 1, "source task").

    Field names are SWE-bench's own. ``FAIL_TO_PASS``/``PASS_TO_PASS`` are always lists here, whatever
    the encoding in the file. Unknown fields of the dataset row are kept (``extra="allow"``) so that a
    task written back out loses nothing.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    version: str | None = None
    patch: str = ""
    test_patch: str = ""
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    difficulty: str | None = None
    environment_setup_commit: str | None = None

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _decode_tests(cls, value: Any) -> list[str]:
        return _as_test_list(value)

    @field_validator("version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> str | None:
        # Some dumps store versions as floats (1.1), which must stay "1.1", never "1.10".
        return None if value is None else str(value)

    @property
    def repo_slug(self) -> str:
        """``owner__name``: the mirror folder stem and SWE-bench's instance prefix."""
        return self.repo.replace("/", "__")
