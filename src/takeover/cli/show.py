"""``takeover show RUN_DIR|TRAJECTORY``: one HTML page with the drill-down of a run (any supported format)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from takeover._util.folders import check_writable
from takeover.cli.failures import command
from takeover.cli.options import OUT_DIR_HELP, VerboseOption
from takeover.report import write_run_page

#: Extensions of trajectory files, dropped from the default page name (``x.traj.json`` -> ``x``).
_EXTENSIONS = (".json", ".jsonl", ".traj")


def page_name(path: Path) -> str:
    """The default page name of ``path``: the file's name without its trajectory extensions. Dots inside
    the name stay (``m-1867.demo-default.traj`` and ``m-1867.demo-xml.traj`` give two pages)."""
    name = path.name
    while path.is_file() and name.endswith(_EXTENSIONS) and "." in name:
        name = name[: name.rindex(".")]
    return name or "run"


def show(
    path: Annotated[Path, typer.Argument(help="A takeover run folder, or a trajectory file or run folder of any "
                                               "supported format (detected by content).")],
    out_dir: Annotated[Path | None, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: the page, as DIR/NAME.html, "
                                                                   "NAME being the run folder's or file's name "
                                                                   "(default: the current folder).")] = None,
    format: Annotated[str | None, typer.Option("--format", help="Reader name, to skip format detection "
                                                                "(the format column of `takeover inspect`).")] = None,
    verbose: VerboseOption = False,
) -> None:
    """Write the steps of a run as one self-contained HTML page: the prompt, every action with its folded
    observation and the tokens of each model call, the final patch; for a takeover run also the handoff
    point and checkpoint diff it started from. A file with several runs gives one section per run. Prints
    the page's path.

    Examples:

        takeover show out/pilot/work/takeover/0123456789abcdef/run

        takeover show trajs/psf__requests-1766.traj.json --out-dir pages/
    """
    name = f"{page_name(path)}.html"
    target = (out_dir or Path()) / name
    check_writable(target, file=True, flag="--out-dir")
    print(write_run_page(path, target, format=format))


def register(app: typer.Typer) -> None:
    """Add ``takeover show`` to ``app``."""
    command(app, "show")(show)
