"""A pytest plugin for ``tests/test_mirror_inventory.py``: after collection, writes every test marked
``mirror`` with the fixtures it asks for and those no fixture definition answers, as JSON, to the file
named by ``TAKEOVER_MIRROR_INVENTORY``. Such tests skip without a mirror (CI has none), so a fixture that
no longer exists would only show on a machine that has one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

#: Names pytest itself provides to every test.
BUILTIN = {"request"}


def pytest_collection_finish(session: pytest.Session) -> None:
    out = os.environ.get("TAKEOVER_MIRROR_INVENTORY")
    if not out:
        return
    tests = []
    for item in session.items:
        if item.get_closest_marker("mirror") is None:
            continue
        defined = item._fixtureinfo.name2fixturedefs
        missing = sorted(n for n in item.fixturenames if n not in defined and n not in BUILTIN)
        tests.append({"test": item.nodeid, "fixtures": sorted(item.fixturenames), "missing": missing})
    Path(out).write_text(json.dumps(tests, indent=1))
