"""Where settings are declared, what the commands take, and what the unit schemas load, measured from the
source text (``ast``; nothing is imported or run), so that two trees can be compared side by side.

    python benchmarks/settings_figures.py [SRC_DIR ...]      # default: src/takeover of this checkout

For each tree, printed:

- **declarations of a setting**: function parameters and record fields (annotated names in a class body)
  named so, anywhere in the package, with the number of files they are in. A record taken whole by the API
  declares its fields once; a keyword copied from function to function is declared at every step.
- **parameters of the commands** ``grade``, ``quickstart``, ``resume``, ``views``: the command function's
  own parameters (a record built from an option group is one), and the flags the user sees (the option
  groups' builders expanded: :func:`takeover.cli.options.option_groups`).
- **the import closure of the unit schemas** (``results/records.py``): modules loaded, with and without the
  parent packages Python runs on the way, and their lines (``benchmarks/check_layout.py``'s edges).
- **copies of SWE-bench's verdict rules** in the package: functions that decide a test's outcome from a
  status map (a ``SKIPPED`` status compared in a function that also names ``PASSED``), by module.
- **defaults declared again** outside their settings record (``check_layout``'s rule ``default-once``; for a
  tree from before the settings records, the records where they were then).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_layout import DEFAULT_SRC, SETTINGS_RECORDS, SettingsRecord, check, seam_closure

#: The settings records of a tree from before ``grading_settings.py`` (the records where they were then).
EARLIER_RECORDS = (SettingsRecord("limits", "RunLimits"), SettingsRecord("grading.backends", "GradingSettings", "grading"),
                   SettingsRecord("repository_states.replay_settings", "ReplaySettings", "replay"),
                   SettingsRecord("agents.agent_choice", "AgentChoice"), SettingsRecord("llm.settings", "ModelSettings"))

#: The settings whose declarations are counted (the design review's table).
SETTINGS = ("hash_seed", "grading_rules", "grading_timeout", "spec_file", "network", "memory_mb", "use_sandbox",
            "use_environment", "replay_timeout", "raw_trace_max_chars", "raw_trace_max_tokens", "note_max_tokens",
            "command_backend", "agent_command", "session_glob")
#: The commands whose parameters are counted: (module under cli/, function name).
COMMANDS = (("grade.py", "grade_command"), ("quickstart.py", "quickstart"), ("handoff.py", "resume"),
            ("views.py", "views"))


def declarations(src: Path) -> dict[str, tuple[int, int]]:
    """``{setting: (declarations, files)}`` over every module under ``src``."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                    if arg.arg in SETTINGS:
                        found[arg.arg].append(str(path))
            elif isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                            and stmt.target.id in SETTINGS:
                        found[stmt.target.id].append(str(path))
    return {name: (len(found[name]), len(set(found[name]))) for name in SETTINGS}


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _groups(fn: ast.FunctionDef) -> dict[str, str]:
    """``{parameter: builder}`` of a command's ``@option_groups(...)`` decorator."""
    for deco in fn.decorator_list:
        if isinstance(deco, ast.Call) and getattr(deco.func, "id", getattr(deco.func, "attr", "")) == "option_groups":
            return {kw.arg: ast.unparse(kw.value) for kw in deco.keywords if kw.arg}
    return {}


def command_parameters(src: Path) -> dict[str, tuple[int, int]]:
    """``{command: (parameters of its function, flags and arguments the user sees)}``."""
    options = ast.parse((src / "cli" / "options.py").read_text(encoding="utf-8"))
    out = {}
    for module, name in COMMANDS:
        path = src / "cli" / module
        tree = ast.parse(path.read_text(encoding="utf-8"))
        fn = _function(tree, name)
        if fn is None:
            out[name] = (0, 0)
            continue
        own = [*fn.args.args, *fn.args.kwonlyargs]
        groups = _groups(fn)
        flags = 0
        for arg in own:
            builder = groups.get(arg.arg)
            if builder is None:
                flags += 1
                continue
            where = _function(tree, builder) or _function(options, builder)
            flags += len([*where.args.args, *where.args.kwonlyargs]) if where else 1
        out[name] = (len(own), flags)
    return out


def schema_closure(src: Path) -> tuple[int, int, int]:
    """``(modules with parent packages, modules without them, lines)`` loaded by ``results/records.py``."""
    report = check(src)
    closure = seam_closure(report, "results.records")
    # Without the parent packages: the modules reached through imports alone.
    targets: dict[str, set[str]] = defaultdict(set)
    for e in report.edges:
        targets[e.source].add(e.target)
    seen: set[str] = set()
    todo = [f"{src.name}.results.records"]
    while todo:
        name = todo.pop()
        if name in seen or name not in report.modules:
            continue
        seen.add(name)
        todo += sorted(targets[name])
    return len(closure), len(seen), sum(report.modules[m].lines for m in closure)


def defaults_again(src: Path) -> list[str]:
    """Where a setting's default is declared outside its record (rule ``default-once``)."""
    records = SETTINGS_RECORDS if (src / "grading_settings.py").is_file() else EARLIER_RECORDS
    return [str(v) for v in check(src, settings_records=records).violations if v.rule == "default-once"]


def verdict_rule_copies(src: Path) -> dict[str, int]:
    """``{module: functions}`` that decide a test's outcome from its status (a function naming both a
    skipped and a passed status, as SWE-bench's ``get_eval_tests_report`` rules do)."""
    out: dict[str, int] = {}
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        count = 0
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                texts = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
                words = names | texts
                if ({"SKIPPED"} & words) and ({"PASSED", "PASSING"} & words or "passing" in names):
                    count += 1
        if count:
            out[str(path.relative_to(src.parent))] = count
    return out


def main(argv: list[str]) -> int:
    trees = [Path(a).resolve() for a in argv] or [DEFAULT_SRC]
    for src in trees:
        print(f"== {src}")
        print(f"{'setting':<24}{'declarations':>14}{'files':>8}")
        for name, (n, files) in declarations(src).items():
            print(f"{name:<24}{n:>14}{files:>8}")
        print(f"\n{'command':<24}{'function params':>16}{'flags+args':>12}")
        for name, (params, flags) in command_parameters(src).items():
            print(f"{name:<24}{params:>16}{flags:>12}")
        with_parents, alone, lines = schema_closure(src)
        print(f"\nresults/records.py closure: {with_parents} modules with parent packages, {alone} without, "
              f"{lines:,} lines")
        print("\nverdict-rule functions by module:")
        for module, n in verdict_rule_copies(src).items():
            print(f"  {module}: {n}")
        again = defaults_again(src)
        print(f"\ndefaults declared outside their record: {len(again)}")
        for where in again:
            print(f"  {where[:140]}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
