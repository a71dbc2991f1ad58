"""The summary lines test runners, builders and linters print, read by their own grammar
(docs/protocol.md section 4.2, extension).

A runner's summary says what happened better than any word search: ``600 passed, 100 skipped, 1 xfailed in
5.43s`` reports no failure although it contains "failed", and ``Interrupted: 3 errors during collection`` is
a failure although it contains no "failed". :func:`summaries` finds every such line in an output and says,
for each, whether it reports a failure, a success, or neither (nothing ran, only skips).

The grammars, one per runner family (each line is matched whole, after stripping; case as the runner
prints it):

- pytest: ``[=== ]N failed, N passed, N skipped, N xfailed, N xpassed, N errors, N warnings, N deselected,
  N rerun in 1.23s[ (0:00:01)][ ===]`` (items in any order, each optional); ``no tests ran in 0.01s``;
  ``Interrupted: N error(s) during collection`` (a failure);
- unittest (Django's ``runtests.py``, ``manage.py test``): ``Ran N test(s) in 0.001s`` followed by ``OK``,
  ``OK (skipped=1, expected failures=1)`` or ``FAILED (failures=1, errors=2)``;
- sympy's ``bin/test``: ``tests finished: N passed, N failed, N skipped, N expected to fail, N expected to
  fail but passed, N exceptions, in 1.23 seconds``;
- jest: ``Tests: N failed, N skipped, N passed, N total`` and ``Test Suites: ...``; vitest: ``Tests  N failed
  | N passed (N)`` and ``Test Files  ...``; mocha (hardhat, anchor, truffle): ``N passing (12ms)``,
  ``N failing``; bun: ``N pass``, ``N fail``;
- cargo: ``test result: ok. N passed; N failed; ...`` (``FAILED``); forge: ``Suite result: ok. N passed; N
  failed; N skipped; ...`` and ``Ran N test suites in ...: N tests passed, N failed, N skipped``; go:
  ``ok  <package>  0.01s`` (or ``(cached)``), ``FAIL <package> ...``, ``--- FAIL: TestName``;
- tox: ``congratulations :)``, ``<env>: OK (...)`` / ``<env>: FAIL code N (...)``, ``ERROR: <env>: commands
  failed``; nox: ``nox > Session <name> was successful`` / ``... failed``;
- mypy: ``Success: no issues found in N source files`` / ``Found N errors in N files (checked N source
  files)``; ruff: ``All checks passed!`` / ``Found N errors.``; tsc: ``error TSnnnn:`` and ``Found N
  errors``; eslint: ``✖ N problems (N errors, N warnings)``;
- tool failures: make's ``make: *** [target] Error N``, npm's ``npm ERR!`` / ``npm error`` lines.

Pure functions over strings.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, NamedTuple

#: What one summary line says: a failure, a success, or nothing either way (nothing ran, only skips).
SummaryVerdict = Literal["failed", "passed", "none"]


class Summary(NamedTuple):
    """One summary line of a runner: which runner family, what it says, and the line itself (stripped)."""

    runner: str
    verdict: SummaryVerdict
    line: str


_COUNT = re.compile(r"(\d+) ([a-z][a-z ]*?)(?=,|;|\||$| in | \()")


def _counts(text: str) -> dict[str, int]:
    """``{"failed": 1, "passed": 600, ...}`` of a comma-, semicolon- or bar-separated list of ``N word``."""
    found: dict[str, int] = {}
    for n, word in _COUNT.findall(text):
        found[word.strip()] = found.get(word.strip(), 0) + int(n)
    return found


def _verdict(failed: int, passed: int) -> SummaryVerdict:
    if failed:
        return "failed"
    return "passed" if passed else "none"


# --- one reader per grammar: (pattern of a whole stripped line, the verdict of a match) -------------------

_PYTEST_ITEMS = r"(?:\d+ (?:failed|passed|skipped|deselected|xfailed|xpassed|errors?|warnings?|rerun)(?:, )?)+"
_PYTEST = re.compile(rf"^=*\s*({_PYTEST_ITEMS}) in [\d.]+s(?: \([\d:.]+\))?\s*=*$")
_PYTEST_NONE = re.compile(r"^=*\s*no tests ran in [\d.]+s\s*=*$")
_PYTEST_INTERRUPTED = re.compile(r"^[!=]*\s*Interrupted: \d+ errors? during collection\s*[!=]*$")


def _pytest(m: re.Match) -> SummaryVerdict:
    c = _counts(m.group(1).replace(", ", ","))
    failed = c.get("failed", 0) + c.get("error", 0) + c.get("errors", 0)
    return _verdict(failed, c.get("passed", 0) + c.get("xpassed", 0))


_SYMPY = re.compile(r"^tests finished: (.*), in [\d.]+ seconds$")


def _sympy(m: re.Match) -> SummaryVerdict:
    items = {" ".join(w.split()): int(n) for n, w in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", m.group(1))}
    failed = items.get("failed", 0) + items.get("exceptions", 0)
    return _verdict(failed, items.get("passed", 0) + items.get("expected to fail but passed", 0))


_JEST = re.compile(r"^(Tests|Test Suites):\s+(.*\d+ total)$")


def _jest(m: re.Match) -> SummaryVerdict:
    c = _counts(m.group(2).replace(", ", ","))
    return _verdict(c.get("failed", 0), c.get("passed", 0))


_VITEST = re.compile(r"^(Tests|Test Files)\s+(\d+ (?:failed|passed|skipped|todo)(?: \| \d+ (?:failed|passed|skipped|todo))*) \(\d+\)$")


def _vitest(m: re.Match) -> SummaryVerdict:
    c = _counts(m.group(2).replace(" | ", "|"))
    return _verdict(c.get("failed", 0), c.get("passed", 0))


_MOCHA_PASSING = re.compile(r"^(\d+) passing(?: \([\d.]+\s*m?s\))?$")
_MOCHA_FAILING = re.compile(r"^(\d+) failing$")
_BUN = re.compile(r"^(\d+) (pass|fail)$")
_CARGO = re.compile(r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed;")
_FORGE_SUITE = re.compile(r"^Suite result: (ok|FAILED)\. (\d+) passed; (\d+) failed;")
_FORGE_TOTAL = re.compile(r"^Ran \d+ test suites? in .*: (\d+) tests passed, (\d+) failed, \d+ skipped")
_GO_OK = re.compile(r"^ok\s+\S+\s+(?:[\d.]+s|\(cached\))")
_GO_FAIL = re.compile(r"^(?:FAIL\s+\S+\s+(?:[\d.]+s|\[[^\]]+\])|--- FAIL: \S+)")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s$")
_UNITTEST_END = re.compile(r"^(OK|FAILED)(?: \((.*)\))?$")
_TOX_OK = re.compile(r"^(?:congratulations :\)|[\w.-]+: OK \(.*\)|[\w.-]+: commands succeeded)$")
_TOX_FAIL = re.compile(r"^(?:ERROR:\s+[\w.-]+: (?:commands failed|.*failed)|[\w.-]+: FAIL code \d+.*|evaluation failed :\()$")
_NOX = re.compile(r"^nox > Session \S+ (was successful|failed)")
_MYPY_OK = re.compile(r"^Success: no issues found in \d+ source files?$")
_MYPY_FAIL = re.compile(r"^Found \d+ errors? in \d+ files? \(checked \d+ source files?\)$")
_RUFF_OK = re.compile(r"^All checks passed!$")
_ERRORS_FOUND = re.compile(r"^Found ([1-9]\d*) errors?\b")
_TSC_ERROR = re.compile(r"(?:^|[\s(:])error TS\d+:")
_ESLINT = re.compile(r"^✖ \d+ problems? \((\d+) errors?, \d+ warnings?\)$")
_TOOL_FAILED = re.compile(r"^(?:make(?:\[\d+\])?: \*\*\* .*Error \d+|npm ERR! |npm error )")

#: ``(runner, pattern, verdict of a match)``; the first pattern that matches a line decides it.
_LINE_GRAMMARS: tuple[tuple[str, re.Pattern, Callable[[re.Match], SummaryVerdict]], ...] = (
    ("pytest", _PYTEST, _pytest),
    ("pytest", _PYTEST_NONE, lambda m: "none"),
    ("pytest", _PYTEST_INTERRUPTED, lambda m: "failed"),
    ("sympy", _SYMPY, _sympy),
    ("jest", _JEST, _jest),
    ("vitest", _VITEST, _vitest),
    ("mocha", _MOCHA_PASSING, lambda m: "passed" if int(m.group(1)) else "none"),
    ("mocha", _MOCHA_FAILING, lambda m: "failed" if int(m.group(1)) else "none"),
    ("bun", _BUN, lambda m: ("failed" if m.group(2) == "fail" else "passed") if int(m.group(1)) else "none"),
    ("cargo", _CARGO, lambda m: _verdict(int(m.group(3)) or m.group(1) == "FAILED", int(m.group(2)))),
    ("forge", _FORGE_SUITE, lambda m: _verdict(int(m.group(3)) or m.group(1) == "FAILED", int(m.group(2)))),
    ("forge", _FORGE_TOTAL, lambda m: _verdict(int(m.group(2)), int(m.group(1)))),
    ("go", _GO_OK, lambda m: "passed"),
    ("go", _GO_FAIL, lambda m: "failed"),
    ("tox", _TOX_OK, lambda m: "passed"),
    ("tox", _TOX_FAIL, lambda m: "failed"),
    ("nox", _NOX, lambda m: "passed" if m.group(1) == "was successful" else "failed"),
    ("mypy", _MYPY_OK, lambda m: "passed"),
    ("mypy", _MYPY_FAIL, lambda m: "failed"),
    ("ruff", _RUFF_OK, lambda m: "passed"),
    ("linter", _ERRORS_FOUND, lambda m: "failed"),
    ("eslint", _ESLINT, lambda m: "failed" if int(m.group(1)) else "passed"),
    ("tool", _TOOL_FAILED, lambda m: "failed"),
)


def _unittest_end(m: re.Match, ran: int) -> SummaryVerdict:
    if m.group(1) == "FAILED":
        return "failed"
    return "passed" if ran else "none"


def summaries(output: str | None) -> list[Summary]:
    """Every runner summary line of ``output``, in order (see the module docstring for the grammars).

    A unittest ``OK``/``FAILED`` line counts only after a ``Ran N tests in ...`` line (a bare ``OK`` is
    any program's word). A TypeScript ``error TSnnnn:`` counts wherever it is in a line.
    """
    found: list[Summary] = []
    ran: int | None = None
    for raw in (output or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _UNITTEST_RAN.match(line)
        if m:
            ran = int(m.group(1))
            continue
        if ran is not None:
            end = _UNITTEST_END.match(line)
            if end:
                found.append(Summary("unittest", _unittest_end(end, ran), line))
                ran = None
                continue
        for runner, pattern, verdict in _LINE_GRAMMARS:
            m = pattern.match(line)
            if m:
                found.append(Summary(runner, verdict(m), line))
                break
        else:
            if _TSC_ERROR.search(line):
                found.append(Summary("tsc", "failed", line))
    return found
