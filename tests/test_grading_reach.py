"""Every grading setting reaches the test run through every entry point (docs/protocol.md section 6): the grading
record (:class:`takeover.grading_settings.GradingSettings`) is taken whole by every entry, so a setting given once
on the command line or once in the experiment file is what the backend grades with, whatever the entry.

A probe backend, registered for these tests (``BACKENDS.add``, as a plug-in would be), records what reaches it:
the record (time limit, network, hash seed), its own options and the grading key (verdict rules). Each entry point
is driven with every setting changed from its default, and :data:`REACH` is the table of what reaches the tests:
every setting at every entry, but for the Harbor export, whose tests run in the task's own container under
Harbor (the backend, its options and the network are Harbor's there; the time limit, the verdict rules and the
hash seed reach its verifier)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import make_repo
from prerequisites import requires
from pydantic import BaseModel, ConfigDict
from test_checkpoints import SUBMIT  # noqa: F401  (the submission command write_run ends with)
from test_cli_points_flags import write_run
from test_grading import CALC, GOLD, SPEC, TEST_PATCH, TESTS
from typer.testing import CliRunner

from takeover._util.io import sha256_text
from takeover.checkpoints import load_checkpoint
from takeover.cli import app
from takeover.experiments import load_experiment
from takeover.experiments.planning import DoneCheckpoint, Planner
from takeover.experiments.stages import grade_unit, handoff_state_unit
from takeover.experiments.units import UnitContext, UnitSpec
from takeover.grading import (
    BACKENDS,
    GradeResult,
    TestOutcome,
    grade,
    grade_checkpoint,
    grade_handoff_state,
    grade_predictions,
    handoff_state,
)
from takeover.grading.reuse import EnvironmentKey
from takeover.grading_settings import GradingSettings
from takeover.quickstart import QuickstartOptions
from takeover.quickstart.experiment_config import build_config
from takeover.results import CheckpointOutput, GradeInputs, ImportOutput, TaskInputs, UnitLabels
from takeover.sources.repos import RepoSource, cache_dir
from takeover.sources.tasks import SourceTask
from takeover.views import load_inputs, write_views

#: Each setting changed from its default, as the record, the flags and the experiment file give it.
GIVEN = GradingSettings(backend="probe", timeout=77.0, network=True, hash_seed=7, grading_rules="swebench-4.1",
                        options={"mark": "given"})
FLAGS = ["--backend", "probe", "--grading-timeout", "77", "--network", "--hash-seed", "7", "--grading-rules",
         "swebench-4.1", "--backend-option", "mark=given"]
TABLE = ('[grading]\nbackend = "probe"\ntimeout = 77\nnetwork = true\nhash_seed = 7\ngrading_rules = "swebench-4.1"\n'
         'options = { mark = "given" }\n')
SETTINGS = ("backend", "timeout", "network", "hash_seed", "grading_rules", "options")

#: What reaches the tests, by entry point (True: the given value; a string: why the setting does not apply).
HARBOR_OWN = "the task's own container, under Harbor"
REACH = {
    "takeover grade": dict.fromkeys(SETTINGS, True),
    "takeover checkpoint --state": dict.fromkeys(SETTINGS, True),
    "takeover quickstart": dict.fromkeys(SETTINGS, True),
    "[grading] handoff_state unit": dict.fromkeys(SETTINGS, True),
    "[grading] grade unit": dict.fromkeys(SETTINGS, True),
    "grade_predictions": dict.fromkeys(SETTINGS, True),
    "grade": dict.fromkeys(SETTINGS, True),
    "grade_checkpoint": dict.fromkeys(SETTINGS, True),
    "grade_handoff_state": dict.fromkeys(SETTINGS, True),
    "Inspect task (-T grading=...)": dict.fromkeys(SETTINGS, True),
    "takeover export harbor": {"backend": HARBOR_OWN, "timeout": True, "network": HARBOR_OWN, "hash_seed": True,
                               "grading_rules": True, "options": HARBOR_OWN},
}


class ProbeOptions(BaseModel):
    """The probe's own option: a mark, to see the backend's options arrive."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mark: str = ""


class ProbeBackend:
    """A grading backend that runs no test: it records what reaches it and passes every listed test."""

    name = "probe"
    description = "records what reaches the tests"
    writes_report = False
    uses_sandbox = False
    Options = ProbeOptions

    def __init__(self) -> None:
        self.calls: list[tuple[GradingSettings, ProbeOptions, str]] = []

    def tests_network(self, asked: bool) -> bool:
        return asked

    def environment_key(self, task: SourceTask, options: ProbeOptions) -> EnvironmentKey:
        return EnvironmentKey(env_spec_sha256=sha256_text(options.mark))

    def grade(self, task, prediction, key, log_dir: Path, grading, options, repo_source) -> GradeResult:
        self.calls.append((grading, options, key.grading_rules))
        (log_dir / "test_output.txt").write_text("probe: no test ran\n")
        result = GradeResult(instance_id=task.instance_id, model_name_or_path=prediction.model_name_or_path,
                             backend=self.name, applied=True, resolved=True,
                             FAIL_TO_PASS=TestOutcome(success=list(task.FAIL_TO_PASS)),
                             PASS_TO_PASS=TestOutcome(success=list(task.PASS_TO_PASS)))
        result.handoff_state = handoff_state(result)
        return result


