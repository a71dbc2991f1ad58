"""SWE-bench grading of a patch and the handoff state of a checkpoint (docs/protocol.md sections 6 and 8).

Along the lines of SWE-bench's harness:

- :mod:`.predictions`: the predictions a grading reads;
- :mod:`.evaluation`: the entry points (:func:`grade_predictions`, :func:`grade`,
  :func:`grade_checkpoint`, :func:`grade_handoff_state`) and the files written per prediction;
- :mod:`.reuse`: the :class:`GradingKey` of everything that decides a verdict; a stored result is
  reused only under an equal key;
- :mod:`.backend`: what a grading backend is (:class:`GradingBackend`, a ``typing.Protocol``, with its own
  ``Options``), and :mod:`.backends`: the backends by name (:data:`BACKENDS`, :func:`grading_backend`,
  :func:`checked_grading` for a grading record's backend and options), one folder each:
  :mod:`.local` (evaluation without Docker, in a venv and the sandbox: SWE-bench's patch fallbacks, its
  eval script, the fixed environment of the test command) and :mod:`.docker` (swebench's official
  harness, one run id per graded patch);
- :mod:`.log_parsing`: a test log as a status map, with swebench's parsers;
- :mod:`.verdict`: the FAIL_TO_PASS / PASS_TO_PASS report, ``resolved`` (swebench's own) and the handoff
  state, in a :class:`GradeResult`.

Every entry point takes the grading record whole (:class:`takeover.grading_settings.GradingSettings`), so
that every setting reaches every entry.

Timeouts follow SWE-bench: a killed test run yields an empty status map (every listed test counts as
failed) and ``resolved`` is false.
"""

from takeover.grading.backend import GradingBackend
from takeover.grading.backends import BACKENDS, checked_grading, grading_backend
from takeover.grading.evaluation import (
    grade,
    grade_checkpoint,
    grade_handoff_state,
    grade_predictions,
    grading_key,
)
from takeover.grading.local import (
    NETWORK_REPOS,
    apply_with_fallbacks,
    eval_script,
    network_warning,
    test_directives,
)
from takeover.grading.log_parsing import parse_test_log, resolve_log_parser
from takeover.grading.predictions import Prediction, read_predictions
from takeover.grading.reuse import EnvironmentKey, GradingKey
from takeover.grading.verdict import (
    GradeResult,
    TestOutcome,
    grade_log,
    handoff_state,
    is_resolved,
    set_aside_by_reference,
    swebench_report,
    tests_report,
)
from takeover.grading_settings import GradingSettings
from takeover.vocabulary import HANDOFF_STATES

__all__ = [
    "BACKENDS",
    "HANDOFF_STATES",
    "NETWORK_REPOS",
    "EnvironmentKey",
    "GradeResult",
    "GradingBackend",
    "GradingKey",
    "GradingSettings",
    "Prediction",
    "TestOutcome",
    "apply_with_fallbacks",
    "checked_grading",
    "eval_script",
    "grade",
    "grade_checkpoint",
    "grade_handoff_state",
    "grade_log",
    "grade_predictions",
    "grading_backend",
    "grading_key",
    "handoff_state",
    "is_resolved",
    "network_warning",
    "parse_test_log",
    "read_predictions",
    "resolve_log_parser",
    "set_aside_by_reference",
    "swebench_report",
    "test_directives",
    "tests_report",
]
