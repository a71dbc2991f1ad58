"""What a grading may call a verdict (docs/protocol.md section 6): a test runner that does not start is an
error, never a verdict; an environment under ``/tmp`` is mounted in the sandbox (and the grading suite
passes from a clone under ``/tmp``); PASS_TO_PASS tests the reference patch fails in the same environment
are set aside from the handoff state; tests skipped for a module the specification installs but this
environment lacks are named. On the tiny calculator task of test_grading.py (its environment is the
current interpreter)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import git
from prerequisites import requires
from test_grading import BREAKS_MUL, GOLD, SPEC, calc_task  # noqa: F401 - calc_task is a fixture

from takeover.environments.shared_venv import BROKEN_NOTE, LEFT_OUT_NOTE
from takeover.grading import grade, grade_checkpoint
from takeover.grading.local.local_backend import left_out_packages
from takeover.grading.verdict import missing_module_skips, missing_module_warning
from takeover.grading_settings import GradingSettings

ROOT = Path(__file__).resolve().parents[1]
ENV_TEST = "import os\n\n\ndef test_service():\n    assert os.environ.get('TAKEOVER_SERVICE_THAT_IS_NEVER_UP')\n"


@pytest.mark.parametrize(("test_cmd", "reason"), [
    ("no-such-test-runner -rA", "tests: the test command did not start (exit 127): "),
    (f"{sys.executable} -m no_such_test_runner -rA", "tests: the test runner did not start: "),
])
def test_a_test_runner_that_does_not_start_is_an_error_never_a_verdict(calc_task, tmp_path, test_cmd, reason):  # noqa: F811
    task, source = calc_task
    task = {**task, "takeover_env_spec": {**SPEC, "test_cmd": test_cmd}}
    result = grade(task, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "logs")
    assert result.error is not None and result.error.startswith(reason), result.error
    assert result.handoff_state is None and not result.resolved
    assert not result.FAIL_TO_PASS.failure and not result.PASS_TO_PASS.failure  # no verdict was made


def test_pass_to_pass_tests_the_reference_patch_fails_here_are_set_aside(calc_task, tmp_path):  # noqa: F811
    task, source = calc_task
    # A PASS_TO_PASS test that needs a service this environment does not have: it fails whatever the patch.
    test_patch = task["test_patch"] + (
        "diff --git a/tests/test_env.py b/tests/test_env.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/tests/test_env.py\n@@ -0,0 +1,5 @@\n" + "".join(f"+{line}\n" for line in ENV_TEST.splitlines()))
    task = {**task, "test_patch": test_patch, "PASS_TO_PASS": [*task["PASS_TO_PASS"], "tests/test_env.py::test_service"]}

    plain = grade(task, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "plain")
    assert plain.handoff_state == "broke_existing" and not plain.resolved  # SWE-bench's own verdict is kept

    gold = grade_checkpoint(task, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "gold")
    assert gold.set_aside == ["tests/test_env.py::test_service"]
    assert gold.handoff_state == "resolved_preserve" and not gold.resolved
    assert gold.reference_note == ("the reference patch fails 1 PASS_TO_PASS test(s) here "
                                   "(tests/test_env.py::test_service); set aside from the handoff state")

    broken = grade_checkpoint(task, BREAKS_MUL, grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "broken")
    assert broken.set_aside == ["tests/test_env.py::test_service"]
    assert broken.handoff_state == "broke_existing"  # test_mul still fails: that is the checkpoint's doing
    reference = Path(os.environ["TAKEOVER_CACHE"]) / "grading" / "reference" / "acme__calc-1" / "result.json"
    assert reference.is_file()  # graded once, beside the checkpoints, and reused by its key

    empty = grade_checkpoint(task, "", grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "empty")
    assert empty.handoff_state == "needs_completion"


def test_tests_skipped_for_a_module_the_specification_installs_are_named(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_io.py").write_text(
        "import pytest\n\nrequires_cdms2 = pytest.mark.skipif(True, reason='requires cdms2')\n"
        "requires_nothing = pytest.mark.skipif(True, reason='requires netCDF9')\n\n\n"
        "class TestIO:\n    @requires_cdms2\n    def test_to_and_from_cdms2_classic(self):\n        pass\n\n"
        "    @requires_nothing\n    def test_other(self):\n        pass\n\n    def test_plain(self):\n        pass\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests"], cwd=tmp_path,
                         capture_output=True, text=True, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
                         check=False)
    assert "SKIPPED [1] tests/test_io.py:8: requires cdms2" in out.stdout, out.stdout
    failing = ["tests/test_io.py::TestIO::test_to_and_from_cdms2_classic", "tests/test_io.py::TestIO::test_other"]
    notes = [f"{LEFT_OUT_NOTE}: cdms2, esmpy>=8; tests that import them are skipped or fail here",
             f"{BROKEN_NOTE}: numbagg (ImportError: x); tests that need them are skipped here"]
    assert left_out_packages(notes) == ["cdms2", "esmpy", "numbagg"]
    skips = missing_module_skips(out.stdout, failing, left_out_packages(notes),
                                 lambda name: (tmp_path / name).read_text().splitlines())
    assert skips == {"cdms2": ["tests/test_io.py::TestIO::test_to_and_from_cdms2_classic"]}  # netCDF9: not installed by the spec
    assert missing_module_warning(skips) == [(
        "1 FAIL_TO_PASS/PASS_TO_PASS test(s) were skipped because cdms2 is missing: the environment's specification "
        "installs it, this environment could not (the official image would run them; grade with --backend docker): "
        "tests/test_io.py::TestIO::test_to_and_from_cdms2_classic")]


def _venv_under_tmp(tmp: Path, clone: Path) -> Path:
    """A venv under ``/tmp`` made from the interpreter running these tests, with ``pytest`` in its ``bin``
    (as ``pip install -e '.[dev]'`` leaves it) and the clone's ``src`` and this interpreter's packages on its
    path."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "takeover_clone.pth").write_text(f"{clone / 'src'}\n{sysconfig.get_paths()['purelib']}\n")
    script = venv / "bin" / "pytest"
    script.write_text(f"#!{venv / 'bin' / 'python'}\nimport sys\nimport pytest\nsys.exit(pytest.console_main())\n")
    script.chmod(0o755)
    return venv


@requires("bubblewrap")
def test_the_grading_suite_passes_from_a_clone_under_tmp(tmp_path):
    assert tmp_path.is_relative_to("/tmp")
    clone = tmp_path / "clone"
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    venv = _venv_under_tmp(tmp_path, clone)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "VIRTUAL_ENV", "TAKEOVER_NO_SANDBOX"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import takeover; print(takeover.__file__)"], env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(clone))
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_grading.py::test_gold_resolves_and_empty_does_not", "tests/test_grading_verdicts.py",
         "-k", "not clone_under_tmp"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]
