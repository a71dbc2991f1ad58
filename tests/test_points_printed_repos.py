"""Real detection without a mirror: ``takeover points``, ``checkpoint`` and ``views`` on real mini-swe-agent
runs, replayed in repositories whose base commit holds the files the runs themselves printed, with the
blob ids of the runs' own submitted patches (tests/_printed_repos.py). The handoff points the view tests
write by hand (``_views_support.requests_1766_points``) are checked here against detection on every run
of the suite; the expected points of the other runs were checked by hand against the trajectories
(event numbers are 0-based indexes of the normalized events: action 2k, its observation 2k + 1)."""

from __future__ import annotations

import json
import subprocess

import pytest
from _printed_repos import (
    MINI,
    FixtureRefused,
    Printout,
    base_files,
    dataset_row,
    printed_mirror,
    run_json,
    submitted_files,
)
from _views_support import Replay, requests_1766_patches, requests_1766_points, requests_1766_points_file
from prerequisites import requires
from typer.testing import CliRunner

from takeover.cli import app
from takeover.points import RunPoints
from takeover.repository_states.snapshots import patch_sha256

ID_1766 = "psf__requests-1766"
FAST = (ID_1766, "django__django-12193", "django__django-13551")
SLOW = "pytest-dev__pytest-7205"  # its replay runs pytest four times (~30 s on a loaded 2-core machine)