def reached(probe: ProbeBackend) -> dict[str, bool]:
    """Which settings every grading the probe saw was given as :data:`GIVEN` has them (the record, the backend's
    options, the key's verdict rules); the probe must have been called."""
    assert probe.calls, "no grading reached the backend"
    out = {"backend": True}
    for grading, options, rules in probe.calls:
        for name, value in (("timeout", grading.timeout == GIVEN.timeout), ("network", grading.network is True),
                            ("hash_seed", grading.hash_seed == GIVEN.hash_seed),
                            ("grading_rules", rules == GIVEN.grading_rules), ("options", options.mark == "given")):
            out[name] = out.get(name, True) and value
    probe.calls.clear()
    return out


@pytest.fixture
def probe():
    backend = ProbeBackend()
    BACKENDS.add("probe", backend)
    try:
        yield backend
    finally:
        BACKENDS.remove("probe")


@pytest.fixture
def calc(tmp_path, monkeypatch):
    """The calculator task, its mirror and dataset, and a predecessor run whose first source edit is the fix."""
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": CALC, "tests/test_calc.py": TESTS, "conftest.py": ""},
                       bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    row = {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "problem_statement": "add subtracts",
           "version": "0.1", "patch": GOLD, "test_patch": TEST_PATCH, "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
           "PASS_TO_PASS": ["tests/test_calc.py::test_mul"], "takeover_env_spec": SPEC}
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(json.dumps(row) + "\n")
    run = write_run(tmp_path / "run.json", "acme__calc-1", [("sed -i 's/a - b/a + b/' calc.py", "", 0)], GOLD)
    return SourceTask.model_validate(row), dataset, tmp_path / "mirror", run


def _checkpoint(calc, out: Path, *flags: str):
    _, dataset, mirror, run = calc
    return CliRunner().invoke(app, ["checkpoint", str(run), "--dataset", str(dataset), "--mirror", str(mirror),
                                    "--offline", "--point-type", "after_first_source_edit", "--out-dir", str(out),
                                    "--no-workspace", *flags])


def test_every_grading_setting_reaches_the_tests_through_every_entry_point(tmp_path, probe, calc):
    task, dataset, mirror, run = calc
    source = RepoSource(mirror, offline=True)
    found: dict[str, dict[str, bool | str]] = {}

    # The command line: each setting once, as a flag.
    result = CliRunner().invoke(app, ["grade", "--dataset", str(dataset), "--instance-id", task.instance_id, "--gold",
                                      "--out-dir", str(tmp_path / "grades"), "--json", *FLAGS])
    assert result.exit_code == 0, result.output
    found["takeover grade"] = reached(probe)
    result = _checkpoint(calc, tmp_path / "cp", "--state", *FLAGS)
    assert result.exit_code == 0, result.output
    assert load_checkpoint(tmp_path / "cp")[0].handoff_state == "resolved_preserve"
    found["takeover checkpoint --state"] = reached(probe)
    # The quickstart's grading flags are the option group's (tests/test_cli_quickstart_flags.py passes them);
    # its experiment holds the record whole, and its units grade as the experiment's below.
    quickstart = build_config(QuickstartOptions(grading=GIVEN), dataset, [run], _endpoint())
    found["takeover quickstart"] = dict.fromkeys(SETTINGS, quickstart.grading == GIVEN)

    # The experiment file: each setting once, in [grading]; through the planner's unit inputs (their JSON).
    (tmp_path / "e.toml").write_text(f'out_dir = "out"\n[dataset]\npath = "{dataset}"\n[predecessor]\n'
                                     f'trajectories = ["{run}"]\n[[successors]]\nmodel = "m"\n' + TABLE)
    config = load_experiment(tmp_path / "e.toml")
    assert config.grading == GIVEN
    task_file = tmp_path / "task.json"
    task_file.write_text(task.model_dump_json())
    files = {task.instance_id: TaskInputs(instance_id=task.instance_id, task=str(task_file), task_sha256="t")}
    checkpoint, _ = load_checkpoint(tmp_path / "cp")
    imported = ImportOutput(file=str(run), record=None, format="mini-swe-agent", agent_events=4, prompt_tokens=None,
                            completion_tokens=None, exit_status=None, final_patch_files=[])
    done = DoneCheckpoint(UnitLabels(instance_id=task.instance_id, point_type="after_first_source_edit", point_key="c"),
                          CheckpointOutput(checkpoint_dir=str(tmp_path / "cp"), patch_sha256=checkpoint.patch_sha256,
                                           files=checkpoint.files, method=checkpoint.method,
                                           event_index=checkpoint.point.event_index, trajectory=imported), "c")
    (spec,) = Planner(config, files, source).handoff_states([done])
    context = {"out_dir": str(tmp_path / "out"), "key": "k", "repo_source": source}
    for stage, function, inputs in (
            ("handoff_state", handoff_state_unit, spec.inputs),
            ("grade", grade_unit, UnitSpec(stage="grade", fn=grade_unit, inputs=GradeInputs(
                **files[task.instance_id].model_dump(), takeover_key="t", patch_sha256="p", patch_path=None,
                checkpoint_dir=str(tmp_path / "cp"), grading=config.grading)).inputs)):
        work = tmp_path / "out" / "work" / stage
        work.mkdir(parents=True)
        inputs = json.loads(json.dumps(inputs))  # what a worker receives: JSON, the record in its stable form
        function(inputs, UnitContext(work_dir=str(work), stage=stage, **context))
        found[f"[grading] {stage} unit"] = reached(probe)

    # The Python API: the record, whole.
    grade_predictions([task], [{"instance_id": task.instance_id, "model_name_or_path": "p", "model_patch": GOLD}],
                      GIVEN, log_dir=tmp_path / "api", repo_source=source)
    found["grade_predictions"] = reached(probe)
    grade(task, GOLD, GIVEN, log_dir=tmp_path / "api", repo_source=source, force=True)
    found["grade"] = reached(probe)
    grade_checkpoint(task, "", GIVEN, log_dir=tmp_path / "api", repo_source=source, force=True)
    found["grade_checkpoint"] = reached(probe)
    assert grade_handoff_state(task, GOLD, GIVEN, log_dir=tmp_path / "api2", repo_source=source) == "resolved_preserve"
    found["grade_handoff_state"] = reached(probe)

    # The Harbor export: the verifier's time limit, rules and seed (its tests run in the task's own container).
    found["Inspect task (-T grading=...)"] = _inspect_reach(tmp_path, probe, calc)
    found["takeover export harbor"] = _harbor_reach(tmp_path)
    assert found == REACH


