"""Docker containers and images as takeover uses them: labelled containers, stale ones removed, images named
by their content id.

Every container takeover starts (an agent run's, through mini-swe-agent's ``DockerEnvironment``, whose
``docker run`` gets :func:`label_args`; a grading's, through swebench's harness, given a
:func:`docker_client` whose containers get the labels) carries labels saying who started it: the host, the
process id, the output folder and the purpose (:func:`container_labels`). A container outlives a takeover
process killed with SIGKILL (an agent's container runs ``sleep`` for up to the run's wall time, a grading's
``tail -f /dev/null`` for ever), so a rerun in the same output folder, or ``takeover doctor --clean``, removes
the ones whose process is gone (:func:`remove_stale_containers`). Containers on this daemon that other tools
started, or that a live takeover process started, are never touched.

An image is named by a tag (``swebench/sweb.eval.x86_64.pallets_1776_flask-5014:latest``) that can point to
another image tomorrow; :func:`image_identity` gives its content id (``sha256:...``), which is what a stored
verdict or run is keyed by. A missing image, or a pull that fails, is one line naming the image, docker's
own reason and what to do (:class:`~takeover.errors.EnvironmentUnavailable`).
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from takeover.errors import EnvironmentUnavailable

if TYPE_CHECKING:
    import docker

#: The labels of takeover's containers.
OWNER, PURPOSE, OUT_DIR, HOST, PID, STARTED, PID_STARTED = (f"org.takeover.{name}" for name in (
    "owner", "purpose", "out-dir", "host", "pid", "started", "pid-started"))
OWNER_VALUE = "takeover"
#: The harness's own stop sends SIGTERM and waits 15 s before killing; ``tail -f /dev/null`` as process 1
#: ignores SIGTERM, so every grading waited those 15 s. A container takeover starts stops at once instead.
STOP_SIGNAL = "SIGKILL"


def container_labels(purpose: str, out_dir: Path | str) -> dict[str, str]:
    """The labels of a container started now by this process for ``purpose`` (``grading``, ``agent run``)
    whose files go to ``out_dir`` (made absolute); with :data:`PID_STARTED`, when this process started, where
    ``/proc`` says."""
    labels = {OWNER: OWNER_VALUE, PURPOSE: purpose, OUT_DIR: str(Path(out_dir).resolve()), HOST: socket.gethostname(),
              PID: str(os.getpid()), STARTED: datetime.now(UTC).isoformat(timespec="seconds")}
    started = process_started(os.getpid())
    if started is not None:  # a later process with the same pid does not keep this container alive
        labels[PID_STARTED] = started
    return labels


def label_args(labels: Mapping[str, str]) -> list[str]:
    """``docker run`` arguments that set ``labels`` (``--label k=v`` each)."""
    return [arg for key, value in labels.items() for arg in ("--label", f"{key}={value}")]


@functools.cache
def _labelling_client_class() -> type:
    """``docker.DockerClient`` whose created containers carry its ``takeover_labels`` and stop at once
    (:data:`STOP_SIGNAL`) (see :func:`docker_client`). Made on first use: the docker
    package takes half a second to import, which commands that never use Docker should not pay."""
    import docker
    from docker.models.containers import ContainerCollection

    class LabelledContainers(ContainerCollection):
        def create(self, image, command=None, **kwargs):
            kwargs["labels"] = {**self.client.takeover_labels, **(kwargs.get("labels") or {})}
            if self.client.takeover_environment:
                kwargs["environment"] = {**_as_mapping(kwargs.get("environment")), **self.client.takeover_environment}
            kwargs.setdefault("stop_signal", STOP_SIGNAL)
            container = super().create(image, command, **kwargs)
            self.client.created.append(container.id)
            self.client.container_networks[container.id] = container_has_network(self.client, container.id)
            self.client.container_images[container.id] = container.attrs.get("Image")
            return container

    class LabellingClient(docker.DockerClient):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.takeover_labels: dict[str, str] = {}
            self.takeover_environment: dict[str, str] = {}
            self.created: list[str] = []
            self.container_networks: dict[str, bool | None] = {}
            self.container_images: dict[str, str | None] = {}

        @property
        def containers(self) -> ContainerCollection:
            return LabelledContainers(client=self)

    return LabellingClient


def _as_mapping(environment: Any) -> dict[str, str]:
    """docker-py's ``environment`` (a dict, or a list of ``NAME=value``) as a dict."""
    if not environment:
        return {}
    if isinstance(environment, Mapping):
        return dict(environment)
    return dict(item.split("=", 1) if "=" in item else (item, "") for item in environment)


