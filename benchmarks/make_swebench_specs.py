"""Write the table of SWE-bench's per-repository install specifications, read from an installed swebench 4.1.

    python benchmarks/make_swebench_specs.py [OUT]   # default: src/takeover/environments/swebench_4_1_specs.json

swebench 5.x no longer ships ``MAP_REPO_VERSION_TO_SPECS`` and the tables beside it; the ``local`` grading
backend builds its environments from them, so takeover carries them as data
(:mod:`takeover.environments.swebench_specs` reads the file). This script is the one place that makes the
table: it imports swebench 4.1's constants (it refuses another version) and writes, for the Python
repositories (``MAP_REPO_TO_EXT[repo] == "py"``):

- ``specs``: ``MAP_REPO_VERSION_TO_SPECS[repo][version]`` as they are;
- ``install``, ``requirements_paths``, ``environment_yml_paths``: ``MAP_REPO_TO_INSTALL``,
  ``MAP_REPO_TO_REQS_PATHS``, ``MAP_REPO_TO_ENV_YML_PATHS``;
- ``log_parsers``: the parser each repository's entry of ``MAP_REPO_TO_PARSER_<LANGUAGE>`` names in
  ``log_parsers/*.py``, every language (read from the source with ``ast``: several names are one function,
  and the name is what swebench 5.x rows carry as ``log_parser``);
- ``non_test_extensions`` (``NON_TEST_EXTS``), ``replaced_requirements`` (``REPLACE_REQ_PACKAGES``),
  ``fail_only_repos`` (``FAIL_ONLY_REPOS``), ``docker_specs_default`` (``DEFAULT_DOCKER_SPECS``),
  ``base_commit_branches`` (``REPO_BASE_COMMIT_BRANCH``, the branch an image's clone takes for a commit);

with the distribution's name, version and license (MIT, with its copyright line). Run it again with a new
4.1.x to update the table; ``tests/test_swebench_specs.py`` checks the file against the installed 4.1.
"""

from __future__ import annotations

import ast
import json
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "src" / "takeover" / "environments" / "swebench_4_1_specs.json"


def parser_names(parsers_folder: Path) -> dict[str, str]:
    """``{repo: parser name}`` of the ``MAP_REPO_TO_PARSER_<LANGUAGE>`` dict literals in the modules of
    ``parsers_folder`` (swebench's ``harness/log_parsers``)."""
    out: dict[str, str] = {}
    for module in sorted(parsers_folder.glob("*.py")):
        for node in ast.parse(module.read_text(encoding="utf-8")).body:
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                    and any(getattr(t, "id", "").startswith("MAP_REPO_TO_PARSER_") for t in node.targets)):
                out.update({ast.literal_eval(k): v.id for k, v in zip(node.value.keys, node.value.values, strict=True)})
    if not out:
        raise SystemExit(f"{parsers_folder}: no MAP_REPO_TO_PARSER_* table")
    return out


def license_text(dist: metadata.Distribution) -> str:
    """The distribution's license file (``licenses/LICENSE`` in the wheel's metadata)."""
    for f in dist.files or []:
        if f.name.upper().startswith("LICENSE"):
            return f.read_text(encoding="utf-8")
    raise SystemExit("swebench's distribution has no license file")


def build_table() -> dict:
    """The table, from the installed swebench (4.1.x, else SystemExit)."""
    dist = metadata.distribution("swebench")
    if not dist.version.startswith("4.1"):
        raise SystemExit(f"swebench {dist.version} is installed; the table is made from swebench 4.1.x")
    from swebench.harness import constants as c
    from swebench.harness.test_spec import python as test_spec_python

    repos = sorted(r for r, ext in c.MAP_REPO_TO_EXT.items() if ext == "py" and r in c.MAP_REPO_VERSION_TO_SPECS)
    parsers_folder = Path(c.__file__).resolve().parents[1] / "log_parsers"
    licence = license_text(dist)
    return {
        "source": (f"swebench {dist.version} (PyPI), swebench/harness/constants/python.py and __init__.py, "
                   "swebench/harness/log_parsers/*.py, swebench/harness/test_spec/python.py"),
        "license": "MIT",
        "copyright": next(line for line in licence.splitlines() if line.startswith("Copyright")),
        "license_text": licence,
        "generated_by": "benchmarks/make_swebench_specs.py",
        "swebench_version": dist.version,
        "specs": {r: c.MAP_REPO_VERSION_TO_SPECS[r] for r in repos},
        "install": {r: c.MAP_REPO_TO_INSTALL[r] for r in repos if r in c.MAP_REPO_TO_INSTALL},
        "requirements_paths": {r: list(c.MAP_REPO_TO_REQS_PATHS[r]) for r in repos if r in c.MAP_REPO_TO_REQS_PATHS},
        "environment_yml_paths": {r: list(c.MAP_REPO_TO_ENV_YML_PATHS[r]) for r in repos
                                  if r in c.MAP_REPO_TO_ENV_YML_PATHS},
        "log_parsers": {r: n for r, n in sorted(parser_names(parsers_folder).items())},
        "non_test_extensions": list(c.NON_TEST_EXTS),
        "replaced_requirements": [list(p) for p in test_spec_python.REPLACE_REQ_PACKAGES],
        "fail_only_repos": sorted(c.FAIL_ONLY_REPOS),
        "docker_specs_default": dict(c.DEFAULT_DOCKER_SPECS),
        "base_commit_branches": {r: dict(c.REPO_BASE_COMMIT_BRANCH[r]) for r in repos if r in c.REPO_BASE_COMMIT_BRANCH},
    }


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else DEFAULT_OUT
    table = build_table()
    out.write_text(json.dumps(table, indent=1, sort_keys=False, ensure_ascii=False) + "\n", encoding="utf-8")
    n = sum(len(v) for v in table["specs"].values())
    print(f"{out}: {len(table['specs'])} repositories, {n} (repository, version) specifications "
          f"from swebench {table['swebench_version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
