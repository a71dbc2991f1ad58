"""``takeover doctor``: what this machine can run and how to fix what it cannot (:mod:`takeover.doctor`)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from takeover.cli.console import output_console
from takeover.cli.options import BASE_URL_HELP, ApiKeyEnvOption, JsonOption, MirrorOption, VerboseOption
from takeover.doctor import render, run_checks


def doctor(
    mirror: MirrorOption = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help=f"{BASE_URL_HELP} Checked with GET /models.")
    ] = None,
    api_key_env: ApiKeyEnvOption = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any check is not ok.")] = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Check what this machine can run (interpreters, git, sandbox, Docker, mirror, model, disk) and how
    to fix what it cannot. Exits 0 unless --strict.

    With --json, one line per check, in the table's order: name, status (ok, warn or fail), detail, fix.

    Examples:

        takeover doctor

        takeover doctor --mirror /data/mirror --base-url http://127.0.0.1:8000/v1 --strict
    """
    checks = run_checks(mirror=mirror, base_url=base_url, api_key_env=api_key_env)
    if as_json:
        for c in checks:
            print(json.dumps(c.model_dump(), ensure_ascii=False))
    else:
        render(checks, output_console())
    if strict and any(c.status != "ok" for c in checks):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``takeover doctor`` to ``app``."""
    app.command("doctor")(doctor)