def docker_client(labels: Mapping[str, str] | None = None,
                  environment: Mapping[str, str] | None = None) -> docker.DockerClient:
    """A client of the daemon ``DOCKER_HOST`` (or the default socket) names, whose created containers carry
    ``labels``, have the variables ``environment`` (every ``docker exec`` in them inherits them: a grading's
    ``PYTHONHASHSEED``) and stop at once (:data:`STOP_SIGNAL`); its ``created`` lists their ids, in order, and
    ``container_networks`` and ``container_images`` say, by id, whether each had a network (:func:`container_has_network`)
    and which image (content id) it was made from, measured when it was created.

    Raises:
        EnvironmentUnavailable: no daemon answers (docker's reason in the message).
    """
    import docker.errors

    try:
        client = _labelling_client_class().from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise EnvironmentUnavailable(f"no Docker daemon answers ({_reason(exc)}); start Docker, or use the local "
                                     "backend") from None
    client.takeover_labels = dict(labels or {})
    client.takeover_environment = dict(environment or {})
    return client


def _reason(exc: Exception) -> str:
    """docker's own words for ``exc``, on one line."""
    text = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return " ".join(str(text).split())[:300]


class ImageIdentity(BaseModel):
    """An image as the daemon holds it.

    Attributes:
        name: the name asked for (a tag).
        id: the content id (``sha256:<64 hex>``): the same tag pointing at other content has another id.
        repo_digests: the registry digests it was pulled under (empty for an image built or imported here).
        labels: its labels (the tests' stand-in images say what they are in ``org.takeover.stand-in``).
        size_bytes: its size.
    """

    name: str
    id: str
    repo_digests: list[str] = []
    labels: dict[str, str] = {}
    size_bytes: int | None = None


def image_identity(name: str, client: docker.DockerClient | None = None, *, pull: bool = False) -> ImageIdentity:
    """The image ``name`` in the daemon; with ``pull``, pulled first when absent (and kept).

    Raises:
        EnvironmentUnavailable: no daemon answers, or the image is absent (and cannot be pulled): one line
            naming the image, docker's reason and what to do.
    """
    import docker.errors

    client = client or docker_client()
    try:
        image = client.images.get(name)
    except docker.errors.ImageNotFound as missing:
        if not pull:
            raise EnvironmentUnavailable(f"image {name} is not in the Docker daemon ({_reason(missing)}); pull it "
                                         f"(docker pull {name}) or build it") from None
        try:
            image = client.images.pull(name)
        except docker.errors.DockerException as exc:
            raise EnvironmentUnavailable(f"image {name} is not in the Docker daemon and cannot be pulled "
                                         f"({_reason(exc)}); pull it on a machine that reaches the registry "
                                         f"(docker pull {name}) or build it") from None
    except docker.errors.DockerException as exc:
        raise EnvironmentUnavailable(f"cannot inspect image {name} ({_reason(exc)})") from None
    attrs = image.attrs or {}
    return ImageIdentity(name=name, id=image.id, repo_digests=list(attrs.get("RepoDigests") or []),
                         labels=dict((attrs.get("Config") or {}).get("Labels") or {}), size_bytes=attrs.get("Size"))


def container_has_network(client: docker.DockerClient, container_id: str) -> bool | None:
    """Whether the container can reach beyond itself, started or not: it shares the host's network, or it
    is on a network that gives containers an address (the daemon's default ``bridge`` for the default mode;
    a daemon run with ``--bridge=none`` has none). None when the container is gone."""
    import docker.errors

    try:
        attrs = client.api.inspect_container(container_id)
    except docker.errors.NotFound:
        return None
    mode = (attrs.get("HostConfig") or {}).get("NetworkMode") or "default"
    if mode == "host":
        return True
    if mode == "none" or mode.startswith("container:"):
        return False
    names = ["bridge"] if mode == "default" else [mode]
    names += list((attrs.get("NetworkSettings") or {}).get("Networks") or {})
    for name in dict.fromkeys(names):
        try:
            if client.api.inspect_network(name).get("Driver") not in (None, "", "null", "none"):
                return True
        except docker.errors.NotFound:
            continue
    return False


