"""Helpers shared by the view tests: one scripted server per module whose script each test replaces
(a server costs ~0.5 s to shut down), and the real shared run of psf__requests-1766 with its task.

Only the tests that read the shared run need it: :func:`real_run` and :func:`real_task` skip (fail under
CI) naming the file when it is absent, through ``prerequisites.shared``."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from _replay import Replay  # noqa: F401 - the view tests import it from here
from prerequisites import shared

from takeover.points import HandoffPoint
from takeover.sources.tasks import SourceTask
from takeover.trajectories import read_trajectories
from takeover.trajectories.events import Trajectory

# -- the real shared data ---------------------------------------------------------------------------


def real_run_path(instance_id: str) -> Path:
    """The shared mini-swe-agent run of ``instance_id`` (skips, or fails under CI, when it is absent)."""
    return shared(f"trajectories/mini-swe-agent/{instance_id}.json")


@lru_cache(maxsize=32)
def real_run(instance_id: str) -> Trajectory:
    """The real mini-swe-agent run of ``instance_id`` from the shared data (read with our reader)."""
    return read_trajectories(real_run_path(instance_id))[0]


@lru_cache(maxsize=32)
def real_task(instance_id: str) -> SourceTask:
    """The SWE-bench Verified row of ``instance_id`` (only that line is parsed)."""
    needle = f'"instance_id": "{instance_id}"'
    with open(shared("swebench_verified.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            if needle in line:
                return SourceTask.model_validate(json.loads(line))
    raise KeyError(instance_id)


# Checkpoint patches carry full object ids (docs/protocol.md section 5.2), whatever the recorded run printed.
REPRODUCE_PATCH = """diff --git a/reproduce_issue.py b/reproduce_issue.py
new file mode 100644
index 0000000000000000000000000000000000000000..90fd73c5a957966913354c2ae518bb337267eb5d
--- /dev/null
+++ b/reproduce_issue.py
@@ -0,0 +1,13 @@
+from requests.auth import HTTPDigestAuth
+
+auth = HTTPDigestAuth('user', 'passwd')
+auth.chal = {
+    'realm': 'testrealm',
+    'nonce': 'testnonce',
+    'qop': 'auth',
+    'algorithm': 'MD5',
+    'opaque': 'testopaque'
+}
+
+header = auth.build_digest_header('GET', 'http://example.com/digest-auth')
+print(header)
"""


def requests_1766_points() -> dict[str, HandoffPoint]:
    """The handoff points of psf__requests-1766 as detection finds them (replay with the mirror; the
    mirror test in test_views_cli.py checks they stay equal), so that tests without the mirror use them.

    Events: 8 writes reproduce_issue.py, 14 `sed` quotes qop in requests/auth.py, 16/17 the reproduction
    script passes, 22/23 `python3 test_requests.py` fails (rc 1), 24 `sed` reverts the quoting.
    """
    artifacts = {"changed_test_files": [], "non_source_artifacts": ["reproduce_issue.py"]}
    return {
        "after_first_source_edit": HandoffPoint(
            type="after_first_source_edit", event_index=14, changed_source_files=["requests/auth.py"],
            latest_verification_command="python3 reproduce_issue.py", latest_verification_result="passed",
            validation_after_latest_source_change="none", patch_lines=15,
            patch_sha256="a43cb8b7d24625f78b2ddb24ef65101de190168005f5a51fc81ea1de9d050ff9", **artifacts),
        "after_first_verification_result": HandoffPoint(
            type="after_first_verification_result", event_index=17, changed_source_files=["requests/auth.py"],
            latest_verification_command="python3 reproduce_issue.py", latest_verification_result="passed",
            validation_after_latest_source_change="passed", patch_lines=15,
            patch_sha256="a43cb8b7d24625f78b2ddb24ef65101de190168005f5a51fc81ea1de9d050ff9", **artifacts),
        "after_first_post_failure_edit": HandoffPoint(
            type="after_first_post_failure_edit", event_index=24, changed_source_files=[],
            latest_verification_command="python3 test_requests.py", latest_verification_result="failed",
            latest_verification_evidence="FAILED (errors=1)", validation_after_latest_source_change="none",
            patch_lines=13, patch_sha256="66aad429ae00f7bfee8168903efd75b377d529306aa771f90976e28e664c5d3f",
            **artifacts),
    }


def requests_1766_patches() -> dict[str, str]:
    """The checkpoint patch at each point: the reproduction script, plus the qop edit until it is reverted."""
    edited = REPRODUCE_PATCH + real_run("psf__requests-1766").final_patch.replace(
        "index a3de123d..48416e5f", "index a3de123d306be88f910db295ca21e106d8fd202f..48416e5f4a1da920ae4cbc102762d239d3b20a1b")
    return {"after_first_source_edit": edited, "after_first_verification_result": edited,
            "after_first_post_failure_edit": REPRODUCE_PATCH}


ID_1766 = "psf__requests-1766"


def requests_1766_points_file(folder: Path, point_type: str = "after_first_source_edit") -> Path:
    """A saved RunPoints record of psf__requests-1766 with the hand-checked point of ``point_type``, in
    ``folder`` (what ``takeover points --out-dir`` writes; detection itself needs the mirror)."""
    from takeover.points import RunPoints
    from takeover.repository_states.replay import ReplayVerdict

    run, task = real_run(ID_1766), real_task(ID_1766)
    point = requests_1766_points()[point_type]
    record = RunPoints(
        instance_id=ID_1766, repo=task.repo, base_commit=task.base_commit, trajectory=str(real_run_path(ID_1766)),
        format=run.format, events=len(run.events), replay=ReplayVerdict(verified=True, method="verified_replay"),
        points=[point], patches={point.type: requests_1766_patches()[point.type]},
    )
    return record.save(folder / f"{ID_1766}.points.json")