# Every field of each point but patch_sha256, checked by hand against the trajectories (the hash is checked
# against the patch, and the patch against the real repository's where a mirror is configured).
EXPECTED = {
    "django__django-12193": {
        # 20 writes apply_fix.py, a new top-level file: a helper script (docs/protocol.md section 3.2), no
        # source edit; 22 `python apply_fix.py` rewrites array.py (not a verification: no repro/check/verify/
        # test in the script's name): the first source edit. reproduce_issue.py (10) is a scratch artifact; its
        # run at 12/13 exited 0 printing "FAIL: Widget 2 ..." (no failure pattern, so passed by the exit code).
        "after_first_source_edit": {
            "event_index": 22, "changed_source_files": ["django/contrib/postgres/forms/array.py"],
            "changed_test_files": [], "non_source_artifacts": ["apply_fix.py", "reproduce_issue.py"],
            "latest_verification_command": "python reproduce_issue.py", "latest_verification_result": "passed",
            "latest_verification_evidence": None, "validation_after_latest_source_change": "none", "patch_lines": 97},
        # 24/25 re-runs reproduce_issue.py.
        "after_first_verification_result": {
            "event_index": 25, "changed_source_files": ["django/contrib/postgres/forms/array.py"],
            "changed_test_files": [], "non_source_artifacts": ["apply_fix.py", "reproduce_issue.py"],
            "latest_verification_command": "python reproduce_issue.py", "latest_verification_result": "passed",
            "latest_verification_evidence": None, "validation_after_latest_source_change": "passed", "patch_lines": 97},
    },
    "django__django-13551": {
        # 20 is the `sed` on tokens.py; reproduce_issue.py passed at 15; 25 is its run after the edit.
        "after_first_source_edit": {
            "event_index": 20, "changed_source_files": ["django/contrib/auth/tokens.py"], "changed_test_files": [],
            "non_source_artifacts": ["reproduce_issue.py"], "latest_verification_command": "python reproduce_issue.py",
            "latest_verification_result": "passed", "latest_verification_evidence": None,
            "validation_after_latest_source_change": "none", "patch_lines": 59},
        "after_first_verification_result": {
            "event_index": 25, "changed_source_files": ["django/contrib/auth/tokens.py"], "changed_test_files": [],
            "non_source_artifacts": ["reproduce_issue.py"], "latest_verification_command": "python reproduce_issue.py",
            "latest_verification_result": "passed", "latest_verification_evidence": None,
            "validation_after_latest_source_change": "passed", "patch_lines": 59},
    },
    SLOW: {
        # 4/5 pytest on reproduce_issue.py exits 1 with "2 errors in 0.29s" (pytest's summary reports errors:
        # failed, that line the evidence); 14 is the `sed` on setuponly.py.
        "after_first_source_edit": {
            "event_index": 14, "changed_source_files": ["src/_pytest/setuponly.py"], "changed_test_files": [],
            "non_source_artifacts": ["reproduce_issue.py"],
            "latest_verification_command": "python3 -bb -m pytest --setup-show reproduce_issue.py",
            "latest_verification_result": "failed",
            "latest_verification_evidence": "============================== 2 errors in 0.29s ===============================",
            "validation_after_latest_source_change": "none", "patch_lines": 8},
        "after_first_verification_result": {
            "event_index": 19, "changed_source_files": ["src/_pytest/setuponly.py"], "changed_test_files": [],
            "non_source_artifacts": ["reproduce_issue.py"],
            "latest_verification_command": "python3 -bb -m pytest --setup-show reproduce_issue.py",
            "latest_verification_result": "passed", "latest_verification_evidence": None,
            "validation_after_latest_source_change": "passed", "patch_lines": 8},
        # 26/27 the project's tests fail ("9 failed, 16 passed"); 38 is the next `sed` on setuponly.py.
        # test_types.py (20) is a test file by its name.
        "after_first_post_failure_edit": {
            "event_index": 38, "changed_source_files": ["src/_pytest/setuponly.py"], "changed_test_files": ["test_types.py"],
            "non_source_artifacts": ["reproduce_issue.py"],
            "latest_verification_command": "python3 -m pytest testing/test_setuponly.py",
            "latest_verification_result": "failed",
            "latest_verification_evidence": "========================= 9 failed, 16 passed in 0.92s =========================",
            "validation_after_latest_source_change": "none", "patch_lines": 22},
    },
}
MISSING = {
    "django__django-12193": {
        # The first failure is 35 (verify_import.py prints "Import failed: ..."); what follows writes more
        # top-level helper scripts (verify_import_trace.py at 40), never a source file.
        "after_first_post_failure_edit": "no source edit after the first failed verification (event 35) other than "
                                         "git stash/restore/checkout/reset/clean or a backup copied back",
    },
    "django__django-13551": {
        # 29 (test_edge_cases.py fails) is the first failure; later writes touch test_edge_cases.py (a test
        # file) and remove files, never a source file.
        "after_first_post_failure_edit": "no source edit after the first failed verification (event 29) other than "
                                         "git stash/restore/checkout/reset/clean or a backup copied back",
    },
}
# Which blob of the run's changed file a checkpoint workspace holds: the base ("old") or the submitted
# one ("new") of the patch's index line.
BLOBS = {
    (ID_1766, "after_first_source_edit"): "new", (ID_1766, "after_first_verification_result"): "new",
    (ID_1766, "after_first_post_failure_edit"): "old",  # the `sed` at 24 reverted the quoting
    ("django__django-12193", "after_first_source_edit"): "new",
    ("django__django-12193", "after_first_verification_result"): "new",
    ("django__django-13551", "after_first_source_edit"): "new",
    ("django__django-13551", "after_first_verification_result"): "new",
}


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    return printed_mirror(tmp_path_factory.mktemp("printed"), (*FAST, SLOW))


@pytest.fixture(scope="module")
def detected(printed, tmp_path_factory) -> dict[str, RunPoints]:
    """``takeover points`` over the fast runs (plain interpreter: the commands only touch printed files)."""
    out = tmp_path_factory.mktemp("points")
    result = invoke("points", *(str(printed.trajectory(i)) for i in FAST), "--dataset", str(printed.dataset),
                    "--mirror", str(printed.mirror), "--offline", "--no-environment", "--json", "--out-dir", str(out))
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["instance_id"] for line in result.stdout.splitlines()] == list(FAST)
    return {i: RunPoints.load(out / f"{i}.points.json") for i in FAST}


def test_base_commits_hold_the_blobs_named_by_the_runs_own_patches(printed):
    for instance_id, commit in printed.base_commits.items():
        row = json.loads(next(line for line in printed.dataset.read_text().splitlines() if instance_id in line))
        bare = printed.mirror / f"{row['repo'].replace('/', '__')}.git"
        tree = subprocess.run(["git", "ls-tree", "-r", commit], cwd=bare, capture_output=True, text=True,
                              check=True).stdout.splitlines()
        blobs = {line.split("\t")[1]: line.split()[2] for line in tree}
        submitted = submitted_files(run_json(instance_id)["info"]["submission"])
        assert sorted(blobs) == sorted(submitted), instance_id
        for path, blob in blobs.items():
            assert blob.startswith(submitted[path].old), (instance_id, path, blob)