def process_started(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks after boot (field 22 of ``/proc/<pid>/stat``), or None
    where there is no ``/proc`` or no such process. Two processes with one pid never share it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the command name in parentheses may hold spaces
    return fields[19] if len(fields) > 19 else None


def _alive(pid: int, started: str | None = None) -> bool:
    """Process ``pid`` runs and, when ``started`` is known, is the one that started then (not a later process
    that got the same pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if started:
        now = process_started(pid)
        return now is None or now == started
    return True


def _inside(path: str, folder: Path) -> bool:
    try:
        Path(path).relative_to(folder)
    except ValueError:
        return False
    return True


class StaleContainer(BaseModel):
    """A container takeover started whose process is gone (see :func:`stale_containers`)."""

    id: str
    name: str
    purpose: str | None = None
    out_dir: str | None = None
    pid: int | None = None


def stale_containers(out_dir: Path | str | None = None, client: docker.DockerClient | None = None) -> list[StaleContainer]:
    """takeover's containers on this daemon started on this host by a process that no longer runs (its pid is
    gone, or now names a process started later: :data:`PID_STARTED`), running or not; only those whose output
    folder is ``out_dir`` or inside it when it is given.

    One listing call, no inspection of each container: other units and other studies on the same daemon start
    and remove their containers all the time, and one removed between the listing and its inspection must not
    fail this scan (see the comment in the code)."""
    client = client or docker_client()
    folder = Path(out_dir).resolve() if out_dir is not None else None
    host = socket.gethostname()
    found = []
    # The cause of the lost unit ("404 No such container" in a docker takeover run): this scan used docker-py's
    # ``containers.list()``, which lists the ids and then inspects each container (``GET /containers/<id>/json``)
    # and raises NotFound for one removed in between. Every agent run and every docker grading scans at its start,
    # and the harness removes each grading's container at its end (agent containers go with ``--rm``), so a unit
    # starting while another unit of the study, or another study or test session on the same daemon, removed one
    # of its containers failed with the other container's 404. The listing call returns the labels itself.
    for row in client.api.containers(all=True, filters={"label": [f"{OWNER}={OWNER_VALUE}", f"{HOST}={host}"]}):
        labels: dict[str, Any] = row.get("Labels") or {}
        pid = int(labels[PID]) if str(labels.get(PID, "")).isdigit() else None
        if labels.get(HOST) != host or pid is None or _alive(pid, labels.get(PID_STARTED)):
            continue
        if folder is not None and not _inside(labels.get(OUT_DIR, ""), folder):
            continue
        names = row.get("Names") or [row["Id"][:12]]
        found.append(StaleContainer(id=row["Id"], name=names[0].lstrip("/"), purpose=labels.get(PURPOSE),
                                    out_dir=labels.get(OUT_DIR), pid=pid))
    return found


def remove_stale_containers(out_dir: Path | str | None = None,
                            client: docker.DockerClient | None = None) -> list[StaleContainer]:
    """Remove (kill first) the containers :func:`stale_containers` finds; returns them. A container that
    vanished meanwhile is skipped."""
    import docker.errors

    client = client or docker_client()
    removed = []
    for stale in stale_containers(out_dir, client):
        try:
            client.api.remove_container(stale.id, force=True)
        except docker.errors.NotFound:
            continue
        except docker.errors.APIError as exc:  # another cleanup is removing it right now
            if exc.status_code == 409:
                continue
            raise
        removed.append(stale)
    return removed


def copy_from_image(image: str, path: str, dest: Path | str, labels: Mapping[str, str], *,
                    timeout: float = 1800.0) -> None:
    """Copy the folder ``path`` of ``image`` to the new folder ``dest``, with its modes, through a container
    that is created (with ``labels``), never started, and removed.

    Raises:
        EnvironmentUnavailable: the image is absent or the copy fails (one line with docker's reason).
        FileExistsError: ``dest`` exists.
    """
    dest = Path(dest)
    if dest.exists():
        raise FileExistsError(f"{dest} exists")
    dest.parent.mkdir(parents=True, exist_ok=True)
    created = _docker_cli(["create", *label_args(labels), image, "true"], timeout=300,
                          what=f"cannot create a container of image {image}")
    container = created.strip()
    try:
        _docker_cli(["cp", f"{container}:{path.rstrip('/')}/.", str(dest)], timeout=timeout,
                    what=f"cannot copy {path} out of image {image}")
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False, timeout=300)


def _docker_cli(args: list[str], *, timeout: float, what: str) -> str:
    """stdout of ``docker ARGS``. Raises EnvironmentUnavailable with ``what`` and docker's reason."""
    try:
        done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentUnavailable(f"{what} ({_reason(exc)})") from None
    if done.returncode != 0:
        raise EnvironmentUnavailable(f"{what} ({_reason(Exception(done.stderr.strip() or done.stdout.strip()))})")
    return done.stdout
