"""What a failed environment build lacks, said in a sentence (a header, a compiler, a package, the index)."""

from __future__ import annotations

import re

from takeover.environments.conda import SKIPPED_SYSTEM_STEP

_HINTS = [
    (re.compile(r"fatal error: ([\w/.+-]+\.h): No such file"),
     ("the C header {0} is missing: install the system development package that provides it "
     "(e.g. apt-get install lib<name>-dev)")),
    (re.compile(r"(?:command '|unable to execute '|error: command ')(gcc|g\+\+|cc|x86_64-linux-gnu-gcc)"),
     "a C compiler is needed: apt-get install build-essential"),
    (re.compile(r"No matching distribution found for ([^\s]+)|Because ([^\s]+) was not found in the package registry"),
     "{0} is not available from the package index for this Python version (pin another version in the spec)"),
    (re.compile(r"(?:Could not|Failed to) (?:fetch|connect|resolve).*(?:pypi|files\.pythonhosted)", re.IGNORECASE),
     "the package index is unreachable: check the network or a local index (UV_INDEX_URL / PIP_INDEX_URL)"),
]


def failure_hint(output: str) -> str:
    """A sentence saying what is missing, from a failed build's output (headers, compiler, packages);
    empty when nothing is recognised."""
    for pattern, sentence in _HINTS:
        m = pattern.search(output)
        if m:
            return sentence.format(next((g for g in m.groups() if g), ""))
    return ""


def skipped_steps_hint(notes: list[str]) -> str:
    """The system steps of a spec that were skipped here (from the build's notes), as the likely cause of a
    failed build; empty when none was skipped."""
    skipped = [n.split(": ", 1)[-1] for n in notes if n.startswith(SKIPPED_SYSTEM_STEP)]
    if not skipped:
        return ""
    return f"system steps of the spec that were skipped here and may be needed: {'; '.join(skipped)}"
