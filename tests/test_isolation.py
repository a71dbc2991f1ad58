"""An agent sees its task and nothing else (docs/protocol.md section 8.6): on a repository built here whose
history goes on after the task's base commit (one later commit is the fix), the agent's own shell finds no
newer commit by ``git log --all`` or ``git cat-file --batch-all-objects``, cannot read a canary beside the
output folder, the dataset file, the mirror or the cache, while ``git status``/``git diff`` and the task's
interpreter work; the probe's record in run.json says the same. With the isolation removed on purpose the
probe and the report say "not isolated"."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import CALC_ENV_SPEC, git, make_repo
from prerequisites import requires
from test_agents import BUGGY, FIXED, SUBMIT, TEST, bash, events_of, settings

from takeover._util import sandbox
from takeover.agent_choice import AgentChoice
from takeover.agents.isolation import require_confinement
from takeover.agents.runs import run_predecessor
from takeover.errors import InputError
from takeover.sources.frozen_history import host_git_env, store_path
from takeover.sources.repos import RepoSource, alternates, cache_dir
from takeover.sources.tasks import load_tasks
from takeover.testing.scripted_server import ScriptedServer


def _history_with_a_future(tmp_path):
    """``(dataset file, mirror folder, base commit, fix commit)``: the calculator at its base commit (tagged
    v0.1), then the fix (tagged v0.2) and a later commit on a side branch, all in the mirror."""
    src, base = make_repo(tmp_path / "src" / "calc", {"calc.py": BUGGY, "test_calc.py": TEST})
    git(src, "tag", "-a", "v0.1", "-m", "old release")
    (src / "calc.py").write_text(FIXED)
    git(src, "commit", "-qam", "Fix add: it subtracted")
    fix = git(src, "rev-parse", "HEAD").strip()
    git(src, "tag", "-a", "v0.2", "-m", "the release with the fix")
    git(src, "checkout", "-qb", "later", base)
    (src / "notes.txt").write_text("later work\n")
    git(src, "add", "notes.txt")
    git(src, "commit", "-qm", "later work")
    git(src, "checkout", "-q", "main")
    mirror = tmp_path / "mirror"
    git(tmp_path, "clone", "-q", "--mirror", str(src), str(mirror / "acme__calc.git"))
    dataset = tmp_path / "data" / "tasks.jsonl"
    dataset.parent.mkdir()
    row = {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": base,
           "problem_statement": "add() subtracts", "patch": "the reference patch", "FAIL_TO_PASS": [],
           "PASS_TO_PASS": [], "takeover_env_spec": CALC_ENV_SPEC}
    dataset.write_text(json.dumps(row) + "\n")
    return dataset, mirror, base, fix


def _study(tmp_path, cache):
    """The task, its mirror, the commits, and the places no agent may read (a canary beside the output folder,
    the dataset, a file in takeover's cache ``cache``)."""
    dataset, mirror, base, fix = _history_with_a_future(tmp_path)
    [task] = load_tasks(dataset)
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "isolation-test-secret.txt").write_text("CACHE-SECRET\n")
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "canary.txt").write_text("CANARY-CONTENT\n")
    return {"task": task, "mirror": mirror, "base": base, "fix": fix, "dataset": dataset,
            "canary": tmp_path / "study" / "canary.txt", "cache_file": cache / "isolation-test-secret.txt",
            "out": tmp_path / "study" / "run"}


@pytest.fixture
def study(tmp_path, monkeypatch):
    """:func:`_study` with a cache of its own."""
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    return _study(tmp_path, tmp_path / "cache")


@pytest.fixture
def study_in_the_cache(tmp_path):
    """:func:`_study` in the user's cache (where the OpenHands environment is built); its secret file removed after."""
    found = _study(tmp_path, cache_dir())
    yield found
    found["cache_file"].unlink(missing_ok=True)


HISTORY = "git log --all --format=%H; git cat-file --batch-all-objects --batch-check; git tag; git branch -a"
WORKS = ("git status --short && git diff --stat && python -c 'import calc; print(\"interpreter\", calc.add(1, 2))'"
         " && git log --oneline | wc -l")


def _places(s) -> str:
    return f"cat {s['canary']}; cat {s['dataset']}; cat {s['cache_file']}; ls {s['mirror']}; ls {s['out']}; echo done"


def _looks(s) -> list[dict]:
    """The agent's commands: the history it can find, the places it must not read, git and the interpreter."""
    return [bash(HISTORY), bash(_places(s)), bash(WORKS), bash(SUBMIT)]


