"""Environments: specs from swebench, user specs, interpreter discovery, requirement files from the
checkout, and the shared-venv + workspace-venv build (offline: a wheel built here, uv with no index)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest
from conftest import git, make_repo
from prerequisites import requires

from takeover.environments import (
    MARKER,
    EnvSpec,
    env_spec_for,
    find_interpreter,
    load_spec_file,
    prepare_environment,
    read_requirements,
    spec_from_swebench,
)
from takeover.environments.conda import adapt_steps
from takeover.errors import EnvironmentUnavailable, InputError
from takeover.sources.tasks import SourceTask


def as_task(fields: dict) -> SourceTask:
    """A :class:`SourceTask` of ``fields``, with placeholders for the fields an environment does not read."""
    return SourceTask.model_validate({"instance_id": "me__lib-1", "base_commit": "", "problem_statement": "", **fields})


def test_spec_from_swebench_is_swebench_own_values():
    from takeover.environments.swebench_specs import repo_version_specs

    raw = repo_version_specs("sympy/sympy", "1.1")  # swebench 4.1's MAP_REPO_VERSION_TO_SPECS, as data
    spec = spec_from_swebench("sympy/sympy", "1.1")
    assert spec.python == raw["python"] == "3.9"
    assert spec.packages == raw["packages"].split()
    assert spec.pip_packages == raw["pip_packages"]
    assert spec.install == [raw["install"]]
    assert spec.test_cmd == raw["test_cmd"]
    flask = spec_from_swebench("pallets/flask", "2.3")
    assert flask.requirements_from == ["requirements/dev.txt"] and flask.packages == []


def test_django_system_steps_are_skipped_with_notes():
    spec = spec_from_swebench("django/django", "2.2")
    assert spec.pre_install == []
    assert any("apt-get" in n and n.startswith("skipped system step") for n in spec.notes)
    assert "export LANG=en_US.UTF-8" in spec.eval_commands
    assert not any("locale-gen" in c for c in spec.eval_commands)


def test_conda_steps_become_pip():
    notes: list[str] = []
    pkgs, shell = adapt_steps(["conda install -y -c conda-forge numpy=1.19 gxx_linux-64",
                                "source /opt/miniconda3/bin/activate", "sed -i 's/a/b/' setup.py"], notes)
    assert pkgs == ["numpy==1.19.*"]
    assert shell == ["sed -i 's/a/b/' setup.py"]
    assert any("gxx_linux-64" in n for n in notes)


def test_task_spec_field_and_spec_files(tmp_path):
    task = {"instance_id": "me__lib-1", "repo": "me/lib", "version": "2.0",
            "takeover_env_spec": {"python": None, "test_cmd": "pytest -rA", "log_parser": "pytest"}}
    spec = env_spec_for(as_task(task))
    assert spec.python is None and spec.repo == "me/lib" and not spec.needs_build
    js = tmp_path / "specs.json"
    js.write_text(json.dumps({"me/lib/2.0": {"python": "3.11", "test_cmd": "python -m pytest -rA"},
                              "me/lib": {"python": "3.10"}}))
    plain = {"instance_id": "me__lib-1", "repo": "me/lib", "version": "2.0"}
    assert env_spec_for(as_task(plain), js).python == "3.11"
    assert env_spec_for(as_task({**plain, "version": "9"}), js).python == "3.10"
    toml = tmp_path / "specs.toml"
    toml.write_text('["me/lib"]\npython = "3.12"\npackages = ["attrs"]\n')
    assert load_spec_file(toml)["me/lib"].packages == ["attrs"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"me/lib": {"pythn": "3.9"}}))
    with pytest.raises(InputError, match="key 'me/lib'"):
        load_spec_file(bad)
    with pytest.raises(EnvironmentUnavailable, match="takeover_env_spec"):
        env_spec_for(as_task({"instance_id": "x", "repo": "nobody/knows", "version": "1"}))


def test_find_interpreter_checks_the_version():
    py = find_interpreter(f"{sys.version_info.major}.{sys.version_info.minor}")
    out = subprocess.run([str(py), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == str(tuple(sys.version_info[:2]))
    with pytest.raises(EnvironmentUnavailable, match=r"no Python 2\.5 .*pyenv install 2\.5"):
        find_interpreter("2.5")


def test_requirements_are_read_from_the_checkout_at_the_commit(tmp_path):
    repo, sha = make_repo(tmp_path / "r", {
        "requirements/dev.txt": "# pinned\n-r tests.txt\n-e .\nblack==23.1.0\n",
        "requirements/tests.txt": "pytest==7.2.0\n# via dev\n",
    })
    (repo / "requirements" / "dev.txt").write_text("changed-after-commit\n")  # the commit wins
    used, text = read_requirements(repo, sha, ["requirements/dev.txt"])
    assert used == "requirements/dev.txt"
    assert [ln for ln in text.splitlines() if ln.strip()] == ["pytest==7.2.0", "black==23.1.0"]
    with pytest.raises(EnvironmentUnavailable, match="no requirements file"):
        read_requirements(repo, sha, ["nope.txt"])


def test_current_interpreter_needs_no_build(tmp_path):
    env = prepare_environment(as_task({"repo": "me/lib", "takeover_env_spec": {"python": None}}), tmp_path)
    assert env.python == Path(sys.executable) and env.cached and env.build_seconds == 0
    assert env.env_vars()["PATH"].split(":")[0] == str(Path(sys.executable).parent)


def _wheel(dest: Path, name: str = "shareddep", version: str = "1.0", init: str | None = None) -> Path:
    """A minimal pure-Python wheel with a console script (built by hand: no network, no build backend)."""
    files = {
        f"{name}/__init__.py": init or "VALUE = 42\n\ndef main():\n    print('shareddep says', VALUE)\n",
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{name}-{version}.dist-info/entry_points.txt": f"[console_scripts]\n{name} = {name}:main\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    files[f"{name}-{version}.dist-info/RECORD"] = "\n".join(record) + "\n"
    whl = dest / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return whl


# The "install" step stands in for "pip install -e .": it binds the workspace venv to this checkout.
_INSTALL = ("python -c \"import pathlib, sysconfig; "
            "pathlib.Path(sysconfig.get_paths()['purelib'], 'mylib_ws.pth').write_text(str(pathlib.Path.cwd()))\"")


@requires("uv")
def test_shared_venv_is_built_once_and_reused_by_workspaces(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_OFFLINE", "1")  # no network in tests: everything comes from the local wheel
    whl = _wheel(tmp_path)
    spec = {"python": None, "packages": [str(whl)], "install": [_INSTALL], "seed": False, "test_cmd": "pytest -rA"}
    repo, sha = make_repo(tmp_path / "src", {"mylib.py": "WHERE = __file__\n"})
    workspaces = []
    for name in ("ws1", "ws2"):
        ws = tmp_path / name
        git(tmp_path, "clone", "-q", str(repo), str(ws))
        workspaces.append(ws)
    task = {"instance_id": "me__mylib-1", "repo": "me/mylib", "base_commit": sha, "takeover_env_spec": spec}

    first = prepare_environment(as_task(task), workspaces[0])
    assert not first.cached and first.build_seconds > 0
    assert first.shared_venv == tmp_path / "cache" / "envs" / first.env_hash
    assert (first.shared_venv / MARKER).exists()
    second = prepare_environment(as_task(task), workspaces[1])
    assert second.cached and second.build_seconds == 0 and second.shared_venv == first.shared_venv
    assert first.venv != second.venv and second.venv == workspaces[1].resolve() / ".git" / "takeover" / "venv"

    for prepared, ws in zip((first, second), workspaces):
        env = prepared.env_vars()
        assert env["PATH"].split(":")[0] == str(prepared.venv / "bin")
        assert env["VIRTUAL_ENV"] == str(prepared.venv)
        probe = subprocess.run(["python", "-c", "import mylib, shareddep; print(mylib.WHERE); print(shareddep.VALUE)"],
                               cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
        assert probe.returncode == 0, probe.stderr
        where, value = probe.stdout.split()
        assert Path(where).parent == ws.resolve() and value == "42"  # own checkout, shared dependency
        script = subprocess.run(["shareddep"], env=env, capture_output=True, text=True, check=True)
        assert script.stdout.strip() == "shareddep says 42"
        assert (prepared.venv / "bin" / "shareddep").read_text().startswith(f"#!{prepared.venv}/bin/python")
        status = subprocess.run(["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True, check=True)
        assert status.stdout == ""  # the workspace venv lives in .git: the checkout stays clean


@requires("uv")
def test_concurrent_builders_build_once_and_failures_leave_no_marker(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    whl = _wheel(tmp_path)
    spec = {"python": None, "packages": [str(whl)], "seed": False}
    results = []

    def build(i: int) -> None:
        ws = tmp_path / f"w{i}"
        ws.mkdir()
        results.append(prepare_environment(as_task({"repo": "me/lib", "takeover_env_spec": spec}), ws))

    threads = [threading.Thread(target=build, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.cached for r in results) == [False, True, True]
    assert len({r.shared_venv for r in results}) == 1

    broken = {"python": None, "packages": [str(tmp_path / "missing-0.1-py3-none-any.whl")], "seed": False}
    ws = tmp_path / "wb"
    ws.mkdir()
    with pytest.raises(EnvironmentUnavailable, match="installing packages") as err:
        prepare_environment(as_task({"repo": "me/lib", "takeover_env_spec": broken}), ws)
    assert "full log" in str(err.value)
    envs = tmp_path / "cache" / "envs"
    assert not any((d / MARKER).exists() for d in envs.iterdir() if d.is_dir() and d != results[0].shared_venv)
    assert list(envs.glob("*.failed.log"))


def test_missing_interpreter_names_the_fix(tmp_path):
    with pytest.raises(EnvironmentUnavailable, match=r"pyenv install 2\.5"):
        prepare_environment(as_task({"repo": "me/lib", "takeover_env_spec": EnvSpec(python="2.5").model_dump()}),
                            tmp_path)


def test_failure_hints_name_what_is_missing():
    from takeover.environments import failure_hint

    assert "libxml/xmlversion.h" in failure_hint("src/x.c:1:10: fatal error: libxml/xmlversion.h: No such file or dir")
    assert "build-essential" in failure_hint("error: command 'gcc' failed: No such file or directory")
    assert failure_hint("ERROR: No matching distribution found for numpy==1.2.3").startswith("numpy==1.2.3 is not")
    assert failure_hint("all good") == ""


# A PEP 517 backend inside the project (no requirements: an isolated build needs no index). Its editable
# wheel holds a .pth naming the checkout, the metadata and a console script; like setuptools-scm it also
# writes a generated file into the checkout (and the config settings it was given into its egg-info), and with COMPILED set a stand-in for a compiled extension.
_BACKEND = '''
import base64, hashlib, json, os, pathlib, zipfile

NAME, VERSION = "mylib", "1.0"
DIST = f"{NAME}-{VERSION}.dist-info"


def _record(files):
    rows = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{path},sha256={digest},{len(data)}")
    rows.append(f"{DIST}/RECORD,,")
    return ("\\n".join(rows) + "\\n").encode()


def _wheel(directory, files):
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    files[f"{DIST}/RECORD"] = _record(files)
    with zipfile.ZipFile(os.path.join(directory, name), "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return name


def _metadata():
    return {
        f"{DIST}/METADATA": f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n".encode(),
        f"{DIST}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
        f"{DIST}/entry_points.txt": f"[console_scripts]\\nmylib-where = {NAME}:where\\n".encode(),
    }


def get_requires_for_build_editable(config_settings=None):
    return []


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    root = pathlib.Path.cwd()
    (root / NAME / "_version.py").write_text(f"version = {VERSION!r}\\n")
    (root / f"{NAME}.egg-info").mkdir(exist_ok=True)  # as setuptools does: a new top-level name
    (root / f"{NAME}.egg-info" / "PKG-INFO").write_text(f"Name: {NAME}\\n")
    (root / f"{NAME}.egg-info" / "config_settings.json").write_text(json.dumps(config_settings or {}))
    if os.environ.get("COMPILED") or (root / "COMPILED").exists():
        (root / NAME / "_speedups.so").write_bytes(b"\\x7fELF not really")
    files = _metadata()
    files[f"_{NAME}_editable.pth"] = f"{root}\\n".encode()
    return _wheel(wheel_directory, files)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = _metadata()
    for path in (pathlib.Path.cwd() / NAME).glob("*.py"):
        files[f"{NAME}/{path.name}"] = path.read_bytes()
    return _wheel(wheel_directory, files)
'''

_PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
_MYLIB = "import pathlib\n\ndef where():\n    print(pathlib.Path(__file__).resolve())\n"


def _editable_project(tmp_path: Path, *, compiled: bool = False, extra: dict[str, str] | None = None) -> tuple[Path, str]:
    files = {"pyproject.toml": _PYPROJECT, "backend.py": _BACKEND, "mylib/__init__.py": _MYLIB,
             ".gitignore": "mylib/_version.py\n*.so\n*.egg-info/\n", **(extra or {})}
    if compiled:
        files["COMPILED"] = "yes\n"
    return make_repo(tmp_path / "src", files)


def _workspace(tmp_path: Path, repo: Path, name: str) -> Path:
    ws = tmp_path / name
    git(tmp_path, "clone", "-q", str(repo), str(ws))
    return ws


def _where(prepared, cwd: Path) -> tuple[Path, Path]:
    """(mylib's file as imported, as the console script says) in the prepared environment."""
    env = prepared.env_vars()
    imported = subprocess.run(["python", "-c", "import mylib; print(mylib.__file__)"], cwd=cwd, env=env,
                              capture_output=True, text=True, check=True).stdout.strip()
    script = subprocess.run(["mylib-where"], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return Path(imported).resolve(), Path(script.stdout.strip())


@requires("uv")
def test_a_new_workspace_reuses_the_project_install_and_imports_its_own_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    whl = _wheel(tmp_path)
    spec = {"python": None, "packages": [str(whl)], "install": ["python -m pip install -e ."], "seed": False}
    repo, sha = _editable_project(tmp_path)
    task = as_task({"instance_id": "me__mylib-1", "repo": "me/mylib", "base_commit": sha, "takeover_env_spec": spec})
    ws1, ws2 = _workspace(tmp_path, repo, "ws1"), _workspace(tmp_path, repo, "ws2")

    first = prepare_environment(task, ws1)
    assert not first.project_reused
    second = prepare_environment(task, ws2)
    assert second.project_reused and second.venv == ws2.resolve() / ".git" / "takeover" / "venv"
    assert "copied from" in (ws2 / ".git" / "takeover" / "setup.log").read_text()

    shutil.rmtree(ws1)  # the copy must not lean on the workspace it came from
    imported, by_script = _where(second, tmp_path)
    assert imported == by_script == (ws2 / "mylib" / "__init__.py").resolve()
    assert (ws2 / "mylib" / "_version.py").read_text() == "version = '1.0'\n"  # generated files carried over
    assert (ws2 / "mylib.egg-info" / "PKG-INFO").exists()
    for path in (second.venv / "bin").iterdir():
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 100_000:
            assert str(ws1) not in path.read_text(errors="replace")
    script = (second.venv / "bin" / "mylib-where").read_text()
    assert script.startswith(f"#!{second.venv}/bin/python")
    status = subprocess.run(["git", "status", "--porcelain"], cwd=ws2, capture_output=True, text=True, check=True)
    assert status.stdout == ""

    # A change to the build metadata (a patch touching pyproject.toml) makes a fresh install.
    ws3 = _workspace(tmp_path, repo, "ws3")
    (ws3 / "pyproject.toml").write_text(_PYPROJECT + "\n# patched\n")
    third = prepare_environment(task, ws3)
    assert not third.project_reused
    assert _where(third, tmp_path)[0] == (ws3 / "mylib" / "__init__.py").resolve()


@requires("uv")
def test_an_editable_install_asks_the_backend_for_a_path_entry(tmp_path, monkeypatch):
    # setuptools' default editable install is an import hook, which pylint's plugin loader cannot see
    # through; SWE-bench's images have the checkout on sys.path.
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    whl = _wheel(tmp_path)
    spec = {"python": None, "packages": [str(whl)], "install": ["python -m pip install -e ."], "seed": False}
    repo, sha = _editable_project(tmp_path)
    task = as_task({"instance_id": "me__mylib-1", "repo": "me/mylib", "base_commit": sha, "takeover_env_spec": spec})
    ws = _workspace(tmp_path, repo, "ws")
    prepare_environment(task, ws)
    given = json.loads((ws / "mylib.egg-info" / "config_settings.json").read_text())
    assert given == {"editable_mode": "compat"}


@requires("uv")
def test_compiled_parts_are_reused_only_for_the_same_build_inputs(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    whl = _wheel(tmp_path)
    repo, sha = _editable_project(tmp_path, compiled=True, extra={"mylib/_speedups.c": "int x = 1;\n"})
    spec = {"python": None, "packages": [str(whl)], "install": ["python -m pip install -e ."], "seed": False}
    task = as_task({"instance_id": "me__mylib-1", "repo": "me/mylib", "base_commit": sha, "takeover_env_spec": spec})
    ws_a, ws_b, ws_c = (_workspace(tmp_path, repo, name) for name in ("a", "b", "c"))
    (ws_a / "mylib" / "__init__.py").write_text(_MYLIB + "# a Python-only patch\n")
    first = prepare_environment(task, ws_a)
    assert not first.project_reused
    assert "with 1 compiled files" in (ws_a / ".git" / "takeover" / "setup.log").read_text()
    second = prepare_environment(task, ws_b)  # same C sources: the compiled file comes with the copy
    assert second.project_reused
    assert (ws_b / "mylib" / "_speedups.so").read_bytes() == b"\x7fELF not really"
    (ws_c / "mylib" / "_speedups.c").write_text("int x = 2;\n")  # a patch to a C source: compiled here
    third = prepare_environment(task, ws_c)
    assert not third.project_reused and (ws_c / "mylib" / "_speedups.so").exists()
    for prepared, ws in ((first, ws_a), (second, ws_b), (third, ws_c)):
        imported, by_script = _where(prepared, tmp_path)
        assert imported == by_script == (ws / "mylib" / "__init__.py").resolve()


@requires("uv")
def test_a_project_installed_as_a_copy_is_installed_in_every_workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    whl = _wheel(tmp_path)
    repo, sha = _editable_project(tmp_path)
    spec = {"python": None, "packages": [str(whl)], "install": ["python -m pip install ."], "seed": False}
    task = as_task({"instance_id": "me__mylib-1", "repo": "me/mylib", "base_commit": sha, "takeover_env_spec": spec})
    prepared = [prepare_environment(task, _workspace(tmp_path, repo, name)) for name in ("a", "b")]
    assert [p.project_reused for p in prepared] == [False, False]
    assert "as a copy" in (tmp_path / "a" / ".git" / "takeover" / "setup.log").read_text()
    for p in prepared:  # each venv holds its own copy of its own checkout's sources
        imported, by_script = _where(p, tmp_path)
        assert imported == by_script and p.venv in imported.parents


def test_pre_install_steps_run_once_per_workspace(tmp_path):
    from takeover.environments.build_steps import BuildLog
    from takeover.environments.workspace_venv import run_pre_install

    repo, _ = make_repo(tmp_path / "r", {"setup.py": "install_requires=['pkg']\n"})
    spec = EnvSpec(pre_install=["sed -i 's/pkg/pkg<=1.0/' setup.py"])
    log = BuildLog(tmp_path / "log.txt")
    assert run_pre_install(log, spec, repo, dict(os.environ)) is True
    assert run_pre_install(log, spec, repo, dict(os.environ)) is False
    assert (repo / "setup.py").read_text() == "install_requires=['pkg<=1.0']\n"


@requires("uv")
def test_wheels_first_and_a_source_build_only_when_no_wheel_fits(tmp_path, monkeypatch):
    from takeover.environments.build_steps import BuildLog, make_venv, needs_pip, pip_install

    monkeypatch.setenv("UV_OFFLINE", "1")
    log = BuildLog(tmp_path / "build.log")
    python = make_venv(log, Path(sys.executable), tmp_path / "venv", seed=False)
    pip_install(log, python, [str(_wheel(tmp_path))], what="a wheel", binary_first=True)
    assert "building from source" not in log.path.read_text()
    repo, _ = _editable_project(tmp_path)  # a source tree only: no wheel of it exists
    pip_install(log, python, [str(repo)], what="a source tree", binary_first=True)
    text = log.path.read_text()
    assert text.count("--only-binary :all:") == 2 and "building from source where needed" in text
    out = subprocess.run([str(python), "-c", "import mylib, shareddep; print(shareddep.VALUE)"], cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "42"
    assert needs_pip("AttributeError: module 'setuptools.build_meta' has no attribute 'build_editable'")
    assert needs_pip("error: Failed to build `markupsafe==1.0`")
    assert not needs_pip("error: No solution found when resolving dependencies")


@requires("uv")
def test_environment_yml_packages_that_cannot_install_or_import_are_left_out_and_said(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    good = _wheel(tmp_path)
    needs_lib = _wheel(tmp_path, "needslib", init="raise RuntimeError('the C library is not found')\n")
    yml = (f"name: test\ndependencies:\n  - python=3.11\n  - nosuchpackage-xyz\n"
           f"  - pip:\n      - {good}\n      - {needs_lib}\n")
    repo, sha = make_repo(tmp_path / "r", {"environment.yml": yml})
    spec = {"python": None, "environment_yml_from": ["environment.yml"], "seed": False}
    prepared = prepare_environment(as_task({"repo": "me/lib", "base_commit": sha, "takeover_env_spec": spec}), repo)
    notes = " ".join(prepared.notes)
    assert "left out" in notes and "nosuchpackage-xyz" in notes
    assert "fail to import" in notes and "needslib (needslib: RuntimeError: the C library is not found)" in notes
    probe = subprocess.run(["python", "-c", "import shareddep, importlib.util as u; print(u.find_spec('needslib'))"],
                           env=prepared.env_vars(), cwd=tmp_path, capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "None"  # removed, so an ImportError guard skips what needs it
    again = prepare_environment(as_task({"repo": "me/lib", "base_commit": sha, "takeover_env_spec": spec}), repo)
    assert again.cached and " ".join(again.notes) == notes  # a reuse reports the same gaps
