"""The samples of the handoff task: one per handoff point x view, from a folder of checkpoint folders
(``takeover checkpoint`` writes one, ``takeover views --checkpoint-dir`` adds its ``views/<view>.md``).

Each sample's input is the view's full takeover prompt (docs/protocol.md section 7.1), exactly the file
``views/<view>.md``; its metadata (:data:`takeover.report.inspect_logs.SAMPLE_METADATA`) names the
instance, the point (``point_type``: a point type, or ``event`` for a cut at an event, with its
``event_index``), the view, the handoff state when graded, the checkpoint folder and the ``point_key`` that
pairs the views of one point in the report.
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai.dataset import Sample

from takeover.checkpoints import Checkpoint, load_checkpoint
from takeover.errors import InputError
from takeover.report.inspect_logs import point_key
from takeover.views import HANDOFF_VIEWS
from takeover.views.folder import refuse_other_checkpoint_views
from takeover.vocabulary import VIEWS


def checkpoint_folders(root: Path | str) -> list[Path]:
    """``root`` itself when it is a checkpoint folder, else every checkpoint folder under it (sorted).

    Raises:
        InputError: ``root`` does not exist or holds no ``checkpoint.json``.
    """
    root = Path(root)
    if not root.exists():
        raise InputError(root, "checkpoint folder not found")
    if (root / "checkpoint.json").is_file():
        return [root]
    found = sorted(p.parent for p in root.rglob("checkpoint.json"))
    if not found:
        raise InputError(root, "no checkpoint.json in this folder or below it (write them with takeover checkpoint)")
    return found


def parse_views(views: str | list[str]) -> list[str]:
    """View names from ``repo_only,raw_trace``, a list, or ``all`` (the paper's four; order kept as given).
    Any view that was built is accepted (a view file's by the name it declares); :func:`handoff_samples` names
    one that is neither registered nor built."""
    return list(VIEWS) if views == "all" else [v.strip() for v in (views.split(",") if isinstance(views, str) else views)]


def sample_metadata(checkpoint: Checkpoint, folder: Path, view: str) -> dict:
    """The metadata of one sample (the keys of :data:`takeover.report.inspect_logs.SAMPLE_METADATA`)."""
    return {
        "instance_id": checkpoint.instance_id, "repo": checkpoint.repo, "base_commit": checkpoint.base_commit,
        "point_type": checkpoint.point.type, "event_index": checkpoint.point.event_index, "view": view,
        "handoff_state": checkpoint.handoff_state, "checkpoint_dir": str(folder.resolve()),
        "point_key": point_key(checkpoint.instance_id, checkpoint.point.type, checkpoint.point.event_index),
    }


def handoff_samples(checkpoints: Path | str, views: str | list[str] = "all") -> list[Sample]:
    """The samples of every checkpoint folder under ``checkpoints`` x ``views``, in folder then view order.

    Raises:
        InputError: no checkpoint folder, a broken one, an unknown view, or a view that was not built
            (its file is named, with the command that builds it).
    """
    names = parse_views(views)
    samples = []
    for folder in checkpoint_folders(checkpoints):
        checkpoint, _ = load_checkpoint(folder)
        refuse_other_checkpoint_views(folder, checkpoint)  # never another checkpoint's prompts
        for view in names:
            prompt = folder / "views" / f"{view}.md"
            if not prompt.is_file() and view not in HANDOFF_VIEWS:
                raise InputError("views", f"unknown view {view!r}: no views/{view}.md in {folder}, and no registered "
                                 f"view has that name ({HANDOFF_VIEWS.choices()})")
            if not prompt.is_file():
                raise InputError(prompt, f"view {view} was not built for this checkpoint; build it with "
                                 f"takeover views RUN --checkpoint-dir {folder} --view {view}")
            meta = sample_metadata(checkpoint, folder, view)
            samples.append(Sample(id=f"{meta['point_key']}/{view}", input=prompt.read_text(encoding="utf-8"),
                                  target="", metadata=meta))
    return samples
