"""A task's official SWE-bench image: its name, and swebench's own ``TestSpec`` made without the network.

swebench's ``make_test_spec`` downloads the task's ``requirements.txt`` or ``environment.yml`` from GitHub
(``get_requirements``, ``get_environment_yml``) at every call, because the environment script it writes
holds their text, even when the instance image, which already holds that environment, is all a grading
uses. That is 298 of SWE-bench Verified's 500 rows (every django row). :func:`official_test_spec` makes the
same ``TestSpec`` with those files read from a repository mirror instead (``git show <commit>:<path>`` in
the bare repository of :class:`~takeover.sources.repos.RepoSource`) at the commit swebench would fetch:
``environment_setup_commit`` when the row has one, else ``base_commit``. The repository and eval scripts
come from swebench's own functions; the environment script follows swebench's ``make_env_script_list_py``
step by step, with the file text read, and cleaned, as ``get_requirements`` reads and cleans it
(:func:`takeover.environments.requirements.read_requirements`). Without a mirror, and with the network
allowed, swebench downloads the files itself; a failed download is one line naming the files and the cause.

That is swebench 4.1's ``TestSpec``. swebench 5.x has neither the per-repository specifications nor those
scripts: its ``TestSpec`` is made from the row's ``image``, ``eval_script``, ``log_parser`` and
``eval_type`` (:func:`takeover.environments.row_grading.row_grading` derives those a row lacks), and its
``run_instance`` only runs an image that exists or can be pulled. The specifications themselves come from
the table generated from swebench 4.1 (:mod:`takeover.environments.swebench_specs`) under either version.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from takeover._util import harness_version
from takeover._util.containers import ImageIdentity, copy_from_image, image_identity
from takeover.environments import swebench_specs
from takeover.environments.requirements import read_repo_file, read_requirements
from takeover.errors import EnvironmentUnavailable, RepositoryUnavailable
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

if TYPE_CHECKING:
    from swebench.harness.test_spec.test_spec import TestSpec

#: The namespace of the official images on Docker Hub (``swebench/sweb.eval.x86_64.<instance>:latest``).
NAMESPACE = "swebench"
#: The conda environment and repository folder of SWE-bench's images (``/testbed``).
ENV_NAME = "testbed"
_HEREDOC = "EOF_59812759871"  # swebench's delimiter of the files its environment script writes


def swebench_instance(task: SourceTask) -> dict[str, Any]:
    """``task`` as the dataset row swebench's harness reads: its fields, with unset ones left out
    (swebench reads ``environment_setup_commit`` whenever the key exists, even when it is null)."""
    return task.model_dump(mode="json", exclude_none=True)


def requirements_commit(task: SourceTask) -> str:
    """The commit swebench reads ``task``'s requirement files at: ``environment_setup_commit``, else
    ``base_commit`` (``get_requirements``, ``get_environment_yml``)."""
    return task.environment_setup_commit or task.base_commit


def instance_image_name(instance_id: str, *, namespace: str | None = NAMESPACE, tag: str = "latest",
                        arch: str = "x86_64") -> str:
    """The name of the instance image, by swebench's rule (``TestSpec.instance_image_key``):
    ``swebench/sweb.eval.x86_64.pallets_1776_flask-5014:latest`` (``__`` becomes ``_1776_`` in a namespace);
    without a namespace, the name of a locally built image (``sweb.eval.x86_64.pallets__flask-5014:latest``)."""
    key = f"sweb.eval.{arch}.{instance_id.lower()}:{tag}"
    return f"{namespace}/{key}".replace("__", "_1776_") if namespace is not None else key


def _swebench_specs(task: SourceTask) -> dict[str, Any]:
    specs = swebench_specs.repo_version_specs(task.repo, task.version)
    if specs is None:
        raise EnvironmentUnavailable(
            f"{task.instance_id}: {task.repo} {task.version} has no official SWE-bench image (it is not in "
            "swebench's specifications); use the local backend with takeover_env_spec or --backend-option spec_file=FILE")
    return specs


def _mirror_text(task: SourceTask, source: RepoSource, kind: str, paths: list[str]) -> tuple[str, str]:
    """``(path, text)`` of the first of ``paths`` in the mirror's ``task.repo`` at the requirements commit;
    ``kind`` is ``requirements.txt`` (text read and cleaned as swebench's ``get_requirements``) or
    ``environment.yml`` (the raw text)."""
    commit = requirements_commit(task)
    try:
        bare = source.bare_repo(task.repo, commit)
    except RepositoryUnavailable as exc:
        raise EnvironmentUnavailable(f"cannot read {kind} of {task.instance_id} ({', '.join(paths)}) at {commit[:12]}: "
                                     f"{' '.join(str(exc).split())}") from None
    if kind == "requirements.txt":
        try:
            return read_requirements(bare, commit, paths)
        except EnvironmentUnavailable:
            pass
    else:
        for rel in paths:
            text = read_repo_file(bare, commit, rel)
            if text is not None:
                return rel, text
    raise EnvironmentUnavailable(f"cannot read {kind} of {task.instance_id}: none of {', '.join(paths)} exists at "
                                 f"{commit[:12]} in {bare}")


def _environment_yml(text: str) -> str:
    """swebench's ``get_environment_yml`` on ``text``: the environment renamed ``testbed``, then
    ``clean_environment_yml``."""
    lines = [f"name: {ENV_NAME}" if line.startswith("name:") else line for line in text.split("\n")]
    return swebench_specs.clean_environment_yml("\n".join(lines))


def env_script_list(task: SourceTask, source: RepoSource) -> list[str]:
    """The commands of the environment image's ``setup_env.sh``, as swebench's ``make_env_script_list_py``
    writes them, with the requirement files read from ``source``'s mirror (see the module docstring).

    Raises:
        EnvironmentUnavailable: no swebench specification for the task, or a file or its repository is missing
            (one line naming the files, the commit and the folder looked at).
    """
    specs = _swebench_specs(task)
    commands = ["source /opt/miniconda3/bin/activate"]
    pkgs = specs.get("packages", "")
    python = specs["python"]
    if pkgs == "requirements.txt":
        commands.append(f"conda create -n {ENV_NAME} python={python} -y")
        _, reqs = _mirror_text(task, source, pkgs, swebench_specs.requirements_paths(task.repo))
        path = "$HOME/requirements.txt"
        commands += [f"cat <<'{_HEREDOC}' > {path}\n{reqs}\n{_HEREDOC}",
                     f"conda activate {ENV_NAME} && python -m pip install -r {path}", f"rm {path}"]
    elif pkgs == "environment.yml":
        _, text = _mirror_text(task, source, pkgs, swebench_specs.environment_yml_paths(task.repo))
        commands.append(f"cat <<'{_HEREDOC}' > environment.yml\n{_environment_yml(text)}\n{_HEREDOC}")
        if specs.get("no_use_env"):
            commands += [f"conda create -c conda-forge -n {ENV_NAME} python={python} -y",
                         "conda env update -f environment.yml"]
        else:
            commands += ["conda env create --file environment.yml",
                         f"conda activate {ENV_NAME} && conda install python={python} -y"]
        commands.append("rm environment.yml")
    else:
        commands.append(f"conda create -n {ENV_NAME} python={python} {pkgs} -y")
    commands.append(f"conda activate {ENV_NAME}")
    if "pip_packages" in specs:
        commands.append(f"python -m pip install {' '.join(specs['pip_packages'])}")
    return commands


def _downloaded_test_spec(task: SourceTask, namespace: str | None) -> TestSpec:
    """swebench's ``make_test_spec`` itself (it downloads the requirement files from GitHub).

    Raises:
        EnvironmentUnavailable: the download failed (one line: the files, the commit, the cause).
    """
    import requests  # a dependency of swebench's download
    from swebench.harness.test_spec.test_spec import make_test_spec

    try:
        return make_test_spec(swebench_instance(task), namespace=namespace)
    except (requests.RequestException, ValueError) as exc:
        paths = swebench_specs.requirements_paths(task.repo) + swebench_specs.environment_yml_paths(task.repo)
        cause = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise EnvironmentUnavailable(
            f"swebench could not download {task.repo}'s {' or '.join(paths)} at {requirements_commit(task)[:12]} "
            f"from GitHub ({cause}); pass --mirror DIR with a bare clone {task.repo_slug}.git to read it from "
            "there") from None


@dataclass(frozen=True)
class ImageScripts:
    """The scripts of a task's instance image as swebench 4.1's ``TestSpec`` holds them, where swebench 5.x
    (which builds no images) is installed: the same fields and script properties, made from the table of
    4.1's specifications (:mod:`takeover.environments.swebench_specs`).

    Attributes:
        repo_script_list, env_script_list, eval_script_list: the commands of ``setup_repo.sh``,
            ``setup_env.sh`` and ``eval.sh``.
        namespace: ``swebench`` for the official images' names, None for a local build's.
    """

    instance_id: str
    repo: str
    version: str
    repo_script_list: list[str]
    env_script_list: list[str]
    eval_script_list: list[str]
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    namespace: str | None = NAMESPACE

    @property
    def instance_image_key(self) -> str:
        """:func:`instance_image_name` of the instance under :attr:`namespace`."""
        return instance_image_name(self.instance_id, namespace=self.namespace)

    @property
    def setup_env_script(self) -> str:
        """``setup_env.sh``: ``#!/bin/bash``, ``set -euxo pipefail``, the commands."""
        return "\n".join(["#!/bin/bash", "set -euxo pipefail", *self.env_script_list]) + "\n"

    @property
    def install_repo_script(self) -> str:
        """``setup_repo.sh``: ``#!/bin/bash``, ``set -euxo pipefail``, the commands."""
        return "\n".join(["#!/bin/bash", "set -euxo pipefail", *self.repo_script_list]) + "\n"

    @property
    def eval_script(self) -> str:
        """``eval.sh``: ``#!/bin/bash``, ``set -uxo pipefail``, the commands."""
        return "\n".join(["#!/bin/bash", "set -uxo pipefail", *self.eval_script_list]) + "\n"


def official_test_spec(task: SourceTask, repo_source: RepoSource | None = None, *,
                       namespace: str | None = NAMESPACE) -> TestSpec | ImageScripts:
    """swebench's ``TestSpec`` of ``task`` (scripts, image names, tests), equal to what ``make_test_spec``
    returns, made without the network when ``repo_source`` has a mirror or is offline. Where swebench 5.x is
    installed, the same scripts as :class:`ImageScripts` (5.x has no such ``TestSpec``).

    Args:
        repo_source: where the requirement files are read (a mirror, or the clone cache when offline);
            with neither, swebench 4.1 downloads them from GitHub.
        namespace: ``swebench`` for the official images on Docker Hub, None for images built locally.

    Raises:
        EnvironmentUnavailable: no swebench specification for the task, or its requirement files cannot be
            read (one line naming the files and the cause).
    """
    source = repo_source or RepoSource()
    specs = _swebench_specs(task)
    if not harness_version.keeps_repo_specs():
        return ImageScripts(
            instance_id=task.instance_id, repo=task.repo, version=task.version or "",
            repo_script_list=swebench_specs.repo_script_list(task.repo, task.version or "", task.base_commit),
            env_script_list=env_script_list(task, source),
            eval_script_list=swebench_specs.eval_script_list(task.repo, task.version or "", task.base_commit,
                                                             task.test_patch),
            FAIL_TO_PASS=list(task.FAIL_TO_PASS), PASS_TO_PASS=list(task.PASS_TO_PASS), namespace=namespace)
    from swebench.harness.constants import MAP_REPO_TO_EXT
    from swebench.harness.test_spec.create_scripts import make_eval_script_list, make_repo_script_list
    from swebench.harness.test_spec.test_spec import TestSpec

    if source.mirror is None and not source.offline:
        return _downloaded_test_spec(task, namespace)
    instance = swebench_instance(task)
    return TestSpec(
        instance_id=task.instance_id, repo=task.repo, version=task.version,
        repo_script_list=make_repo_script_list(specs, task.repo, f"/{ENV_NAME}", task.base_commit, ENV_NAME),
        eval_script_list=make_eval_script_list(instance, specs, ENV_NAME, f"/{ENV_NAME}", task.base_commit,
                                               task.test_patch),
        env_script_list=env_script_list(task, source), arch="x86_64", FAIL_TO_PASS=list(task.FAIL_TO_PASS),
        PASS_TO_PASS=list(task.PASS_TO_PASS), language=MAP_REPO_TO_EXT[task.repo],
        docker_specs=specs.get("docker_specs", {}), namespace=namespace)


class ImageWorkspace(BaseModel):
    """A task's repository as its image holds it, copied to the host.

    Attributes:
        path: the folder (a git repository with its own objects: no alternates).
        image: the image it was copied from (name and content id).
        head: the image's ``HEAD`` commit: ``base_commit`` plus SWE-bench's setup commit (the environment's
            edits, committed as the images commit them).
        tree: the tree of ``head`` (the run's starting state, docs/protocol.md section 5.2).
    """

    path: Path
    image: ImageIdentity
    head: str
    tree: str


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", f"safe.directory={folder}", *args], cwd=folder, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise EnvironmentUnavailable(f"git {' '.join(args)} failed in {folder}: {done.stderr.strip()[:300]}")
    return done.stdout.strip()


def workspace_from_image(instance_id: str, base_commit: str, dest: Path | str, labels: Mapping[str, str], *,
                         image: str | None = None, pull: bool = True) -> ImageWorkspace:
    """Copy ``/testbed`` of the official image of ``instance_id`` (or ``image``) to the new folder ``dest``:
    the repository exactly as the image holds it (its git history, SWE-bench's setup commit, the files its
    install built).

    The copy is made from the image's content id, so it is the content recorded. Its ``HEAD`` must be
    ``base_commit`` or a commit on top of it.

    Args:
        labels: the labels of the short-lived container the copy goes through
            (:func:`takeover._util.containers.container_labels`).
        pull: pull the image when the daemon lacks it (it is kept).

    Raises:
        EnvironmentUnavailable: no daemon, the image is missing (and cannot be pulled), the copy fails, or
            its repository is not at ``base_commit`` (one line each, naming the image).
        FileExistsError: ``dest`` exists.
    """
    found = image_identity(image or instance_image_name(instance_id), pull=pull)
    dest = Path(dest)
    if dest.exists():
        raise FileExistsError(f"{dest} exists")
    copy_from_image(found.id, f"/{ENV_NAME}", dest, labels)
    head = _git(dest, "rev-parse", "HEAD")
    ancestor = subprocess.run(["git", "-c", f"safe.directory={dest}", "merge-base", "--is-ancestor", base_commit, head],
                              cwd=dest, capture_output=True, check=False)
    if ancestor.returncode != 0:
        raise EnvironmentUnavailable(f"image {found.name} ({found.id[:19]}): /{ENV_NAME} is at {head[:12]}, which is "
                                     f"not base_commit {base_commit[:12]} of {instance_id} or on top of it")
    return ImageWorkspace(path=dest, image=found, head=head, tree=_git(dest, "rev-parse", "HEAD^{tree}"))
