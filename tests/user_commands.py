"""Running ``takeover`` as a user does, and checking that a command left the files it found alone.

:func:`takeover` runs one command in this process through typer's runner and ends it as the console entry
point does (:func:`takeover.cli.failure`: one ``error:`` line and its exit status); an exception the entry
point would show as a traceback is raised, so the test fails with it. :func:`files_under` records every
file below some folders (content hash and modification time) so that a test can assert that a command
changed none of them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from takeover.cli import app, failure


@dataclass
class Outcome:
    """What a user sees: the exit status, stdout and stderr."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def errors(self) -> list[str]:
        """The ``error:`` lines on stderr."""
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]


def takeover(*args: object, env: dict[str, str] | None = None) -> Outcome:
    """Run ``takeover ARGS`` in this process; returns what the user sees.

    Raises:
        BaseException: the one the command raised, when the entry point would print its traceback.
    """
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 always keeps stderr apart
        runner = CliRunner()
    result = runner.invoke(app, [str(a) for a in args], env=env)
    stderr = result.stderr
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        found = failure(result.exception)
        if found is None:
            raise result.exception
        code, line = found
        stderr += line + "\n"
    return Outcome(code, result.stdout, stderr)


def files_under(*folders: Path) -> dict[str, tuple[str, int]]:
    """``{path: (sha256, mtime_ns)}`` of every file below ``folders`` (symbolic links not followed)."""
    found: dict[str, tuple[str, int]] = {}
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file() and not path.is_symlink():
                found[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return found
