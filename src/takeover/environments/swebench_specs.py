"""SWE-bench's per-repository install specifications, as data: the table made from swebench 4.1.

swebench 4.1 keeps, per (repository, version), how to install and test each SWE-bench repository
(``MAP_REPO_VERSION_TO_SPECS`` with ``MAP_REPO_TO_INSTALL``, the requirement and ``environment.yml`` paths,
the log parser per repository) and the rules that turn a dataset row into its eval script
(``get_test_directives``, ``make_eval_script_list_py``). swebench 5.x dropped them: its rows carry their own
``image``, ``eval_script``, ``log_parser`` and ``eval_type``. takeover's environments need them under either
version, so they are read here from ``swebench_4_1_specs.json``, which ``benchmarks/make_swebench_specs.py``
writes from the swebench 4.1 distribution (MIT license; the file states its source, copyright and license).
That file is the one place to update them.

The functions below follow swebench 4.1's own rules step by step (named in each docstring);
``tests/test_swebench_specs.py`` checks them against swebench 4.1 where it is installed.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

#: The table written by ``benchmarks/make_swebench_specs.py`` from the swebench 4.1 distribution.
TABLE = Path(__file__).with_name("swebench_4_1_specs.json")
#: The conda environment and repository folder of SWE-bench's images (``/testbed``).
ENV_NAME = "testbed"
#: SWE-bench's marker lines around the test output (the same in 4.1 and 5.x).
START_TEST_OUTPUT = ">>>>> Start Test Output"
END_TEST_OUTPUT = ">>>>> End Test Output"
#: The here-document delimiter of swebench's eval scripts (``make_eval_script_list_py``).
_EVAL_HEREDOC = "EOF_114329324912"


@cache
def specs_table() -> dict[str, Any]:
    """The whole table (``source``, ``license``, ``specs``, ``install``, ``requirements_paths``,
    ``environment_yml_paths``, ``log_parsers``, ``non_test_extensions``, ``replaced_requirements``,
    ``fail_only_repos``, ``docker_specs_default``)."""
    return json.loads(TABLE.read_text(encoding="utf-8"))


def repo_version_specs(repo: str | None, version: str | None) -> dict[str, Any] | None:
    """``MAP_REPO_VERSION_TO_SPECS[repo][version]`` of swebench 4.1 (python, packages, pip_packages,
    pre_install, install, eval_commands, test_cmd, ...), None when the table has no such pair."""
    if repo is None or version is None:
        return None
    return specs_table()["specs"].get(repo, {}).get(version)


def repo_versions(repo: str) -> list[str]:
    """The versions of ``repo`` the table specifies, in the table's order."""
    return list(specs_table()["specs"].get(repo, {}))


def install_command(repo: str) -> str | None:
    """``MAP_REPO_TO_INSTALL[repo]`` (an install run before the spec's own), None for most repositories."""
    return specs_table()["install"].get(repo)


def requirements_paths(repo: str) -> list[str]:
    """``MAP_REPO_TO_REQS_PATHS[repo]``: where the requirements file may be, first existing one used."""
    return list(specs_table()["requirements_paths"].get(repo, []))


def environment_yml_paths(repo: str) -> list[str]:
    """``MAP_REPO_TO_ENV_YML_PATHS[repo]``: where the conda ``environment.yml`` may be."""
    return list(specs_table()["environment_yml_paths"].get(repo, []))


def parser_name(repo: str | None) -> str | None:
    """The name of ``repo``'s log parser in ``MAP_REPO_TO_PARSER_PY`` (``parse_log_django``), as swebench 5.x
    rows carry it in ``log_parser``; None for a repository swebench does not know."""
    return specs_table()["log_parsers"].get(repo) if repo else None


def eval_type(repo: str | None) -> str:
    """``fail_only`` for swebench's ``FAIL_ONLY_REPOS`` (their parsers record failures only), else
    ``pass_and_fail`` (the values of swebench's ``EvalType``)."""
    return "fail_only" if repo in specs_table()["fail_only_repos"] else "pass_and_fail"


def clean_requirements(text: str) -> str:
    """swebench 4.1 ``clean_requirements``: each package of ``REPLACE_REQ_PACKAGES`` (yanked from PyPI) is
    replaced by its successor, without the version, or removed when it has none."""
    for old, new in specs_table()["replaced_requirements"]:
        if new is None:
            text = re.sub(rf"^{re.escape(old)}([<>=!~]=?.*|$)\n?", "", text, flags=re.MULTILINE)
        else:
            text = re.sub(rf"^{re.escape(old)}([<>=!~]=?.*|$)", new, text, flags=re.MULTILINE)
    return text


def clean_environment_yml(text: str) -> str:
    """swebench 4.1 ``clean_environment_yml``: :func:`clean_requirements`'s replacements in the ``pip:``
    section of a conda ``environment.yml`` only."""
    m = re.search(r"^(\s*-\s*pip\s*:\s*\n)", text, flags=re.MULTILINE)
    if not m:
        return text
    indent = len(m.group(1)) - len(m.group(1).lstrip())
    start = end = m.end()
    after = text[start:].split("\n")
    for i, line in enumerate(after):
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            end = start + sum(len(x) + 1 for x in after[:i])
            break
    else:
        end = len(text)
    pip = text[start:end]
    for old, new in specs_table()["replaced_requirements"]:
        if new is None:
            pip = re.sub(rf"^(\s*-\s*){re.escape(old)}([<>~]=?.*|$)\n?", "", pip, flags=re.MULTILINE)
        else:
            pip = re.sub(rf"^(\s*-\s*){re.escape(old)}([<>=!~]=?.*|$)", rf"\g<1>{new}", pip, flags=re.MULTILINE)
    return text[:start] + pip + text[end:]


