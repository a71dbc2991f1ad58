"""Flaky verdicts: a test whose outcome changes with the hash seed alone (docs/protocol.md section 6,
extension "Hash seeds and flaky verdicts").

Every FAIL_TO_PASS and PASS_TO_PASS test passes with the task's reference patch. When one of them fails in a
grading that ran (the patch applied, the tests neither errored nor timed out), :func:`grade_with_seeds`
grades the same patch once more, in the same environment, under another hash seed
(:func:`takeover.grading.seeds.other_seed`), its logs in ``seed-<N>/`` beside the first's; when a
PASS_TO_PASS test failed under both seeds, once more under a third (:data:`MAX_EXTRA_SEEDS`). Tests whose
outcome differs between the two are a **flaky verdict** (:class:`~takeover.grading.verdict.FlakyVerdict` in ``result.json``'s
``flaky``): the seeds, what each grading decided, and the tests that flipped. The result's own lists and
``resolved`` stay those of the first grading, and whoever counts verdicts keeps a flaky one apart
(``results.csv``'s ``flaky`` column; the report leaves it out of the solved rates and counts it): a flip
of the seed is never the agent's failure. Two gradings that agree leave the verdict as it is
(``hash_seeds`` names both seeds).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from takeover.grading.reuse import GradingKey
from takeover.grading.seeds import first_seed, other_seed
from takeover.grading.verdict import FlakyVerdict, GradeResult

#: Gradings after the first at most: the second always (when a test failed), a third only while a PASS_TO_PASS
#: test fails under every seed so far.
MAX_EXTRA_SEEDS = 2


def _failing(result: GradeResult) -> set[str]:
    return set(result.FAIL_TO_PASS.failure) | set(result.PASS_TO_PASS.failure)


def _passing(result: GradeResult) -> set[str]:
    return set(result.FAIL_TO_PASS.success) | set(result.PASS_TO_PASS.success)


def needs_second_seed(result: GradeResult) -> bool:
    """Whether ``result`` is a grading whose tests ran (patch applied, no error, no time-out) and in which a
    test that passes with the reference patch failed."""
    return result.error is None and result.applied and not result.timed_out and bool(_failing(result))


def flaky_verdict(first: GradeResult, second: GradeResult) -> FlakyVerdict | None:
    """The flaky verdict of two gradings of one patch under ``first.hash_seed`` and ``second.hash_seed``,
    None when no test flipped (or the second grading did not run its tests)."""
    if second.error is not None or not second.applied or second.timed_out:
        return None
    flipped = (_failing(first) & _passing(second)) | (_passing(first) & _failing(second))
    if not flipped and first.resolved == second.resolved:
        return None
    return FlakyVerdict(seeds=[first.hash_seed, second.hash_seed], resolved=[first.resolved, second.resolved],
                        flipped=sorted(flipped), second_log=second.log_path)


def grade_with_seeds(grade_once: Callable[[int, Path], GradeResult], key: GradingKey, folder: Path,
                     seed: int | None = None) -> GradeResult:
    """Grade with ``grade_once(seed, log_dir)`` under ``seed`` (default :func:`~takeover.grading.seeds.first_seed`
    of ``key``) into ``folder``; when :func:`needs_second_seed`, once more under
    :func:`~takeover.grading.seeds.other_seed` into ``folder / "seed-<N>"`` (and a third time while a
    PASS_TO_PASS test fails under every seed so far, :data:`MAX_EXTRA_SEEDS`), and the result carries the
    :class:`~takeover.grading.verdict.FlakyVerdict` when a test flipped.

    Returns:
        The first grading's result with ``hash_seed``, ``hash_seeds`` (every seed graded) and ``flaky``.
    Raises:
        What ``grade_once`` raises (``EnvironmentUnavailable``: the backend cannot grade at all).
    """
    seed = seed if seed is not None else first_seed(key)
    result = grade_once(seed, folder)
    result.hash_seed, result.hash_seeds = seed, [seed]
    if not needs_second_seed(result):
        return result
    previous = seed
    for _ in range(MAX_EXTRA_SEEDS):
        next_seed = other_seed(previous, key)
        again = folder / f"seed-{next_seed}"
        again.mkdir(parents=True, exist_ok=True)
        other = grade_once(next_seed, again)
        other.hash_seed = next_seed
        result.hash_seeds.append(next_seed)
        result.flaky = flaky_verdict(result, other)
        # Measured: sympy__sympy-13091's reference patch fails test_bug_sqrt under about one seed in six, so two
        # failing seeds in a row happen (123456, then 1178381428). A PASS_TO_PASS test, which passes before and
        # after the reference patch, failing under both seeds gets one more.
        if result.flaky is not None or not set(result.PASS_TO_PASS.failure) & set(other.PASS_TO_PASS.failure):
            break
        previous = next_seed
    if result.flaky is not None:
        result.warnings.append(f"flaky verdict: {result.flaky.describe()}; it counts neither as solved nor as a "
                               f"failure (logs of the grading that disagreed: {again})")
    return result
