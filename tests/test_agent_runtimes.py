"""Agent runtimes are chosen by name (``RunSpec.agent``, ``--agent``, the experiment file's ``agent`` keys)
from ``takeover.agents.RUNTIMES``: a second runtime, defined here in a few lines, is registered, chosen,
recorded in run.json and named in the report; one that cannot honour a limit refuses before the run; the
command backend's flag is ``--command-backend``; and run folders and unit files written by an earlier
version say so and are not reused (docs/protocol.md section 8.4)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from conftest import git, make_repo
from test_agent_runs import _checkpoint_folder
from test_agents import bash, events_of, settings, tree_file
from typer.testing import CliRunner

from takeover.agent_choice import NoOptions
from takeover.agents import AgentChoice, AgentRun, ExitStatus, RunLimits, RuntimeOutcome, read_run
from takeover.agents.command_backends import COMMAND_BACKENDS
from takeover.agents.runs import run_predecessor, run_takeover
from takeover.agents.runtimes import RUNTIMES
from takeover.cli import app
from takeover.errors import InputError
from takeover.experiments import load_experiment, run_experiment
from takeover.experiments.planning import Planner
from takeover.experiments.units import UNITS_FORMAT, load_results, set_aside_earlier_units
from takeover.llm import ModelClient
from takeover.results import TaskInputs
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.testing.scripted_server import ScriptedServer, count_words, prompt_words

EARLIER = Path(__file__).parent / "data" / "earlier_version"


class ScribeRuntime:
    """A runtime of a dozen lines: one model call whose reply is ``FILE\\nTEXT``; it writes the file in the
    workspace and submits its name. It cannot count prompt tokens while it runs, so it refuses that limit."""

    Options = NoOptions

    def check(self, limits, choice, commands):
        if limits.prompt_token_limit is not None:
            raise InputError("agent scribe", "cannot stop at a prompt-token limit", field="prompt_token_limit")

    def run(self, run: AgentRun) -> RuntimeOutcome:
        rec = run.recorder
        messages = [{"role": "system", "content": "You write one file."}, {"role": "user", "content": run.spec.prompt}]
        run.start_clock()
        rec.initial_prompt(messages)
        t0 = time.perf_counter()
        reply = ModelClient(run.spec.model).complete(messages)
        call = rec.add_call(reply.usage, reply.attempts, time.perf_counter() - t0, format_error=False, cost=0.0)
        name, _, text = reply.content.partition("\n")
        action = rec.add_event(kind="action", source="agent", type="file_edit", text=reply.content, path=name,
                               edit="create", file_text=text, llm_call=call)
        (run.workspace / name).write_text(text)
        action.snapshot = rec.take_snapshot()
        rec.add_event(kind="observation", source="environment", type="file_edit", text=f"wrote {name}",
                      cause=action.index, snapshot=rec.snapshot)
        rec.flush()
        return RuntimeOutcome(ExitStatus.submitted, submission=name)


@pytest.fixture
def scribe():
    """The scribe runtime registered as ``scribe`` for one test (one line: its registry entry)."""
    RUNTIMES.add("scribe", ScribeRuntime())
    try:
        yield "scribe"
    finally:
        RUNTIMES.remove("scribe")


NOTE = {"content": "NOTES.md\nadd() must add\n"}


def test_a_registered_runtime_is_chosen_by_name_and_its_run_reads_back_as_any_other(tmp_path, task_and_mirror,
                                                                                     scribe):
    task, mirror = task_and_mirror
    out = tmp_path / "run"
    with ScriptedServer([NOTE]) as srv:
        record = run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), agent=scribe)
    assert record.agent == "scribe" and record.exit_status is ExitStatus.submitted and record.finished
    assert record.submission == "NOTES.md" and record.inputs["agent"]["runtime"] == "scribe"
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["agent"] == run_json["inputs"]["agent"]["runtime"] == "scribe"
    acc = record.accounting
    assert (acc.llm_calls, acc.agent_events, acc.actions) == (1, 2, 1)
    assert acc.prompt_tokens == prompt_words(srv.requests[0]) and acc.completion_tokens == count_words(NOTE["content"])
    # The generic part did the rest: starting state, snapshots kept by refs, the final patch.
    events = events_of(out)
    assert events[0]["snapshot"] == events[1]["snapshot"] == record.final_snapshot
    assert tree_file(out / "workspace", events[0]["snapshot"], "NOTES.md") == "add() must add\n"
    refs = git(out / "workspace", "for-each-ref", "--format=%(objectname)", "refs/takeover/snapshots/").split()
    assert record.final_snapshot in refs and record.starting_state in refs
    assert "+add() must add" in (out / "patch.diff").read_text()
    traj = read_run(out)
    assert traj.agent_events == 2 and traj.prompt_tokens == acc.prompt_tokens and traj.events[0].path == "NOTES.md"

    # The same inputs under another runtime are another run: the folder is not reused for it.
    with ScriptedServer([]) as srv, pytest.raises(InputError, match="differs in agent"):
        run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror))
    with ScriptedServer([]) as srv:  # under its own runtime it is found done
        again = run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), agent=scribe)
    assert again == record and srv.requests == []


def test_a_runtime_that_cannot_honour_a_limit_says_so_before_the_run(tmp_path, task_and_mirror, scribe):
    task, mirror = task_and_mirror
    limits = RunLimits(prompt_token_limit=1000)
    with ScriptedServer([NOTE]) as srv, pytest.raises(InputError) as exc:
        run_predecessor(task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror), agent=scribe,
                        limits=limits)
    assert exc.value.field == "prompt_token_limit" and srv.requests == [] and not (tmp_path / "run").exists()
    with pytest.raises(InputError, match="unknown agent runtime 'nobody': use mini-swe-agent or openhands or command or scribe"):
        run_takeover(_checkpoint_folder(tmp_path, task), "repo_only", settings(srv), tmp_path / "t", agent="nobody")

    # In an experiment file, before any unit: the file, the successor and the limit are named.
    (tmp_path / "e.toml").write_text(
        'out_dir = "o"\n[dataset]\npath = "tasks.jsonl"\n[predecessor]\ntrajectories = ["runs"]\n'
        '[[successors]]\nmodel = "m"\nagent = "scribe"\n[limits]\nprompt_token_limit = 1000\n')
    with pytest.raises(InputError, match=r"successors\[0\]\.agent = 'scribe': cannot stop at a prompt-token limit "
                                         r"\(limits\.prompt_token_limit\)") as exc:
        load_experiment(tmp_path / "e.toml")
    assert exc.value.path == str(tmp_path / "e.toml")


def _agent_run(tmp_path, task, mirror, srv, *flags: str):
    tmp_path.mkdir(exist_ok=True)
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    return CliRunner().invoke(app, [
        "agent", "run", "--dataset", str(dataset), "--instance-id", task.instance_id, "--model", "scripted",
        "--base-url", srv.base_url, "--api-key-env", "", "--mirror", str(mirror), "--offline",
        "--out-dir", str(tmp_path / "run"), *flags])


def test_agent_run_picks_the_runtime_with_agent_and_the_command_backend_with_command_backend(
        tmp_path, task_and_mirror, scribe):
    task, mirror = task_and_mirror
    with ScriptedServer([NOTE]) as srv:
        result = _agent_run(tmp_path, task, mirror, srv, "--agent", scribe, "--command-backend", "local")
    assert result.exit_code == 0, result.output
    assert f"predecessor run {task.instance_id} (scribe): submitted" in result.output
    run_json = json.loads((tmp_path / "run" / "run.json").read_text())
    # run.json names both; the inputs (the run's key) hold the choice in its stable form: the default backend left out
    assert (run_json["agent"], run_json["command_backend"], run_json["inputs"]["agent"]) == (
        "scribe", "local", {"runtime": "scribe"})
    assert "backend" not in run_json and "backend" not in run_json["inputs"]

    with ScriptedServer([]) as srv:
        bad = _agent_run(tmp_path / "b", task, mirror, srv, "--agent", "nobody")
        worse = _agent_run(tmp_path / "c", task, mirror, srv, "--command-backend", "modal")
    assert bad.exit_code == 2 and "--agent: unknown agent runtime 'nobody': use mini-swe-agent or openhands or command or scribe" in bad.output
    assert worse.exit_code == 2 and f"unknown command backend 'modal': use {' or '.join(COMMAND_BACKENDS)}" in (
        worse.output)


def test_command_backend_on_agent_run_is_recorded(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    with ScriptedServer([bash("ls")]) as srv:
        result = _agent_run(tmp_path, task, mirror, srv, "--command-backend", "local", "--step-limit", "1")
    assert result.exit_code == 0, result.output
    run_json = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run_json["command_backend"] == "local" and run_json["exit_status"] == "step_limit"
    assert run_json["agent"] == "mini-swe-agent" and run_json["inputs"]["agent"] == {}  # the default choice


# --- experiments ---------------------------------------------------------------------------------------

CALC = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"


def _reply(request: dict, n: int) -> dict:
    """The predecessor edits calc.py wrongly; the mini-swe-agent successor fixes it; the scribe writes a note."""
    messages = request["messages"]
    if messages[0]["content"] == "You write one file.":
        return NOTE
    if "<takeover_instructions>" in messages[1]["content"]:
        fix = "sed -i 's/a [*] b/a + b/' calc.py"
        return bash(fix) if sum(m["role"] == "assistant" for m in messages) == 0 else bash(
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    return [bash("sed -i 's/a - b/a * b/' calc.py"), bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")][
        min(1, sum(m["role"] == "assistant" for m in messages))]


def write_calc_study(tmp_path: Path) -> None:
    """A study's inputs in ``tmp_path``: ``mirror/acme__calc.git`` (add() subtracts) and ``tasks.jsonl`` with
    its one task, graded by a test that add() adds."""
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": CALC}, bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    scratch, _ = make_repo(tmp_path / "scratch", {"calc.py": CALC})
    (scratch / "test_calc.py").write_text(TESTS)
    git(scratch, "add", "-N", "test_calc.py")
    row = {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "version": "0.1",
           "problem_statement": "add() returns a - b; it must return a + b.", "patch": "",
           "test_patch": git(scratch, "diff"), "FAIL_TO_PASS": ["test_calc.py::test_add"], "PASS_TO_PASS": [],
           "difficulty": "15 min - 1 hour",
           "takeover_env_spec": {"python": None, "test_cmd": "pytest -rA", "log_parser": "pytest"}}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(row) + "\n")


@pytest.mark.slow
def test_two_successors_that_differ_only_in_agent_are_two_successors_of_the_report(tmp_path, scribe):
    write_calc_study(tmp_path)
    with ScriptedServer(_reply) as srv:
        model = f'model = "scripted"\nbase_url = "{srv.base_url}"\napi_key_env = ""\nretries = 0\n'
        (tmp_path / "e.toml").write_text(
            f'out_dir = "out"\nmirror = "mirror"\noffline = true\nviews = ["repo_only"]\n'
            f'point_types = ["after_first_source_edit"]\nbootstrap_resamples = 50\n'
            f'[dataset]\npath = "tasks.jsonl"\ndifficulties = ["15 min - 1 hour"]\n'
            f'[predecessor]\nagent = "mini-swe-agent"\n[predecessor.model]\n{model}'
            f'[[successors]]\n{model}[[successors]]\n{model}agent = "scribe"\n'
            f'[limits]\nstep_limit = 4\ncommand_timeout = 30\n[grading]\ntimeout = 120\n')
        config = load_experiment(tmp_path / "e.toml")
        summary = run_experiment(config, executor="inline", progress=False)
    assert summary.problems == [], summary.problems_by_reason()
    names = ["scripted (mini-swe-agent)", "scripted (scribe)"]
    assert config.successor_names == names
    assert json.loads((config.out / "plan.json").read_text())["successors"] == names
    takeovers = load_results(config.out, "takeover")
    by_agent = {AgentChoice.model_validate(r.inputs["agent"]).runtime: r for r in takeovers.values()}
    assert sorted(by_agent) == ["mini-swe-agent", "scribe"] and len(takeovers) == 2
    for agent, unit in by_agent.items():
        assert json.loads((Path(unit.output["run_dir"]) / "run.json").read_text())["agent"] == agent
        assert unit.labels["successor"] == f"scripted ({agent})"
    report = json.loads((config.out / "report.json").read_text())
    assert sorted(e["successor"] for e in report["summary"]) == names
    solved = {e["successor"]: e["solved_rate"] for e in report["summary"]}
    assert solved == {"scripted (mini-swe-agent)": 1.0, "scripted (scribe)": 0.0}  # the scribe only wrote a note


def test_the_agent_choice_of_an_experiment_reaches_its_agent_units_whole_and_enters_the_key(tmp_path):
    base = ('out_dir = "/nonexistent/out"\n[dataset]\npath = "tasks.jsonl"\n[predecessor]\n{}[predecessor.model]\n'
            'model = "p"\n[[successors]]\nmodel = "s"\n')
    keys = {}
    for name, agent in (("default", ""), ("local", 'agent = { command_backend = "local" }\n'),
                        ("docker", 'agent = { command_backend = "docker" }\n')):
        (tmp_path / f"{name}.toml").write_text(base.format(agent))
        config = load_experiment(tmp_path / f"{name}.toml")
        files = {"a__b-1": TaskInputs(instance_id="a__b-1", task="/nonexistent/out/tasks/a__b-1.json", task_sha256="0")}
        [spec] = Planner(config, files, RepoSource()).predecessors([SourceTask(instance_id="a__b-1", repo="a/b",
                                                                               base_commit="0" * 40, problem_statement="x")], None, {})
        keys[name] = spec.key
        # the choice whole, in its stable form: the defaults left out (the default choice is {})
        assert spec.inputs["agent"] == ({"command_backend": "docker"} if name == "docker" else {})
        assert AgentChoice.model_validate(spec.inputs["agent"]).command_backend == ("docker" if name == "docker" else "local")
        assert "command_backend" not in spec.inputs and "backend" not in spec.inputs
    assert keys["default"] == keys["local"] != keys["docker"]
    (tmp_path / "bad.toml").write_text(base.format('agent = { command_backend = "modal" }\n'))
    with pytest.raises(InputError, match="unknown command backend 'modal': use local or docker") as exc:
        load_experiment(tmp_path / "bad.toml")
    assert exc.value.field == "predecessor.agent"
    (tmp_path / "same.toml").write_text(base.format("") + '[[successors]]\nmodel = "s"\nagent = "mini-swe-agent"\n')
    with pytest.raises(InputError, match="successors must differ in model or agent"):
        load_experiment(tmp_path / "same.toml")


def test_successor_names_name_the_runtime_unless_every_successor_runs_under_the_default(tmp_path, scribe):
    base = 'out_dir = "o"\n[dataset]\npath = "tasks.jsonl"\n[predecessor]\ntrajectories = ["runs"]\n'
    cases = {
        '[[successors]]\nmodel = "a"\n[[successors]]\nmodel = "b"\n': ["a", "b"],
        '[[successors]]\nmodel = "a"\nagent = "scribe"\n': ["a (scribe)"],
        '[[successors]]\nmodel = "a"\n[[successors]]\nmodel = "b"\nagent = "scribe"\n': ["a (mini-swe-agent)",
                                                                                    "b (scribe)"],
    }
    for i, (tables, names) in enumerate(cases.items()):
        (tmp_path / f"{i}.toml").write_text(base + tables)
        assert load_experiment(tmp_path / f"{i}.toml").successor_names == names


# --- folders written before runtimes had names ----------------------------------------------------------


def test_run_folders_of_an_earlier_version_say_so_and_are_still_read(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    earlier = json.loads((EARLIER / "run" / "run.json").read_text())
    assert earlier["backend"] == "local" and "agent" not in earlier and "command_backend" not in earlier
    assert earlier["base_commit"] == task.base_commit  # the calculator task, built the same way
    shutil.copytree(EARLIER / "run", tmp_path / "run")
    shutil.copytree(EARLIER / "takeover_run", tmp_path / "takeover")
    folder = _checkpoint_folder(tmp_path, task)
    with ScriptedServer([]) as srv:
        with pytest.raises(InputError, match="holds a run written by an earlier version of takeover"):
            run_predecessor(task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror),
                            limits=RunLimits(step_limit=2))
        with pytest.raises(InputError, match="holds a run written by an earlier version of takeover"):
            run_takeover(folder, "repo_only", settings(srv), tmp_path / "takeover", task=task,
                         repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1))
    assert srv.requests == []
    # Its files are still read: the run shows and imports as before.
    assert read_run(tmp_path / "run").agent_events == earlier["accounting"]["agent_events"]
    assert json.loads((tmp_path / "run" / "run.json").read_text()) == earlier  # untouched


def test_experiment_units_of_an_earlier_version_say_so_and_are_recomputed_not_mixed(tmp_path):
    """The unit files of an experiment written by the earlier version (tests/data/earlier_version): the
    output folder says so in one line, and its units are moved aside, byte for byte, so that today's
    units are computed afresh and never mixed with them."""
    out = tmp_path / "out"
    shutil.copytree(EARLIER / "experiment" / "units", out / "units")
    stored = sorted(p.relative_to(out / "units") for p in (out / "units").rglob("*.json"))
    assert len(stored) == 10
    note = set_aside_earlier_units(out)
    assert note == (f"{out / 'units'} was written by an earlier version of takeover (unit format 1, now "
                    f"{UNITS_FORMAT}): its units are recomputed, not reused; they were moved to "
                    f"{out / 'units.earlier-1'}")
    assert [p.name for p in (out / "units").iterdir()] == ["FORMAT"] and load_results(out, "predecessor") == {}
    aside = out / "units.earlier-1"
    assert sorted(p.relative_to(aside) for p in aside.rglob("*.json")) == stored
    for path in aside.rglob("*.json"):
        assert path.read_bytes() == (EARLIER / "experiment" / "units" / path.relative_to(aside)).read_bytes()
    assert set_aside_earlier_units(out) is None  # today's folder stays as it is


def test_a_study_folder_of_the_unit_format_before_the_stable_form_says_so_and_is_recomputed(tmp_path):
    """Unit keys changed once when every record came to be keyed in its stable form (unit format 3): a folder of
    format 2 says so in one line, and its units are moved aside whole (never reused under the new keys, never
    lost), as for any earlier format."""
    assert UNITS_FORMAT == 3
    out = tmp_path / "out"
    unit = out / "units" / "grade" / "0123456789abcdef.json"
    unit.parent.mkdir(parents=True)
    (out / "units" / "FORMAT").write_text("2\n")
    unit.write_text('{"stage": "grade", "key": "0123456789abcdef", "status": "done"}')
    note = set_aside_earlier_units(out)
    assert note == (f"{out / 'units'} was written by an earlier version of takeover (unit format 2, now 3): its "
                    f"units are recomputed, not reused; they were moved to {out / 'units.earlier-2'}")
    assert (out / "units.earlier-2" / "grade" / unit.name).is_file() and not unit.exists()
    assert (out / "units" / "FORMAT").read_text() == "3\n"
