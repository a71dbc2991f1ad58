"""The metrics a takeover run records beside its counts (docs/protocol.md section 8.3), computed from the
patches and test lists the records of :mod:`takeover.results.records` hold.

- :func:`checkpoint_diff_preserved`: the final patch still holds the checkpoint's diff
  (:attr:`~takeover.results.records.TakeoverRunOutput.checkpoint_diff_preserved`);
- :func:`only_source_files_changed`: the final patch changes source files only (docs/protocol.md section 3;
  :attr:`~takeover.results.records.TakeoverRunOutput.only_source_files_changed`);
- :func:`pass_rate`: passing tests over graded tests of a ``FAIL_TO_PASS`` or ``PASS_TO_PASS`` list
  (``fail_to_pass_rate`` and ``pass_to_pass_rate`` of :class:`~takeover.results.records.GradeOutput` and
  :class:`~takeover.results.records.HandoffStateOutput`).
"""

from __future__ import annotations

from collections.abc import Collection, Sized

from takeover._util.patches import patch_files, split_patch
from takeover.repository_states.file_classes import file_class


def _changed_lines(text: str) -> tuple[set[str], set[str]]:
    """``(added, removed)`` lines of one file's diff, without their ``+``/``-``."""
    added, removed = set(), set()
    for line in text.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added.add(line[1:])
        elif line.startswith("-") and not line.startswith("---"):
            removed.add(line[1:])
    return added, removed


def checkpoint_diff_preserved(checkpoint_patch: str, final_patch: str) -> bool:
    """Whether the final diff still contains the checkpoint diff: for every file of the checkpoint patch,
    the final patch changes that file, adds every line the checkpoint added and removes every line it
    removed (docs/protocol.md section 8.3). True for an empty checkpoint patch."""
    final = split_patch(final_patch)
    for path, text in split_patch(checkpoint_patch).items():
        if path not in final:
            return False
        added, removed = _changed_lines(text)
        final_added, final_removed = _changed_lines(final[path])
        if not (added <= final_added and removed <= final_removed):
            return False
    return True


def only_source_files_changed(final_patch: str, base_top_level: Collection[str] | None = None) -> bool:
    """Whether every file the final diff changes is a source file (docs/protocol.md sections 3 and 8.3; true
    for an empty patch). ``base_top_level``: the top-level names of ``base_commit``, which the scratch rule
    needs (``None``: unknown, the names alone decide)."""
    return all(file_class(p, base_top_level=base_top_level) == "source" for p in patch_files(final_patch))


def pass_rate(success: Sized, failure: Sized) -> float | None:
    """Passing tests over graded tests of one list (docs/protocol.md section 8.3): ``len(success) /
    (len(success) + len(failure))``; None when the list is empty."""
    graded = len(success) + len(failure)
    return len(success) / graded if graded else None