def test_a_printout_that_is_not_the_patched_blob_is_refused():
    # The third `cat tokens.py` of 13551 comes after the `sed`: it is the submitted file, not the base.
    after_edit = (Printout("django/contrib/auth/tokens.py", "cat django/contrib/auth/tokens.py", occurrence=2),)
    with pytest.raises(FixtureRefused, match=r"is not blob 93e2d71af2 of django/contrib/auth/tokens.py \(base\)"):
        base_files("django__django-13551", after_edit)
    # The same printout is accepted as what it is: the patch reversed gives the base blob.
    as_final = (Printout("django/contrib/auth/tokens.py", "cat django/contrib/auth/tokens.py", occurrence=2, shows="final"),)
    assert base_files("django__django-13551", as_final) == base_files("django__django-13551")


def test_runs_without_a_whole_printout_of_every_changed_file_are_refused():
    with pytest.raises(FixtureRefused, match="no printout of sympy/functions/special/zeta_functions.py"):
        base_files("sympy__sympy-13852", (Printout("sympy/functions/special/tests/test_zeta_functions.py",
                                                   "cat sympy/functions/special/tests/test_zeta_functions.py"),))
    # mini-swe-agent cut this one at its output limit (head and tail only).
    with pytest.raises(FixtureRefused, match="is cut"):
        base_files("django__django-11848", (Printout("django/utils/http.py", "cat django/utils/http.py"),))
    with pytest.raises(FixtureRefused, match="never ran 'cat requests/sessions.py'"):
        base_files("psf__requests-2317", (Printout("requests/sessions.py", "cat requests/sessions.py"),))


def test_detection_finds_the_hand_checked_points_of_the_view_tests(detected):
    rp = detected[ID_1766]
    assert rp.replay.verified and rp.replay.method == "verified_replay", rp.replay
    assert rp.missing == []
    hand, hand_patches = requests_1766_points(), requests_1766_patches()
    assert [p.type for p in rp.points] == list(hand)
    for point in rp.points:
        assert point == hand[point.type]
        assert rp.patches[point.type] == hand_patches[point.type], point.type


@pytest.mark.parametrize("instance_id", [i for i in FAST if i != ID_1766])
def test_detection_on_the_printed_repository_finds_the_hand_checked_points(detected, instance_id):
    rp = detected[instance_id]
    assert rp.replay.verified and rp.replay.method == "verified_replay", rp.replay
    check_points(rp, instance_id)


def check_points(rp: RunPoints, instance_id: str) -> None:
    expected = EXPECTED[instance_id]
    assert [p.type for p in rp.points] == list(expected)
    for point in rp.points:
        want = expected[point.type]
        got = point.model_dump(exclude={"type", "patch_sha256", "unrecorded_files"})
        assert point.unrecorded_files == []  # no file these runs keep at a point holds output the record lacks
        if "latest_verification_command" not in want:  # a long here-document: its first line is enough
            assert got.pop("latest_verification_command").startswith("cat <<'EOF' > verify_import.py\n")
        assert got == want, point.type
        assert point.patch_sha256 == patch_sha256(rp.patches[point.type])
    assert {m.type: m.reason for m in rp.missing} == MISSING.get(instance_id, {})


