"""The package layout: module size, names, import circles and the data-flow layers (benchmarks/check_layout.py).

The checker reads the code with ``ast`` and imports nothing; these tests run it as a library. The first
test is the layout of ``src/takeover`` itself; the others pin each rule on a small package written here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_layout", ROOT / "benchmarks" / "check_layout.py")
check_layout = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("check_layout", check_layout)
_spec.loader.exec_module(check_layout)

LAYERS = (("", "base"), ("middle",), ("top", "cli"))


def test_src_takeover_breaks_no_layout_rule():
    report = check_layout.check(ROOT / "src" / "takeover")
    assert not report.violations, check_layout.format_report(report)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "takeover"
    for rel, text in {"__init__.py": "", **files}.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return src


def _rules(src: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for v in check_layout.check(src, layers=LAYERS).violations:
        found.setdefault(v.rule, []).append(f"{v.where}: {v.detail}")
    return found


def test_a_package_that_follows_the_flow_passes(tmp_path):
    src = _package(tmp_path, {
        "base.py": "X = 1\n",
        "middle/__init__.py": "from takeover.middle.part import Y\n",
        "middle/part.py": "from takeover import base\nfrom takeover.base import X\nY = X\n",
        "top.py": "import importlib.metadata\nfrom .middle import Y\n\n\ndef version():\n"
                  "    return importlib.metadata.version('pip')\n",
        "cli/base.py": "from takeover.top import version\n",  # a command may reuse a module's name
    })
    assert _rules(src) == {}


def test_an_import_from_a_later_layer_is_reported(tmp_path):
    src = _package(tmp_path, {"base.py": "from takeover.top import Z\n", "top.py": "Z = 1\n"})
    assert _rules(src) == {"layer": ["takeover/base.py:1: takeover.base (layer 0) imports takeover.top (layer 2)"]}


def test_an_import_circle_is_reported_with_its_edges(tmp_path):
    src = _package(tmp_path, {
        "middle/a.py": "from takeover.middle.b import B\nA = 1\n",
        "middle/b.py": "def f():\n    from takeover.middle.a import A\n    return A\nB = 1\n",
    })
    rules = _rules(src)
    cycle = ("takeover.middle.a <-> takeover.middle.b: takeover.middle.a -> takeover.middle.b; "
             "takeover.middle.b -> takeover.middle.a (lazy)")
    assert rules["cycle"] == [cycle]
    lazy = "takeover/middle/b.py:2: imports takeover.middle.a inside a function: import it at the top (or move the code)"
    assert rules["lazy-import"] == [lazy]


def test_size_names_and_unplaced_modules_are_reported(tmp_path):
    big = "x = 1\n" * check_layout.MAX_LINES
    src = _package(tmp_path, {"base.py": big, "middle/base.py": "", "extra.py": "", "cli/middle.py": ""})
    rules = _rules(src)
    assert rules["size"] == [f"takeover/base.py: {check_layout.MAX_LINES} lines (every module under 500)"]
    assert rules["duplicate-name"] == ["base.py: 2 modules: takeover/base.py, takeover/middle/base.py"]
    assert [r.split(":")[0] for r in rules["unplaced"]] == ["takeover/extra.py"]


def test_hidden_imports_fallbacks_and_references_are_reported(tmp_path):
    src = _package(tmp_path, {
        "top.py": (
            "import importlib\n"
            "try:\n    from takeover.middle import M\nexcept ImportError:\n    M = None\n"
            "try:\n    import yaml\nexcept ImportError:\n    yaml = None\n"  # a third-party fallback is fine
            "\n\ndef load():\n    from takeover import base\n    return base\n"
            "try:\n    B = load()\nexcept (OSError, ModuleNotFoundError):\n    B = None\n"
            "R = importlib.import_module('takeover.base')\n"
            "S = importlib.util.find_spec('takeover.middle')\n"
            "T = importlib.util.find_spec('yaml')\n"
        ),
        "middle/__init__.py": "M = 1  # added for issue 12, see PROTOCOL.md\n",
        "base.py": "from takeover.gone import G\n",
    })
    rules = _rules(src)
    assert [r.split(": ", 1)[1] for r in rules["import-fallback"]] == [
        "except ImportError around takeover.middle: our own modules are always installed",
        "except ImportError around load() (which imports takeover modules): our own modules are always installed",
    ]
    assert [r.split(":")[1] for r in rules["importlib"]] == ["19", "20"]
    assert rules["reference"] == ["takeover/middle/__init__.py:1: mentions 'issue 12'",
                                  "takeover/middle/__init__.py:1: mentions 'PROTOCOL.md'"]
    assert rules["unresolved"] == ["takeover/base.py:1: imports takeover.gone, which does not exist"]
    assert len(rules["lazy-import"]) == 1


def test_the_command_line_prints_figures_and_exits_1_on_violations(tmp_path, capsys):
    src = _package(tmp_path, {"sources.py": "from takeover.report import Z\n", "report.py": "Z = 1\n"})
    assert check_layout.main([str(src)]) == 1
    out = capsys.readouterr().out
    assert "largest modules" in out and "== layer: no import from a later layer (1)" in out
    assert check_layout.main([str(tmp_path / "missing")]) == 2


def test_citations_must_name_sections_the_protocol_document_has(tmp_path):
    src = _package(tmp_path, {
        "base.py": '"""Rules (docs/protocol.md section 3; docs/protocol.md\n    sections 2-4)."""\n',
        "middle/__init__.py": "# docs/protocol.md s. 3, 9\n",
    })
    protocol = tmp_path / "protocol.md"
    protocol.write_text("# The protocol\n\n## 2. Tasks\n\n## 3. Files\n\n### 3.1 Tests\n\n## 4. Points\n")
    rules = check_layout.check(src, layers=LAYERS, protocol=protocol).violations
    assert [(v.rule, v.where, v.detail.split(":")[0]) for v in rules] == [
        ("citation", "takeover/middle/__init__.py:1", "cites docs/protocol.md s. 3, 9"),
    ]
    protocol.unlink()
    assert {v.where for v in check_layout.check(src, layers=LAYERS, protocol=protocol).violations} == {
        "takeover/base.py:1", "takeover/middle/__init__.py:1"}


FAKE_OPTIONS = (
    "import typer\nfrom typing import Annotated\n"
    'TIMEOUT_HELP = "Seconds per model request."\n'
    'VIEW_HELP = "Handoff view."\n'
    'TimeoutOption = Annotated[float, typer.Option("--timeout", help=TIMEOUT_HELP)]\n'
)


def test_a_flag_with_one_meaning_per_setting_passes(tmp_path):
    """A shared option counts once however many commands use it; help built on a shared constant means
    what the constant means; a hidden old spelling is not read."""
    src = _package(tmp_path, {
        "cli/options.py": FAKE_OPTIONS,
        "cli/views.py": "import typer\nfrom takeover.cli.options import VIEW_HELP, TimeoutOption\n\n\n"
                        "def views(timeout: TimeoutOption = 300.0,\n"
                        '          view: list[str] = typer.Option(None, "--view", help=f"{VIEW_HELP} Repeatable."),\n'
                        '          out: str = typer.Option(None, "--out", hidden=True, help="Old: a file.")):\n'
                        "    pass\n",
        "cli/handoff.py": "import typer\nfrom takeover.cli.options import VIEW_HELP, TimeoutOption\n\n\n"
                          "def handoff(timeout: TimeoutOption = 300.0,\n"
                          '            view: str = typer.Option(None, "--view", help=VIEW_HELP + " One."),\n'
                          '            out: str = typer.Option(None, "--out", hidden=True, help="Old: a folder.")):\n'
                          "    pass\n",
    })
    assert "flag-meaning" not in _rules(src)
    meanings = check_layout.flag_meanings(check_layout._load(src), src)
    assert {flag: list(m) for flag, m in meanings.items()} == {"--timeout": ["Seconds per model request."],
                                                               "--view": ["Handoff view."]}


def test_a_flag_that_names_two_settings_is_reported_with_each_declaration(tmp_path):
    src = _package(tmp_path, {
        "cli/options.py": FAKE_OPTIONS,
        "cli/views.py": "from takeover.cli.options import TimeoutOption\n\n\n"
                        "def views(timeout: TimeoutOption = 300.0):\n    pass\n",
        "cli/points.py": "import typer\n"
                         'REPLAY_HELP = "Seconds per replayed command."\n\n\n'
                         'def points(timeout: float = typer.Option(300.0, "--timeout", help=REPLAY_HELP),\n'
                         '           env: bool = typer.Option(True, "--env/--no-env", help="With the environment.")):\n'
                         "    pass\n",
        "cli/grade.py": "import typer\n\n\n"
                        'def grade(timeout: float = typer.Option(1800.0, "--timeout", help="Seconds per test run."),\n'
                        '          env: bool = typer.Option(True, "--env", help="With the environment.")):\n'
                        "    pass\n",
    })
    assert _rules(src) == {"flag-meaning": [(
        "--timeout: 3 settings: takeover/cli/grade.py:4: 'Seconds per test run.'; "
        "takeover/cli/options.py:5: 'Seconds per model request.'; "
        "takeover/cli/points.py:5: 'Seconds per replayed command.'")]}


def test_a_pending_flag_clash_is_allowed_while_it_lasts_and_reported_when_gone(tmp_path):
    clash = {
        "cli/options.py": FAKE_OPTIONS,
        "cli/agent.py": "import typer\n\n\n"
                        'def run(timeout: float = typer.Option(60.0, "--timeout", help="Seconds per command.")):\n'
                        "    pass\n",
    }
    pending = {("cli/agent.py", "--timeout"): "renamed elsewhere"}
    src = _package(tmp_path / "clash", clash)
    assert check_layout.check(src, layers=LAYERS, pending_flag_clashes={}).count("flag-meaning") == 1
    assert check_layout.check(src, layers=LAYERS, pending_flag_clashes=pending).violations == []
    gone = _package(tmp_path / "gone", {**clash, "cli/agent.py": "X = 1\n"})
    (stale,) = check_layout.check(gone, layers=LAYERS, pending_flag_clashes=pending).violations
    assert (stale.rule, stale.where) == ("flag-meaning", "takeover/cli/agent.py")
    assert "--timeout is listed in PENDING_FLAG_CLASHES (renamed elsewhere) but names one setting now" in stale.detail
def test_backend_and_format_names_are_compared_only_in_their_registries(tmp_path):
    src = _package(tmp_path, {
        "grading/__init__.py": "",
        "grading/local.py": 'class LocalBackend:\n    name = "local"\n',
        "grading/docker.py": 'class DockerBackend:\n    name: str = "docker"\n',
        "grading/backends.py": 'def pick(backend):\n    return backend == "local"\n',  # the registry may
        "trajectories/__init__.py": "",
        "trajectories/toy.py": 'NAME = "toy"\nREADERS = [Reader(name=NAME + "-dir")]\n',
        "trajectories/registry.py": 'def known(fmt):\n    return fmt in ("toy", "x")\n',
        "middle/user.py": (
            "def f(spec, backend, traj, row, kind, fmt):\n"
            '    a = spec.backend == "local"\n'
            '    b = "docker" != backend\n'
            '    c = traj.format in ("toy-dir", "other")\n'
            '    d = row["grading_backend"] == "local"\n'
            '    e = kind == "local"\n'  # not a backend or format: another setting may share the word
            '    g = spec.backend == "modal"\n'  # not a registered name
            "    h = fmt in KNOWN\n"  # not a literal
            "    match backend:\n"
            '        case "docker":\n'
            "            pass\n"
            "    return a, b, c, d, e, g, h\n"
        ),
        "agents/run.py": 'def where(command_backend):\n    return command_backend == "local"\n',
    })
    layers = (("", "grading", "trajectories", "middle", "agents"),)
    found = [v for v in check_layout.check(src, layers=layers).violations if v.rule == "name-test"]
    assert [(v.where, v.detail.split(":")[0]) for v in found] == [
        ("takeover/agents/run.py:2", "compares command_backend with the grading backend name 'local'"),
        ("takeover/middle/user.py:2", "compares spec.backend with the grading backend name 'local'"),
        ("takeover/middle/user.py:3", "compares backend with the grading backend name 'docker'"),
        ("takeover/middle/user.py:4", "compares traj.format with the trajectory format name 'toy-dir'"),
        ("takeover/middle/user.py:5", "compares row['grading_backend'] with the grading backend name 'local'"),
        ("takeover/middle/user.py:9", "compares backend with the grading backend name 'docker'"),
    ]
    assert "takeover.grading.backends" in found[1].detail and "takeover.trajectories.registry" in found[3].detail
    assert check_layout.NAME_TEST_ALLOWED == {}  # no module compares such names since the command backends' registry


def test_runtime_names_are_read_from_their_registry_and_compared_only_there(tmp_path):
    src = _package(tmp_path, {
        "base.py": 'DEFAULT_AGENT = "mini"\n',
        "agents/__init__.py": "",
        "agents/runtimes.py": ("from takeover.base import DEFAULT_AGENT\n"
                               'RUNTIMES = Registry("agent runtime", {DEFAULT_AGENT: 1, "own": 2}, where="agent")\n'
                               'def mine(runtime):\n    return runtime == "own"\n'),  # the registry may
        "middle/config.py": ('def f(agent, choice, quick_runtime):\n'
                             '    a = agent == "own"\n'
                             '    b = choice.runtime in ("mini", "x")\n'
                             '    c = quick_runtime != "own"\n'
                             '    d = agent == "nobody"\n'  # not a registered name
                             '    return a, b, c, d\n'),
    })
    registries = (check_layout.Registry("agent runtime", "agents.runtimes", ("agents.runtimes",)),)
    layers = (("", "base", "agents", "middle"),)
    found = [v for v in check_layout.check(src, layers=layers, registries=registries).violations
             if v.rule == "name-test"]
    assert [(v.where, v.detail.split(":")[0]) for v in found] == [
        ("takeover/middle/config.py:2", "compares agent with the agent runtime name 'own'"),
        ("takeover/middle/config.py:3", "compares choice.runtime with the agent runtime name 'mini'"),
        ("takeover/middle/config.py:4", "compares quick_runtime with the agent runtime name 'own'"),
    ]


def test_rename_tables_and_hidden_old_flags_are_reported(tmp_path):
    src = _package(tmp_path, {
        "cli/names.py": ('import typer\nRENAMED = {"--out": "--out-dir"}\nSHOW_RENAMED = {}\n'
                         'def show(out: str = typer.Option(None, "--out", hidden=True, help="Old.")):\n'
                         "    return renamed_flags(RENAMED)\n"),
        "base.py": 'EARLIER_FIELD_NAMES = {"steps": "step_limit"}\nRENAMED_KEYS = ()\nRENAMEDX = 1\n',
    })
    table = "is a table of renamed names: a setting has one name (nothing was released under another)"
    assert sorted(_rules(src)["rename-table"]) == [
        f"takeover/base.py:1: EARLIER_FIELD_NAMES {table}",
        f"takeover/base.py:2: RENAMED_KEYS {table}",
        f"takeover/cli/names.py:2: RENAMED {table}",
        f"takeover/cli/names.py:3: SHOW_RENAMED {table}",
        "takeover/cli/names.py:4: a hidden option (an old spelling kept alive): remove it",
        "takeover/cli/names.py:5: calls renamed_flags, a reader of renamed names",
    ]
    assert set(check_layout.RENAME_TABLE_ALLOWED) == {"takeover/trajectories/takeover_run.py", "takeover/_util/io.py"}


def test_a_seam_whose_closure_loads_a_runtime_is_reported_and_the_closure_is_a_figure(tmp_path):
    files = {
        "agents/__init__.py": "",
        "agents/runtime.py": "from takeover.agents.backend import Backend\n",
        "agents/backend.py": "Backend = 1\n",
        "agents/mini/__init__.py": "",
        "agents/mini/loop.py": "from takeover.agents.runtime import Backend\n",
        "agents/runtimes.py": "from takeover.agents.mini.loop import Backend\n",
    }
    seams = (check_layout.Seam("agents.runtime", ("agents.runtimes", "agents.mini")),)
    layers = (("", "agents"),)
    clean = check_layout.check(_package(tmp_path / "clean", files), layers=layers, seams=seams)
    assert [v for v in clean.violations if v.rule == "seam-closure"] == []
    assert check_layout.seam_closure(clean, "agents.runtime") == {
        "takeover", "takeover.agents", "takeover.agents.runtime", "takeover.agents.backend"}
    # The seam's neighbour now reaches a runtime (as a backend that subclassed mini-swe-agent's class did).
    files["agents/backend.py"] = "from takeover.agents.mini.loop import Backend\n"
    files["agents/mini/loop.py"] = "Backend = 1\n"
    dirty = check_layout.check(_package(tmp_path / "dirty", files), layers=layers, seams=seams)
    must = "the seam must load no runtime"
    assert sorted(v.detail for v in dirty.violations if v.rule == "seam-closure") == [
        f"importing takeover.agents.runtime loads takeover.agents.mini (under agents.mini): {must}",
        f"importing takeover.agents.runtime loads takeover.agents.mini.loop (under agents.mini): {must}",
    ]


def test_a_default_declared_again_outside_its_settings_record_is_reported(tmp_path):
    """Rule ``default-once``: a flag or keyword named after a settings record's field (a generic field with
    its table's prefix: ``grading_timeout``) has no literal default of its own; None (not given) and a value
    read from the record pass."""
    record = ("from pydantic import BaseModel, Field\n\n\nclass GradingSettings(BaseModel):\n"
              "    timeout: float = Field(1800.0, gt=0)\n    hash_seed: int | None = None\n"
              "    network: bool = False\n")
    src = _package(tmp_path, {
        "base.py": record + "\n\nGRADING = GradingSettings()\n",
        "top.py": ("from takeover.base import GRADING\n\nGRADING_TIMEOUT = 1800.0\n\n\n"
                   "def grade(grading_timeout: float = GRADING_TIMEOUT, hash_seed: int | None = None,\n"
                   "          network: bool = False) -> None:\n    pass\n\n\n"
                   "def grade_again(*, grading_timeout: float = GRADING.timeout, hash_seed: int = 7) -> None:\n"
                   "    pass\n"),
    })
    records = (check_layout.SettingsRecord("base", "GradingSettings", "grading"),)
    found = [f"{v.where}: {v.detail}" for v in check_layout.check(src, layers=LAYERS, settings_records=records).violations
             if v.rule == "default-once"]
    # network says nothing alone (the sandbox's network is another setting): only --grading-network would count.
    why = "read it from the record (or leave it None: the record's default applies)"
    assert found == [
        f"takeover/top.py:6: grading_timeout = GRADING_TIMEOUT is a default of its own for GradingSettings.timeout: {why}",
        f"takeover/top.py:11: hash_seed = 7 is a default of its own for GradingSettings.hash_seed: {why}"]
