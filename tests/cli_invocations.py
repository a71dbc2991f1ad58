"""Which parameters of the ``takeover`` command tree the tests pass, recorded while the suite runs.

Recorded: the argv of every in-process invocation through typer's ``CliRunner`` (whatever Typer app it
runs: a test that registers one command module on an app of its own uses the same command names), and of
every subprocess that runs ``takeover`` (``python -m takeover ...`` or the console script). After the
suite, each argv is parsed again by the full command tree with click's resilient parsing, which runs no
command: a parameter counts as passed when its value came from the command line (not a default or an
environment variable). A deprecated spelling counts for its new name, since the command's own parser
reads it as the new flag.

``test_cli_parameters.py::test_every_cli_parameter_is_passed_by_a_test`` runs last and lists every
parameter no test passes; it needs the invocations of the whole suite, so it runs only when the session
collected the whole ``tests`` folder and deselected nothing.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
CHECK_NODE = "test_cli_parameters.py::test_every_cli_parameter_is_passed_by_a_test"

#: ``(test node id, argv after the program name)`` of every invocation in this session.
INVOCATIONS: list[tuple[str, tuple[str, ...]]] = []
_state = {"deselected": False, "recording": False}


def _current_test() -> str:
    return os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]


def record(argv: Sequence[str]) -> None:
    """Record one invocation (``argv`` without the program name) for the test that is running."""
    INVOCATIONS.append((_current_test(), tuple(str(a) for a in argv)))


def takeover_argv(args) -> list[str] | None:
    """The arguments after ``takeover`` when ``args`` (a subprocess argv) runs takeover, else None."""
    if isinstance(args, (str, bytes, os.PathLike)) or not args:
        return None
    argv = [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]
    if os.path.basename(argv[0]) == "takeover":
        return argv[1:]
    for i in range(1, len(argv) - 1):
        if argv[i] == "-m" and argv[i + 1] in ("takeover", "takeover.cli"):
            return argv[i + 2:]
    return None


def start_recording() -> None:
    """Wrap typer's ``CliRunner.invoke`` and ``subprocess.Popen`` so that they record what they run.

    Only the arguments are read; what runs is unchanged."""
    if _state["recording"]:
        return
    _state["recording"] = True
    from typer.testing import CliRunner

    invoke = CliRunner.invoke

    def recording_invoke(self, app, args=None, *rest, **kwargs):
        if args is not None:
            record(shlex.split(args) if isinstance(args, str) else list(args))
        return invoke(self, app, args, *rest, **kwargs)

    CliRunner.invoke = recording_invoke

    popen_init = subprocess.Popen.__init__

    def recording_popen_init(self, args, *rest, **kwargs):
        argv = takeover_argv(args)
        if argv is not None:
            record(argv)
        popen_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = recording_popen_init


def note_deselected(items: Sequence[pytest.Item]) -> None:
    if items:
        _state["deselected"] = True


def run_parameter_check_last(items: list[pytest.Item]) -> None:
    """Move the parameter check to the end of the session, after every test that invokes the CLI."""
    check = [item for item in items if item.nodeid.endswith(CHECK_NODE)]
    for item in check:
        items.remove(item)
        items.append(item)


def whole_suite(config: pytest.Config) -> bool:
    """Whether this session runs every test of ``tests/`` (no path narrower than it, nothing deselected)."""
    if _state["deselected"]:
        return False
    roots = [Path(config.invocation_params.dir, a.split("::")[0]).resolve() for a in config.args]
    return bool(roots) and all(root in (TESTS, TESTS.parent) and "::" not in a for root, a in zip(roots, config.args))


# --- the command tree --------------------------------------------------------------------------------


def _root_command():
    import typer

    from takeover.cli import app

    return typer.main.get_command(app)


def _subcommands(command, ctx) -> Iterator[tuple[str, object]]:
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            yield name, command.get_command(ctx, name)


def parameters() -> list[tuple[str, str, tuple[str, ...]]]:
    """Every parameter of the command tree: ``(command path, parameter name, its flags)``, in help order.

    ``--help`` is left out; an argument's flags are its name in capitals."""
    root = _root_command()
    found: list[tuple[str, str, tuple[str, ...]]] = []

    def walk(command, ctx, path: str) -> None:
        for p in command.params:
            if p.name != "help":
                flags = tuple(p.opts) + tuple(getattr(p, "secondary_opts", ()))
                found.append((path, p.name, flags if p.param_type_name == "option" else (p.name.upper(),)))
        for name, sub in _subcommands(command, ctx):
            walk(sub, type(ctx)(sub, parent=ctx, info_name=name), f"{path} {name}")

    walk(root, type(root.make_context("takeover", [], resilient_parsing=True))(root, info_name="takeover"), "takeover")
    return found


def passed(argv: Sequence[str]) -> set[tuple[str, str]]:
    """``(command path, parameter name)`` of each parameter ``argv`` gives on the command line.

    The argv is parsed by the command tree without running anything (output of eager options is dropped)."""
    out: set[tuple[str, str]] = set()
    command, name, args, parent = _root_command(), "takeover", list(argv), None
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        while command is not None:
            try:
                ctx = command.make_context(name, list(args), parent=parent, resilient_parsing=True)
            except Exception:  # noqa: BLE001 - an invocation the parser refuses passes nothing
                return out
            for p in command.params:
                source = ctx.get_parameter_source(p.name)
                if source is not None and source.name == "COMMANDLINE":
                    out.add((ctx.command_path, p.name))
            rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
            if not hasattr(command, "resolve_command") or not rest:
                break
            try:
                name, command, args = command.resolve_command(ctx, rest)
            except Exception:  # noqa: BLE001 - an unknown command
                break
            parent = ctx
    return out


def uncovered(invocations: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """``command path --flag`` of every parameter that no invocation passes, in help order."""
    given: set[tuple[str, str]] = set()
    for _, argv in invocations:
        given |= passed(argv)
    return [f"{path} {'/'.join(flags)}" for path, name, flags in parameters() if (path, name) not in given]
