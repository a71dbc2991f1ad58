"""``takeover doctor``: what this machine can run and how to fix what it cannot (:mod:`takeover.doctor`)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from takeover._util.containers import remove_stale_containers
from takeover.cli.console import output_console
from takeover.cli.failures import command
from takeover.cli.options import BASE_URL_HELP, ApiKeyEnvOption, JsonOption, MirrorOption, VerboseOption
from takeover.doctor import render, run_checks


def doctor(
    mirror: MirrorOption = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help=f"{BASE_URL_HELP} Checked with GET /models.")
    ] = None,
    api_key_env: ApiKeyEnvOption = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any check is not ok.")] = False,
    clean: Annotated[bool, typer.Option(
        "--clean", help="First remove the Docker containers of takeover runs and gradings on this host whose "
                        "process is gone (killed); other containers are never touched.")] = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Check what this machine can run (interpreters, git, sandbox, Docker, mirror, model, disk) and how
    to fix what it cannot. Exits 0 unless --strict.

    On a terminal a table; to a file or pipe (as pasted into a bug report) one block per check, its status
    and what was found, then how to fix it, wrapped at 100 columns. With --json, one line per check, in
    the same order: name, status (ok, warn or fail), detail, fix.
    With --clean, each container removed is printed first (on stderr), with its output folder.

    Examples:

        takeover doctor

        takeover doctor --clean

        takeover doctor --mirror /data/mirror --base-url http://127.0.0.1:8000/v1 --strict
    """
    if clean:
        removed = remove_stale_containers()
        for stale in removed:
            print(f"removed container {stale.name} ({stale.purpose}, pid {stale.pid} gone): {stale.out_dir}",
                  file=sys.stderr)
        if not removed:
            print("no container of a killed takeover run to remove", file=sys.stderr)
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
    command(app, "doctor")(doctor)