def test_directives(repo: str, test_patch: str) -> list[str]:
    """swebench 4.1 ``get_test_directives``: the files of ``test_patch``'s ``diff --git`` headers without
    ``NON_TEST_EXTS``; for django/django the dotted module (``tests/`` and ``.py`` dropped)."""
    exts = specs_table()["non_test_extensions"]
    directives = [d for d in re.findall(r"diff --git a/.* b/(.*)", test_patch)
                  if not any(d.endswith(ext) for ext in exts)]
    if repo == "django/django":
        out = []
        for d in directives:
            d = d.removesuffix(".py")
            d = d.removeprefix("tests/")
            out.append(d.replace("/", "."))
        directives = out
    return directives


test_directives.__test__ = False  # not a pytest test despite the name


def modified_files(patch: str) -> list[str]:
    """swebench 4.1 ``get_modified_files``: the files ``patch`` changes that exist before it (new files are
    left out), repository-relative."""
    try:
        files = [f.source_file for f in PatchSet(patch) if f.source_file != "/dev/null"]
    except UnidiffParseError:
        files = []
    return [f[2:] for f in files if f.startswith("a/")]


def eval_script_list(repo: str, version: str, base_commit: str, test_patch: str) -> list[str]:
    """The commands of the eval script swebench 4.1 generates (``make_eval_script_list_py``): activate the
    environment, the spec's ``eval_commands``, git's record of the state, the spec's ``install``, reset the
    test files the test patch modifies, apply the test patch, the test command on :func:`test_directives`
    between the markers, reset the test files again.

    Raises:
        KeyError: the table has no specification of (repo, version).
    """
    specs = specs_table()["specs"][repo][version]
    testbed = f"/{ENV_NAME}"
    reset = f"git checkout {base_commit} {' '.join(modified_files(test_patch))}"
    lines = ["source /opt/miniconda3/bin/activate", f"conda activate {ENV_NAME}", f"cd {testbed}"]
    lines += list(specs.get("eval_commands", []))
    lines += [f"git config --global --add safe.directory {testbed}", f"cd {testbed}", "git status", "git show",
              f"git -c core.fileMode=false diff {base_commit}", "source /opt/miniconda3/bin/activate",
              f"conda activate {ENV_NAME}"]
    if "install" in specs:
        lines.append(specs["install"])
    lines += [reset, f"git apply -v - <<'{_EVAL_HEREDOC}'\n{test_patch}\n{_EVAL_HEREDOC}",
              f": '{START_TEST_OUTPUT}'", " ".join([specs["test_cmd"], *test_directives(repo, test_patch)]),
              f": '{END_TEST_OUTPUT}'", reset]
    return lines


def repo_script_list(repo: str, version: str, base_commit: str) -> list[str]:
    """The commands of an instance image's ``setup_repo.sh`` as swebench 4.1 writes them
    (``make_repo_script_list_py``): clone the repository (on the branch ``REPO_BASE_COMMIT_BRANCH`` names
    for a few commits) into ``/testbed``, reset it to ``base_commit``, drop the remote and every later tag
    and commit, activate the environment, run ``MAP_REPO_TO_INSTALL``, the spec's ``pre_install`` and
    ``install``, and commit the result as ``SWE-bench``.

    Raises:
        KeyError: the table has no specification of (repo, version).
    """
    specs = specs_table()["specs"][repo][version]
    testbed = f"/{ENV_NAME}"
    branch = specs_table()["base_commit_branches"].get(repo, {}).get(base_commit, "")
    branch = f"--branch {branch}" if branch else ""
    lines = [
        f"git clone -o origin {branch} --single-branch https://github.com/{repo} {testbed}",
        f"chmod -R 777 {testbed}", f"cd {testbed}", f"git reset --hard {base_commit}", "git remote remove origin",
        f"TARGET_TIMESTAMP=$(git show -s --format=%ci {base_commit})",
        ('git tag -l | while read tag; do TAG_COMMIT=$(git rev-list -n 1 "$tag"); TAG_TIME=$(git show -s '
         '--format=%ci "$TAG_COMMIT"); if [[ "$TAG_TIME" > "$TARGET_TIMESTAMP" ]]; then git tag -d "$tag"; fi; done'),
        "git reflog expire --expire=now --all", "git gc --prune=now --aggressive",
        "AFTER_TIMESTAMP=$(date -d \"$TARGET_TIMESTAMP + 1 second\" '+%Y-%m-%d %H:%M:%S')",
        'COMMIT_COUNT=$(git log --oneline --all --since="$AFTER_TIMESTAMP" | wc -l)',
        '[ "$COMMIT_COUNT" -eq 0 ] || exit 1',
        "source /opt/miniconda3/bin/activate", f"conda activate {ENV_NAME}",
        'echo "Current environment: $CONDA_DEFAULT_ENV"',
    ]
    if install_command(repo):
        lines.append(install_command(repo))
    lines += list(specs.get("pre_install", []))
    if "install" in specs:
        lines.append(specs["install"])
    return lines + ["git config --global user.email setup@swebench.config", "git config --global user.name SWE-bench",
                    "git commit --allow-empty -am SWE-bench"]


def eval_script(repo: str, version: str, base_commit: str, test_patch: str) -> str:
    """:func:`eval_script_list` as the script text of a swebench 5.x row's ``eval_script`` (``#!/bin/bash``,
    ``set -uxo pipefail``, the commands, a final newline)."""
    return "\n".join(["#!/bin/bash", "set -uxo pipefail",
                      *eval_script_list(repo, version, base_commit, test_patch)]) + "\n"
