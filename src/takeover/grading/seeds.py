"""The hash seed a grading's tests run under (docs/protocol.md section 6, extension "Hash seeds and flaky
verdicts").

Python salts ``hash()`` of ``str`` and ``bytes`` per process with ``PYTHONHASHSEED``, so the iteration order of
sets and dicts of strings changes from one process to the next. A suite whose outcome depends on that order
passes under one seed and fails under another: sympy's assumption system deduces facts in set order, and
``test_bug_sqrt`` of ``sympy__sympy-13091`` ends in a ``RecursionError`` under some seeds (1535730572 is one)
with the reference patch. sympy's own test runner picks a random seed when none is set, so the same patch
graded twice could get two verdicts.

Every grading therefore sets ``PYTHONHASHSEED`` itself and records it (``result.json``'s ``hash_seed``):

- :func:`first_seed`: the seed of a grading key (the same patch in the same environment is graded under
  the same seed, so grading again gives the same verdict), unless the caller names one (``--hash-seed``);
- :func:`other_seed`: the seed of the second grading that :mod:`takeover.grading.flaky` asks for when a
  test that passes with the reference patch failed.

The ``local`` backend exports the seed at the top of its eval script (:func:`seed_export`); the ``docker``
backend gives it to the harness's container as a variable, which ``docker exec`` of the eval script inherits.
"""

from __future__ import annotations

import hashlib
import re

from takeover.grading.reuse import GradingKey
from takeover.grading_settings import MAX_SEED

#: The variable that seeds Python's string hashing.
HASH_SEED_VARIABLE = "PYTHONHASHSEED"
# sympy's runner prints the seed it ran under: "hash randomization: on (PYTHONHASHSEED=1535730572)".
_PRINTED = re.compile(r"PYTHONHASHSEED=(\d+)")


def _seed_of(text: str) -> int:
    """A seed in 1..MAX_SEED from the sha256 of ``text`` (never 0: that would switch randomization off)."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % MAX_SEED + 1


def first_seed(key: GradingKey) -> int:
    """The seed a grading under ``key`` runs with when the caller names none: the same key, the same seed."""
    return _seed_of(f"hash seed of {key.digest}")


def other_seed(seed: int, key: GradingKey) -> int:
    """A seed other than ``seed`` for grading ``key`` again (:mod:`takeover.grading.flaky`); the same
    arguments give the same seed."""
    candidate = _seed_of(f"second hash seed of {key.digest} after {seed}")
    return candidate if candidate != seed else candidate % MAX_SEED + 1


def check_seed(seed: int) -> int:
    """``seed`` when Python accepts it as ``PYTHONHASHSEED`` with randomization on (1 to :data:`MAX_SEED`).

    Raises:
        ValueError: out of range (the message names the range).
    """
    if not 1 <= seed <= MAX_SEED:
        raise ValueError(f"a hash seed is 1 to {MAX_SEED}, got {seed}")
    return seed


def seed_export(seed: int) -> str:
    """The shell line that sets the seed for every command after it (``export PYTHONHASHSEED=N``)."""
    return f"export {HASH_SEED_VARIABLE}={check_seed(seed)}"


def printed_seed(log_text: str) -> int | None:
    """The seed a test runner printed in ``log_text`` (sympy's ``PYTHONHASHSEED=N``), None when none did."""
    m = _PRINTED.search(log_text)
    return int(m.group(1)) if m else None
