"""A notice that lives with an output folder's results and heads every report built from it.

The quickstart writes ``OUT/notice.json`` (:func:`write_notice`): its results come from a 0.5B
demonstration model under a 5-step limit and mean nothing as measurements. :func:`build_report
<takeover.report.build_report>` reads it (:func:`read_notice`) and puts it at the top of ``report.md`` and
``report.html`` (and into ``report.json`` as ``notice``), so that ``takeover report`` on that folder, at
any later time, shows it too. A folder without the file has no notice.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ValidationError

from takeover._util.io import atomic_write_json
from takeover.errors import InputError

NOTICE_FILE = "notice.json"


class ReportNotice(BaseModel):
    """What the notice says, as plain text (no markup: each report format renders it itself).

    Attributes:
        title: the first, emphasized sentence ("This is a demonstration, not a measurement.").
        text: the rest of the paragraph.
        command_intro: the sentence before ``command``; command: a command line shown as code (``None``: none).
        closing: a last sentence after the command (``None``: none).
    """

    title: str
    text: str = ""
    command_intro: str | None = None
    command: str | None = None
    closing: str | None = None


def write_notice(out_dir: Path | str, notice: ReportNotice) -> Path:
    """Write ``OUT/notice.json`` atomically; returns its path."""
    return atomic_write_json(Path(out_dir) / NOTICE_FILE, notice)


def read_notice(out_dir: Path | str) -> ReportNotice | None:
    """The folder's notice, ``None`` when it has none.

    Raises:
        InputError: ``notice.json`` exists but is not a notice (names the file).
    """
    path = Path(out_dir) / NOTICE_FILE
    try:
        return ReportNotice.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError) as exc:
        raise InputError(path, f"not a report notice: {' '.join(str(exc).split())[:200]}") from None


def notice_markdown(notice: dict) -> str:
    """The notice (a :class:`ReportNotice` as a dict, as ``report.json`` holds it) as Markdown, ending with a
    blank line."""
    text = f"**{notice['title']}** {notice.get('text') or ''}".rstrip() + "\n\n"
    if notice.get("command"):
        text += f"{notice.get('command_intro') or ''}\n\n```bash\n{notice['command']}\n```\n\n".lstrip("\n")
    if notice.get("closing"):
        text += notice["closing"] + "\n\n"
    return text
