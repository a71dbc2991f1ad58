"""A pytest plugin for ``tests/test_mirror_inventory.py``: after collection, writes every test that skips
in CI for what no CI machine here has (marked ``mirror``, or ``@requires`` naming a prerequisite in
``ALLOWED_IN_CI``: the mirror, the embedded model's weights, llama-cpp-python) with what it needs, the
fixtures it asks for and those no fixture definition answers, as JSON, to the file named by
``TAKEOVER_MIRROR_INVENTORY``. Such tests skip in CI, so a fixture that no longer exists would only show on
a machine that has what they need."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from prerequisites import ALLOWED_IN_CI

#: Names pytest itself provides to every test.
BUILTIN = {"request"}


def needs(item: pytest.Item) -> list[str]:
    """What ``item`` needs that CI does not have (``mirror`` for the marker of that name), sorted."""
    found = {"mirror"} if item.get_closest_marker("mirror") is not None else set()
    for marker in item.iter_markers("requires"):
        found |= {str(name) for name in marker.args if name in ALLOWED_IN_CI}
    return sorted(found)


def pytest_collection_finish(session: pytest.Session) -> None:
    out = os.environ.get("TAKEOVER_MIRROR_INVENTORY")
    if not out:
        return
    tests = []
    for item in session.items:
        if not needs(item):
            continue
        defined = item._fixtureinfo.name2fixturedefs
        missing = sorted(n for n in item.fixturenames if n not in defined and n not in BUILTIN)
        tests.append({"test": item.nodeid, "needs": needs(item), "fixtures": sorted(item.fixturenames),
                      "missing": missing})
    Path(out).write_text(json.dumps(tests, indent=1))
