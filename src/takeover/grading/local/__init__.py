"""The ``local`` grading backend: SWE-bench's evaluation without Docker, in a venv built from SWE-bench's
specification and the sandbox (docs/protocol.md section 6).

- :mod:`.local_backend`: one prediction graded in a fresh workspace (:func:`grade_local`), and
  :class:`LocalBackend`, the backend registered as ``local``, with its own options (:class:`LocalGradingOptions`);
- :mod:`.harness`: patches applied with SWE-bench's fallbacks, the eval script and its sandboxed run;
- :mod:`.hermetic`: the fixed environment of the test command (no colour, 80x24, UTC, a UTF-8 locale).
"""

from takeover.grading.local.harness import apply_with_fallbacks, eval_script, test_directives
from takeover.grading.local.local_backend import (
    NETWORK_REPOS,
    LocalBackend,
    LocalGradingOptions,
    grade_local,
    network_warning,
)

__all__ = [
    "NETWORK_REPOS",
    "LocalBackend",
    "LocalGradingOptions",
    "apply_with_fallbacks",
    "eval_script",
    "grade_local",
    "network_warning",
    "test_directives",
]
