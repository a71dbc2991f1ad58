"""The quickstart's inputs: local paths when given, else the pinned downloads (cached under
``<cache>/quickstart``, checked by sha256; see :mod:`takeover.quickstart.pinned`).

Local paths always win, and with ``offline`` nothing is downloaded (a missing input is then an error that
says which flag supplies it).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from takeover._util.io import atomic_write_text, sha256_file
from takeover.errors import TakeoverError
from takeover.quickstart.options import QuickstartOptions
from takeover.quickstart.pinned import HF_DATASET, PINNED, row_fingerprint
from takeover.sources.repos import cache_dir
from takeover.sources.tasks import load_tasks, task_index


def quickstart_cache() -> Path:
    """``<cache>/quickstart``: downloaded trajectories and dataset rows."""
    return cache_dir() / "quickstart"


def download(url: str, dest: Path, sha256: str, *, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` atomically, checking its sha256 (``timeout`` in seconds).

    Raises:
        TakeoverError: the download fails (message names the URL and says how to pass the file instead)
            or the hash differs (the file is not kept).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as fh, urllib.request.urlopen(url, timeout=timeout) as resp:
            shutil.copyfileobj(resp, fh)
        actual = sha256_file(tmp)
        if actual != sha256:
            raise TakeoverError(f"{url}: sha256 {actual} differs from the pinned {sha256}; not used")
        os.replace(tmp, dest)
    except (urllib.error.URLError, OSError) as exc:
        raise TakeoverError(f"could not download {url} ({getattr(exc, 'reason', exc)}); pass the file with "
                            "--trajectories instead") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return dest


def resolve_trajectories(options: QuickstartOptions) -> list[Path]:
    """The predecessor trajectory paths: ``--trajectories``, else the pinned runs (cached, downloaded once).

    Raises:
        TakeoverError: a download fails, or a run is not cached (or its cached copy's hash is wrong) and
            ``offline`` is set.
    """
    if options.trajectories:
        return [Path(p).expanduser().resolve() for p in options.trajectories]
    paths = []
    for iid in options.instance_ids:
        pin = PINNED[iid]
        dest = quickstart_cache() / "trajectories" / f"{iid}.traj.json"
        if dest.is_file() and sha256_file(dest) == pin.trajectory_sha256:
            paths.append(dest)
            continue
        if options.offline:
            raise TakeoverError(f"{iid}: the predecessor trajectory is not cached ({dest}) and --offline is set; "
                                "pass it with --trajectories")
        paths.append(download(pin.trajectory_url, dest, pin.trajectory_sha256))
    return paths


def resolve_dataset(options: QuickstartOptions) -> Path:
    """The dataset file: ``--dataset``, else a cached file of the pinned rows (fetched from Hugging Face once).

    Raises:
        TakeoverError: the rows are not cached and ``offline`` is set, cannot be fetched, or a fetched row
            differs from its pinned fingerprint.
    """
    if options.dataset is not None:
        return Path(options.dataset).expanduser().resolve()
    ids = sorted(options.instance_ids)
    digest = hashlib.sha256(" ".join(ids).encode()).hexdigest()[:12]
    dest = quickstart_cache() / "datasets" / f"swebench_verified.{digest}.jsonl"
    if dest.is_file():
        return dest
    if options.offline:
        raise TakeoverError(f"the dataset rows of {', '.join(ids)} are not cached and --offline is set; pass a "
                            "SWE-bench Verified file with --dataset")
    try:
        tasks = task_index(load_tasks(HF_DATASET))
    except TakeoverError as exc:
        raise TakeoverError(f"{exc}; or pass a local SWE-bench Verified file with --dataset") from None
    rows = []
    for iid in ids:
        if iid not in tasks:
            raise TakeoverError(f"{iid} is not in {HF_DATASET}")
        pin = PINNED.get(iid)
        if pin is not None and row_fingerprint(tasks[iid]) != pin.row_sha256:
            raise TakeoverError(f"{HF_DATASET} row {iid} differs from the pinned one (fingerprint "
                                f"{row_fingerprint(tasks[iid])}); pass the dataset with --dataset")
        rows.append(tasks[iid].model_dump_json())
    atomic_write_text(dest, "\n".join(rows) + "\n")
    return dest
