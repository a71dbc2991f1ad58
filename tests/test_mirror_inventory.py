"""The tests that need what CI has not (a mirror of real repositories, the embedded model's weights,
llama-cpp-python) skip there; this test, which runs everywhere, checks that each of them would at least
start: its module imports and every fixture it asks for exists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_mirror_or_weights_test_asks_only_for_fixtures_that_exist(tmp_path):
    inventory = tmp_path / "mirror_tests.json"
    env = {**os.environ, "TAKEOVER_MIRROR_INVENTORY": str(inventory),
           "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "mirror_inventory",
         "-p", "no:cacheprovider", str(TESTS)],
        check=False, capture_output=True, text=True, env=env, cwd=TESTS.parent, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    tests = json.loads(inventory.read_text())
    mirror = [t["test"] for t in tests if "mirror" in t["needs"]]
    assert len(mirror) >= 5, mirror  # the suite has mirror tests of points, grading, specs
    weights = {t["test"].split("::")[0] for t in tests if "embedded model weights" in t["needs"]}
    # The real model's tests: its weights and server, its notes at the quickstart's point, its refusal of json_schema.
    assert {"tests/test_embedded_model.py", "tests/test_embedded_notes.py"} <= weights, weights
    assert {t["test"]: t["missing"] for t in tests if t["missing"]} == {}


def test_the_inventory_sees_a_missing_fixture(tmp_path):
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\ndef pytest_configure(config):\n"
        "    config.addinivalue_line('markers', 'mirror: needs a mirror')\n")
    (tmp_path / "test_rot.py").write_text(
        "import pytest\nfrom prerequisites import requires\n\n"
        "@pytest.mark.mirror\ndef test_rotted(tmp_path, data_dir):\n    pass\n\n"
        "@pytest.mark.mirror\ndef test_fine(tmp_path):\n    pass\n\n"
        "@requires('embedded model weights', counterpart='x.py::y')\ndef test_weights_rotted(tmp_path, gone):\n"
        "    pass\n\n"
        "def test_elsewhere(tmp_path, gone):\n    pass\n")
    inventory = tmp_path / "inv.json"
    env = {**os.environ, "TAKEOVER_MIRROR_INVENTORY": str(inventory),
           "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "mirror_inventory",
                    "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path)],
                   capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    found = {t["test"].split("::")[-1]: (t["needs"], t["missing"]) for t in json.loads(inventory.read_text())}
    assert found == {"test_rotted": (["mirror"], ["data_dir"]), "test_fine": (["mirror"], []),
                     "test_weights_rotted": (["embedded model weights"], ["gone"])}  # test_elsewhere runs in CI