@pytest.mark.slow
def test_detection_on_the_printed_pytest_repository(printed, tmp_path):
    result = invoke("points", str(printed.trajectory(SLOW)), "--dataset", str(printed.dataset), "--mirror",
                    str(printed.mirror), "--offline", "--no-environment", "--out-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    rp = RunPoints.load(tmp_path / f"{SLOW}.points.json")
    assert rp.replay.verified, rp.replay
    check_points(rp, SLOW)


def _blob(path) -> str:
    return subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("instance_id", FAST)
def test_checkpoints_hold_the_files_the_run_had_at_each_point(printed, detected, instance_id, tmp_path):
    submitted = submitted_files(run_json(instance_id)["info"]["submission"])
    points_file = tmp_path / "points.json"
    detected[instance_id].save(points_file)
    for point in detected[instance_id].points:
        out = tmp_path / point.type
        result = invoke("checkpoint", str(printed.trajectory(instance_id)), "--point-type", point.type,
                        "--dataset", str(printed.dataset), "--mirror", str(printed.mirror), "--offline",
                        "--points-file", str(points_file), "--out-dir", str(out))
        assert result.exit_code == 0, result.output
        record = json.loads((out / "checkpoint.json").read_text())
        assert record["base_commit"] == printed.base_commits[instance_id]
        assert record["patch_sha256"] == point.patch_sha256 == patch_sha256((out / "checkpoint.patch").read_text())
        assert record["point"]["event_index"] == point.event_index
        for path, file in submitted.items():
            which = BLOBS[(instance_id, point.type)]
            assert _blob(out / "workspace" / path).startswith(getattr(file, which)), (point.type, path, which)
        for name in point.non_source_artifacts + point.changed_source_files:
            assert (out / "workspace" / name).is_file()


SUMMARY = "- The agent quoted qop in requests/auth.py.\n- It has not re-run its reproduction script."
STRUCTURED = json.dumps({
    "problem_understanding": "Quote the qop value in the Digest Authorization header.",
    "work_completed": "Edited requests/auth.py to write qop=\"auth\".",
    "evidence_observed": "reproduce_issue.py printed qop=auth before the edit.",
    "observed_failures": "NONE OBSERVED",
    "remaining_uncertainty": "Effect of the edit not yet observed.",
    "rollback_notes": "NONE OBSERVED",
    "recommended_next_action": "Re-run reproduce_issue.py.",
})


def test_views_from_detection_equal_the_views_from_the_hand_checked_point(printed, detected, tmp_path):
    """All four views, the note writer's requests included, are the same whether the point comes from
    detection on the printed repository or from the hand-checked record the view tests use."""
    detected_file = tmp_path / "detected.points.json"
    detected[ID_1766].save(detected_file)
    hand_file = requests_1766_points_file(tmp_path / "hand-points")  # not the views' --out-dir
    replay = Replay()
    built = {}
    with replay.server:
        for name, points_file in (("detected", detected_file), ("hand", hand_file)):
            replay.script([{"content": SUMMARY}, {"content": STRUCTURED}])
            out = tmp_path / name
            result = invoke("views", str(MINI / f"{ID_1766}.json"), "--dataset", str(printed.dataset),
                            "--point-type", "after_first_source_edit", "--points-file", str(points_file),
                            "--out-dir", str(out), "--model", "writer", "--base-url", replay.base_url,
                            "--api-key-env", "NO_SUCH_KEY_VAR")
            assert result.exit_code == 0, result.output
            built[name] = ({p.name: p.read_text() for p in sorted(out.glob("*.md"))},
                           [r["messages"] for r in replay.requests])
            point = json.loads((out / "views.json").read_text())["point"]
            assert point == requests_1766_points()["after_first_source_edit"].model_dump(mode="json")
    assert sorted(built["detected"][0]) == ["raw_trace.md", "repo_only.md", "structured_notes.md", "summary_notes.md"]
    assert built["detected"] == built["hand"]
    assert len(built["detected"][1]) == 2


@pytest.mark.mirror
@pytest.mark.slow
@requires("mirror", counterpart="test_points_printed_repos.py::test_detection_on_the_printed_repository_finds_the_hand_checked_points")
def test_the_real_repository_gives_the_points_and_patches_of_the_printed_one(printed, mirror_dir, tmp_path):
    """The counterpart with the real pytest repository (TAKEOVER_MIRROR): the same points and, byte for
    byte, the same checkpoint patches as the repository rebuilt from the run's printouts."""
    real = tmp_path / "dataset.jsonl"
    real.write_text(json.dumps(dataset_row(SLOW)) + "\n")
    found = {}
    for name, dataset, mirror in (("real", real, mirror_dir), ("printed", printed.dataset, printed.mirror)):
        result = invoke("points", str(MINI / f"{SLOW}.json"), "--dataset", str(dataset), "--mirror", str(mirror),
                        "--offline", "--no-environment", "--out-dir", str(tmp_path / name))
        assert result.exit_code == 0, result.output
        found[name] = RunPoints.load(tmp_path / name / f"{SLOW}.points.json")
    check_points(found["real"], SLOW)
    assert found["real"].points == found["printed"].points
    assert found["real"].patches == found["printed"].patches
