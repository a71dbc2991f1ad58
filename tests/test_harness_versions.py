"""The grading tests under both harness versions: this suite runs under the shared venv's swebench (5.0 as a
fresh install gets it, or 4.1 where a user keeps it), and this test runs the grading test files again in the
venv with the other version that .ci/run builds (tests/prerequisites.py, ``other swebench venv``), on this
checkout's sources. There the verdict rules, the 4.1 specification table, rows in either format, local
grading and docker grading (4.1's image build and ``run_instance``; 5.x's own ``run_instance`` on the
stand-in images: gold resolves, empty does not, the same statuses as the local backend) must pass as they
do under the shared venv's version."""

from __future__ import annotations

import os
import subprocess

import pytest
from prerequisites import ROOT, other_harness, other_swebench_python, requires

#: The grading tests run again under the other version (each also passes under the shared venv's).
GRADING_TESTS = (
    "tests/test_grading_rules.py", "tests/test_swebench_specs.py", "tests/test_swebench_rows.py",
    "tests/test_grading_log_parsing.py", "tests/test_grading_logs.py", "tests/test_grading_verdict.py",
    "tests/test_grading.py", "tests/test_grading_reuse.py", "tests/test_official_image.py",
    "tests/test_grading_docker.py", "tests/test_grading_docker_daemon.py", "tests/test_grading_backends.py",
)
#: Set in the other version's run, so that this test does not run itself there.
INSIDE = "TAKEOVER_UNDER_OTHER_SWEBENCH"


@pytest.mark.slow
@pytest.mark.timeout(2400)
@pytest.mark.skipif(os.environ.get(INSIDE) == "1", reason="already running under the other swebench")
@requires("other swebench venv")
def test_the_grading_tests_pass_under_the_other_swebench():
    python = other_swebench_python()
    name, _, prefix = other_harness()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "VIRTUAL_ENV"))}
    env.update({INSIDE: "1", "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])})
    probe = "from takeover._util.harness_version import harness_label; import takeover; print(harness_label(), takeover.__file__)"
    version = subprocess.run([str(python), "-c", probe], env=env, capture_output=True, text=True,
                             check=True).stdout.split()
    assert version[0] == "swebench" and version[1].startswith(prefix), (name, version)
    assert version[2].startswith(str(ROOT / "src"))  # this checkout's sources, whatever the venv was built from
    done = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *GRADING_TESTS],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=2300, check=False)
    tail = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    assert " passed" in done.stdout.splitlines()[-1] and " failed" not in done.stdout.splitlines()[-1], tail