def _assert_sees_only_the_task(s, history: str, places: str, works: str) -> None:
    assert s["base"] in history and s["fix"] not in history and "v0.2" not in history
    assert "later" not in history and "v0.1" in history
    assert "CANARY-CONTENT" not in places and "reference patch" not in places and "CACHE-SECRET" not in places
    assert places.count("No such file or directory") == 4 and "done" in places
    assert "run.json" not in places  # the run folder shows only the workspace mounted in it
    assert "interpreter -1" in works and "1" in works.split()  # the task's interpreter; the one base commit


def test_the_frozen_store_holds_the_base_commit_s_history_and_nothing_newer(tmp_path, study):
    ws = RepoSource(study["mirror"], offline=True).workspace("acme/calc", study["base"], tmp_path / "ws")
    store = alternates(ws)[0].parent
    assert store.parent == store_path("acme/calc", study["base"], cache_dir()).parent  # the cache's frozen stores
    objects = git(store, "cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(objectname)")
    reachable = {line.split()[0] for line in git(store, "rev-list", "--objects", study["base"]).splitlines()}
    assert study["fix"] not in objects and len(objects.splitlines()) == len(reachable) + 1  # + tag v0.1
    assert git(store, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main", "refs/tags/v0.1"]
    # The workspace: HEAD detached at the base commit, one branch at it, no remote, no reflog.
    assert git(ws, "rev-parse", "HEAD").strip() == study["base"] and git(ws, "remote").strip() == ""
    assert git(ws, "for-each-ref", "--format=%(refname) %(objectname)").split() == [
        "refs/heads/main", study["base"], "refs/tags/v0.1", git(ws, "rev-parse", "v0.1").strip()]
    assert not (ws / ".git" / "logs").exists()
    assert study["fix"] not in git(ws, "log", "--all", "--reflog", "--format=%H")
    # Host-side git (the environment's setup commit) still reaches the mirror; the agent's git does not.
    seen = subprocess.run(["git", "cat-file", "-t", study["fix"]], cwd=ws, env=host_git_env(ws),
                          capture_output=True, text=True, check=False)
    assert seen.stdout.strip() == "commit"
    again = RepoSource(study["mirror"], offline=True).workspace("acme/calc", study["base"], tmp_path / "ws2")
    assert (again / ".git" / "objects" / "info" / "alternates").read_text() == \
        (ws / ".git" / "objects" / "info" / "alternates").read_text()  # one store per (repository, base commit)
    # A later task of the repository (its base is the fix): its store borrows the earlier one's objects (all
    # ancestors) and holds only what the commits in between brought.
    later = RepoSource(study["mirror"], offline=True).workspace("acme/calc", study["fix"], tmp_path / "ws3")
    later_store = alternates(later)[0].parent
    assert alternates(later) == [later_store / "objects", store / "objects"]
    counts = dict(line.split(": ") for line in git(later_store, "count-objects", "-v").splitlines())
    assert int(counts["in-pack"]) + int(counts["count"]) == 4  # fix commit, its tree and file, tag v0.2
    assert git(later, "log", "--all", "--format=%H").split() == [study["fix"], study["base"]]
    assert git(later_store, "for-each-ref", "--format=%(refname)").split() == [
        "refs/heads/main", "refs/tags/v0.1", "refs/tags/v0.2"]


@requires("bubblewrap")
def test_a_mini_swe_agent_shell_sees_no_newer_commit_and_none_of_the_study_s_files(study):
    with ScriptedServer(_looks(study)) as srv:
        record = run_predecessor(study["task"], settings(srv), study["out"], repo_source=RepoSource(study["mirror"]))
    events = events_of(study["out"])
    _assert_sees_only_the_task(study, events[1]["text"], events[3]["text"], events[5]["text"])
    assert events[5]["exit_code"] == 0
    isolation = record.isolation
    assert isolation["isolated"] is True and isolation["confinement"] == "bubblewrap", isolation
    assert isolation["newer_commits"] == 0 and isolation["newer_refs"] == [] and isolation["readable"] == []
    assert isolation["git_works"] and isolation["interpreter"] and isolation["network"] == "none"
    checked = " ".join(isolation["checked"])
    for what in ("run record", "output folder", "cache", "mirror", "dataset"):
        assert f"{what}: " in checked
    assert json.loads((study["out"] / "run.json").read_text())["isolation"] == isolation


def test_an_unconfined_run_is_recorded_and_reported_as_not_isolated(study, monkeypatch):
    from takeover.report.isolation_warning import isolation_markdown, run_isolation
    from takeover.report.rows import read_units

    monkeypatch.setenv(sandbox.DISABLE_ENV, "1")  # the isolation removed on purpose
    with ScriptedServer([bash(f"cat {study['canary']}"), bash(SUBMIT)]) as srv:
        record = run_predecessor(study["task"], settings(srv), study["out"], repo_source=RepoSource(study["mirror"]))
    assert "CANARY-CONTENT" in events_of(study["out"])[1]["text"]  # nothing stopped the agent
    isolation = record.isolation
    assert isolation["isolated"] is False and isolation["confinement"] == "none"
    assert any(r.startswith("dataset: ") for r in isolation["readable"])
    assert any("unconfined" in p for p in isolation["problems"])
    # The report of a folder holding this run (and one made before the probe) says so above its tables.
    out = study["out"].parent
    old = out / "old-run"
    old.mkdir()
    data = json.loads((study["out"] / "run.json").read_text())
    data.pop("isolation")
    (old / "run.json").write_text(json.dumps(data))
    # An imported predecessor (recorded by another tool) is listed, not counted in the warning.
    plan = {"name": "t", "stages": {"predecessor": [{"key": "p0", "labels": {"instance_id": "acme__calc-1"}}],
                                    "takeover": [
        {"key": "k1", "labels": {"instance_id": "acme__calc-1", "view": "repo_only", "successor": "scripted",
                                 "point_type": "after_first_source_edit", "point_key": "p1"}},
        {"key": "k2", "labels": {"instance_id": "acme__calc-1", "view": "raw_trace", "successor": "scripted",
                                 "point_type": "after_first_source_edit", "point_key": "p1"}}]}}
    (out / "plan.json").write_text(json.dumps(plan))
    (out / "units" / "takeover").mkdir(parents=True)
    (out / "units" / "predecessor").mkdir(parents=True)
    imported = {"stage": "predecessor", "key": "p0", "status": "done",
                "output": {"file": "trajs/acme__calc-1.traj.json", "record": None, "format": "mini-swe-agent"}}
    (out / "units" / "predecessor" / "p0.json").write_text(json.dumps(imported))
    for key, run_dir in (("k1", study["out"]), ("k2", old)):
        unit = {"stage": "takeover", "key": key, "status": "done", "output": {"run_dir": str(run_dir)}}
        (out / "units" / "takeover" / f"{key}.json").write_text(json.dumps(unit))
    found = run_isolation(read_units(out))
    assert [r["status"] for r in found["runs"]] == ["imported", "not isolated", "not verified"]
    assert found["counts"] == {"isolated": 0, "not isolated": 1, "not verified": 1, "imported": 1}
    assert found["runs"][0]["problems"] == ["recorded by mini-swe-agent, not probed"]
    warning = isolation_markdown(found)
    assert warning.startswith("> **Warning: 2 of 2 agent runs were not isolated**")
    assert "repo_only: not isolated: commands run unconfined" in warning and "raw_trace: not verified" in warning
    from takeover.report import build_report

    report = build_report(out)
    assert report.markdown.split("\n", 2)[2].startswith("> **Warning: 2 of 2 agent runs were not isolated**")
    assert "| takeover | acme__calc-1 | raw_trace | not verified |" in report.markdown
    assert "| predecessor | acme__calc-1 |  | imported |" in report.markdown
    assert "predecessor acme__calc-1" not in report.markdown.split("## ", 1)[0]  # not in the warning
    assert "Warning: 2\nof 2 agent runs were not isolated</strong>" in (out / "report.html").read_text()
    # Only the imported predecessor and isolated runs: no warning.
    assert isolation_markdown({"runs": [found["runs"][0]], "counts": {"imported": 1}}) == ""


def test_takeover_run_refuses_agents_it_cannot_confine_unless_the_experiment_allows_it(monkeypatch):
    monkeypatch.setenv(sandbox.DISABLE_ENV, "1")
    with pytest.raises(InputError, match="cannot be confined here.*allow_unconfined = true") as exc:
        require_confinement("local")
    assert exc.value.field is None or "allow_unconfined" in str(exc.value)
    require_confinement("local", allow_unconfined=True)  # allowed on purpose: the report marks the runs
    require_confinement("docker")  # a container confines them


def test_the_experiment_file_reads_allow_unconfined(tmp_path):
    from takeover.experiments import load_experiment

    base = 'out_dir = "o"\n[dataset]\npath = "t.jsonl"\n[predecessor]\ntrajectories = ["runs"]\n[[successors]]\nmodel = "m"\n'
    (tmp_path / "a.toml").write_text("allow_unconfined = true\n" + base)
    (tmp_path / "b.toml").write_text(base)
    assert load_experiment(tmp_path / "a.toml").allow_unconfined is True
    assert load_experiment(tmp_path / "b.toml").allow_unconfined is False


def test_an_image_repository_carrying_newer_history_is_frozen_in_place(tmp_path, study):
    from takeover.sources.frozen_history import freeze_in_place

    # An older image's /testbed: a full clone (remote, every tag and branch, a reflog) at the base commit
    # plus SWE-bench's setup commit.
    testbed = tmp_path / "testbed"
    git(tmp_path, "clone", "-q", str(study["mirror"] / "acme__calc.git"), str(testbed))
    git(testbed, "checkout", "-q", study["base"])
    (testbed / "setup.cfg").write_text("[x]\n")
    git(testbed, "add", "setup.cfg")
    git(testbed, "commit", "-qm", "SWE-bench")
    head = git(testbed, "rev-parse", "HEAD").strip()
    assert study["fix"] in git(testbed, "log", "--all", "--format=%H")
    removed = freeze_in_place(testbed)
    assert removed[0] == "remote origin" and "the reflog" in removed and removed[-1].endswith("not reachable from HEAD")
    everything = git(testbed, "cat-file", "--batch-all-objects", "--batch-check")
    assert study["fix"] not in everything and study["fix"] not in git(testbed, "log", "--all", "--reflog", "--format=%H")
    assert git(testbed, "rev-parse", "HEAD").strip() == head and git(testbed, "tag").split() == ["v0.1"]
    assert git(testbed, "status", "--porcelain") == "" and freeze_in_place(testbed) == []


@pytest.mark.slow
@requires("docker daemon", "debootstrap")
def test_a_docker_backend_shell_sees_no_newer_commit_and_none_of_the_study_s_files(tiny_docker_task, tmp_path):
    task, source = tiny_docker_task.task, tiny_docker_task.source
    canary = tmp_path / "canary.txt"
    canary.write_text("CANARY-CONTENT\n")
    script = [bash("git log --all --format=%H | wc -l; git rev-list HEAD | wc -l; "
                   "git cat-file --batch-all-objects --batch-check | grep -c commit"),
              bash(f"cat {canary}; ls {tmp_path}; git status --short && git diff && python -c 'print(7 * 6)'"),
              bash(SUBMIT)]
    with ScriptedServer(script) as srv:
        record = run_predecessor(task, settings(srv), tmp_path / "run", repo_source=source,
                                 agent=AgentChoice(runtime="mini-swe-agent", command_backend="docker"))
    events = events_of(tmp_path / "run")
    counts = events[1]["text"].split("<output>")[1].split()[:3]
    assert counts[0] == counts[1] == counts[2]  # every commit the shell finds is an ancestor of HEAD
    assert "CANARY-CONTENT" not in events[3]["text"] and "42" in events[3]["text"]
    isolation = record.isolation
    assert isolation["isolated"] is True and isolation["confinement"] == "docker", json.dumps(isolation)
    assert isolation["newer_commits"] == 0 and isolation["readable"] == [] and isolation["network"] == "none"
    assert isolation["git_works"] and isolation["interpreter"]


@requires("openhands environment", "bubblewrap")
@pytest.mark.slow
def test_an_openhands_shell_sees_no_newer_commit_and_none_of_the_study_s_files(study_in_the_cache):
    from takeover.testing.scripted_server import function_call

    s = study_in_the_cache
    script = [function_call("terminal", command=c) for c in (HISTORY, _places(s), WORKS)]
    with ScriptedServer([*script, function_call("finish", message="looked")]) as srv:
        record = run_predecessor(s["task"], settings(srv), s["out"], repo_source=RepoSource(s["mirror"]),
                                 agent="openhands")
    seen = [e["text"] for e in events_of(s["out"]) if e["kind"] == "observation"]
    _assert_sees_only_the_task(s, seen[0], seen[1], seen[2])
    assert record.isolation["isolated"] is True and record.isolation["newer_commits"] == 0, record.isolation


@requires("bubblewrap")
def test_a_command_runtime_agent_sees_no_newer_commit_and_none_of_the_study_s_files(study, tmp_path):
    from test_agent_command import MODEL, _agent

    agent = tmp_path / "agent"  # the user's agent programs, named by the template: shown read-only
    agent.mkdir()
    looks = agent / "looks.sh"
    looks.write_text(f"{HISTORY}\necho @@\n{_places(study)}\necho @@\n{WORKS}\n")
    template = f"bash {looks} > {{session_file}}.looks 2>&1; {_agent(agent)} {{prompt_file}} {{session_file}} usage"
    record = run_predecessor(study["task"], MODEL, study["out"], repo_source=RepoSource(study["mirror"]),
                             agent=AgentChoice(runtime="command", options={"agent_command": template}))
    history, places, works = (study["out"] / "session" / "session.jsonl.looks").read_text().split("@@\n")
    _assert_sees_only_the_task(study, history, places, works)
    assert str(looks) in record.environment["agent_paths"]  # what the template named, listed in run.json
    assert str(agent) not in record.environment["agent_paths"]  # the file, not the folder around it
    assert record.isolation["isolated"] is True, record.isolation
