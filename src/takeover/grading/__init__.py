"""SWE-bench grading of a patch and the handoff state of a checkpoint (docs/protocol.md sections 6 and 8).

Along the lines of SWE-bench's harness:

- :mod:`.predictions`: the predictions a grading reads;
- :mod:`.evaluation`: the entry points (:func:`grade_predictions`, :func:`grade`,
  :func:`grade_checkpoint`, :func:`grade_handoff_state`) and the files written per prediction;
- :mod:`.reuse`: the :class:`GradingKey` of everything that decides a verdict; a stored result is
  reused only under an equal key;
- :mod:`.local_backend`: evaluation without Docker, in a venv and the sandbox;
  :mod:`.docker_backend`: swebench's official harness, one run id per graded patch;
- :mod:`.harness`: patches applied with SWE-bench's fallbacks, the eval script and its sandboxed run;
- :mod:`.hermetic`: the fixed environment of the test command;
- :mod:`.log_parsing`: a test log as a status map, with swebench's parsers;
- :mod:`.verdict`: the FAIL_TO_PASS / PASS_TO_PASS report, ``resolved`` (swebench's own) and the handoff
  state, in a :class:`GradeResult`.

Timeouts follow SWE-bench: a killed test run yields an empty status map (every listed test counts as
failed) and ``resolved`` is false.
"""

from takeover.grading.evaluation import (
    BACKENDS,
    grade,
    grade_checkpoint,
    grade_handoff_state,
    grade_predictions,
)
from takeover.grading.harness import apply_with_fallbacks, eval_script, test_directives
from takeover.grading.local_backend import NETWORK_REPOS, network_warning
from takeover.grading.log_parsing import parse_test_log, resolve_log_parser
from takeover.grading.predictions import Prediction, read_predictions
from takeover.grading.reuse import GradingKey, grading_key
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
from takeover.vocabulary import HANDOFF_STATES

__all__ = [
    "BACKENDS",
    "HANDOFF_STATES",
    "NETWORK_REPOS",
    "GradeResult",
    "GradingKey",
    "Prediction",
    "TestOutcome",
    "apply_with_fallbacks",
    "eval_script",
    "grade",
    "grade_checkpoint",
    "grade_handoff_state",
    "grade_log",
    "grade_predictions",
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