def _endpoint():
    from takeover.llm import ModelSettings

    return ModelSettings(model="m", base_url="http://127.0.0.1:9/v1")


def _inspect_reach(tmp_path: Path, probe: ProbeBackend, calc) -> dict[str, bool]:
    """The Inspect task with ``-T grading=...`` (a mapping, as Inspect reads ``-T``): evaluated here, with
    Inspect's mock model, on the checkpoint's repo_only view."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval

    from takeover.inspect_task.task import handoff

    _, dataset, mirror, run = calc
    # The scorer grades into the cache (its default log folder), where checkpoint --state stored this very
    # grading: it would be reused there, under the same key, without reaching the backend again.
    shutil.rmtree(cache_dir() / "grading")
    write_views(load_inputs(run, None, dataset, checkpoint_dir=tmp_path / "cp"), ["repo_only"], tmp_path / "cp" / "views")
    (log,) = inspect_eval(handoff(checkpoints=str(tmp_path / "cp"), dataset=str(dataset), views="repo_only",
                                  mirror=str(mirror), offline=True, grading=GIVEN.model_dump(mode="json")),
                          model="mockllm/model", message_limit=2, log_dir=str(tmp_path / "inspect"), display="none")
    assert log.status == "success", log.error
    assert len(log.samples) == 1, log.samples
    score = log.samples[0].scores["handoff_scorer"]
    assert score.metadata["grading_error"] is None, score
    return reached(probe)


def _harbor_reach(tmp_path: Path) -> dict[str, bool | str]:
    """What of the record an exported Harbor task's verifier holds (task.toml, config.json, test.sh)."""
    from docker_images import tiny_task
    from test_harbor import _checkpoint as harbor_checkpoint

    task, source = tiny_task(tmp_path / "harbor-repo")
    (tmp_path / "harbor").mkdir()
    cps, dataset = harbor_checkpoint(tmp_path / "harbor", task, source)
    result = CliRunner().invoke(app, ["export", "harbor", str(cps), "--dataset", str(dataset), "--mirror",
                                      str(source.mirror), "--offline", "--out-dir", str(tmp_path / "tasks"), "--view",
                                      "repo_only", "--image", "example/tiny:1", "--grading-timeout", "77",
                                      "--hash-seed", "7", "--grading-rules", "swebench-4.1"])
    assert result.exit_code == 0, result.output
    (folder,) = [Path(line) for line in result.stdout.splitlines() if line.strip()]
    config = json.loads((folder / "tests" / "config.json").read_text())
    return {"backend": HARBOR_OWN, "timeout": "timeout_sec = 77.0" in (folder / "task.toml").read_text(),
            "network": HARBOR_OWN, "hash_seed": "export PYTHONHASHSEED=7" in (folder / "tests" / "test.sh").read_text(),
            "grading_rules": config["grading_rules"] == "swebench-4.1", "options": HARBOR_OWN}


@requires("inspect_ai")
def test_the_inspect_task_refuses_a_grading_record_it_cannot_read(calc):
    from takeover.errors import InputError
    from takeover.inspect_task.task import handoff

    _, dataset, _, _ = calc
    with pytest.raises(InputError, match="grading: field 'timeot'"):
        handoff(checkpoints=str(dataset.parent), dataset=str(dataset), grading={"timeot": 60})
