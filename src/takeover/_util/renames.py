"""Python keywords renamed in this release: the earlier keyword is still read, with a warning.

A public function whose keyword was renamed (so that a setting has one name from the flag to the keyword
to the experiment file's key) takes the earlier keyword as an extra parameter that defaults to ``None``
and resolves both with :func:`renamed_keyword`.
"""

from __future__ import annotations

import warnings
from typing import TypeVar

T = TypeVar("T")


def renamed_keyword(function: str, earlier: str, earlier_value: T | None, name: str, value: T, default: T) -> T:
    """The value of keyword ``name`` of ``function``, read from its earlier keyword when that was given.

    ``earlier_value`` is the earlier keyword's value (``None``: not given); ``value`` and ``default`` are
    the current keyword's value and default. Giving the earlier keyword issues a ``FutureWarning`` naming
    both (the earlier keyword works until the next release).

    Raises:
        TypeError: both keywords are given (the current one with a value other than its default).
    """
    if earlier_value is None:
        return value
    if value != default:
        raise TypeError(f"{function}() got both {name}= and its earlier name {earlier}=; give {name}= only")
    # stacklevel 3: the caller of the function that resolves its keywords.
    warnings.warn(f"{function}(): keyword {earlier}= is deprecated; use {name}= (the earlier keyword works until "
                  "the next release)", FutureWarning, stacklevel=3)
    return earlier_value
