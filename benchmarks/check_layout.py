"""Check the layout of ``src/takeover`` from its source text (``ast``; nothing is imported or run).

    python benchmarks/check_layout.py [SRC_DIR]      # default: src/takeover of this checkout

Prints a table of figures (modules, lines, import edges, the largest modules, violations per rule), then
every violation, and exits 1 when there is any (0 otherwise, 2 on bad arguments). The rules:

- ``size``: every module is under :data:`MAX_LINES` (500) lines.
- ``duplicate-name``: no module file name is used twice outside ``cli/`` (``__init__.py`` excepted), so a
  name says which concept a file holds.
- ``cycle``: no import circle between modules (lazy and ``TYPE_CHECKING`` imports count: they are
  dependencies too).
- ``layer``: no module imports from a later layer of :data:`LAYERS` (the data flow, lowest first);
  ``unplaced``: every module belongs to a layer (a new top-level module or package must be added to
  :data:`LAYERS` before it passes); ``unresolved``: every ``takeover.*`` import names a module that exists.
- ``lazy-import``: no ``takeover.*`` import inside a function (it hides a dependency from the imports at the
  top of the file).
- ``importlib``: no dynamic import (``importlib.import_module``, ``__import__``, ``importlib.reload``,
  ``module_from_spec``, ``spec_from_file_location``, ``spec_from_loader``, ``runpy.run_module``, or
  ``find_spec`` of a name spelled with ``takeover``). ``importlib.metadata``, ``importlib.resources`` and
  ``find_spec`` of a third-party package read metadata or check that an optional dependency is installed;
  they hide none of our modules and are allowed.
- ``import-fallback``: no ``except ImportError`` (or ``ModuleNotFoundError``) around an import of
  ``takeover.*``, or around a call of a function of the same module that imports ``takeover.*``.
- ``reference``: no text file under ``src/`` mentions an issue number (``issue 4``, ``issue-4``,
  ``issue #4``) or ``PROTOCOL.md``: users' clones have neither; code cites ``docs/protocol.md``.
- ``citation``: every ``docs/protocol.md section N`` (``sections N-M``, ``s. N, M``) cited under ``src/``
  names a section that ``docs/protocol.md`` has (a heading ``## N. ...``).
- ``flag-meaning``: no command-line flag names two settings. Every ``typer.Option("--flag", help=...)`` in
  ``cli/`` is read; its meaning is its help text, or the shared help constant (a ``*_HELP`` name, from the
  module itself or ``cli/options.py``) that the help is built on (``f"{VIEW_HELP} One view."`` means what
  ``VIEW_HELP`` means). A shared option declared once in ``cli/options.py`` counts once, however many
  commands use it; hidden options (old spellings kept for one release) are not read. A flag whose
  declarations have two meanings is reported with each of them, unless :data:`PENDING_FLAG_CLASHES` lists
  it for a module that still declares it (an entry whose clash is gone is reported, so that it is removed).
- ``name-test``: no registered name of a seam (:data:`REGISTRIES`: a grading backend's, a trajectory
  format's, an agent runtime's, a command backend's) is compared as a string outside its registry:
  ``==``/``!=``, ``in``/``not in`` a literal tuple, set or list, or a ``match`` case, between such a name
  and an expression naming a backend, format or runtime (a variable, attribute or string key called
  ``backend``, ``format``, ``fmt``, ``runtime``, ``agent``, or ending in ``_backend``, ``_format`` or
  ``_runtime``). Code that needs what a backend, format or runtime does asks the registered object
  (``grading_backend(name).writes_report``, ``replay_needs(fmt).editor_flavor``, ``RUNTIMES[name].Options``).
  The names are read from their declarations: ``name = "..."`` in a class body (a backend),
  ``NAME``/``FORMAT`` at module level, ``Reader(name=...)`` (a reader) and the string keys of the mapping
  given to a ``Registry(...)`` (a runtime, a command backend; a key that is a constant of another module is
  read through it). :data:`NAME_TEST_ALLOWED` lists the places that may compare anyway, each with its
  reason.
- ``rename-table``: no table of renamed names (a module-level name ``RENAMED``, ``*_RENAMED``,
  ``RENAMED_*`` or ``EARLIER_*``), no ``renamed_flags``/``renamed_keyword`` and no hidden command-line
  option (an old spelling) under ``src/``: a setting has one name, and nothing was released under another.
  :data:`RENAME_TABLE_ALLOWED` lists the readers of files on disk that must still read earlier names.
- ``seam-closure``: the import closure of a seam module (:data:`SEAMS`: the agent-runtime seam), parent
  packages included as Python runs them, holds none of the modules it must not load (the runtimes and their
  registries), so that importing the seam loads no runtime. The closure's size is one of the figures.
- ``default-once``: a default is declared once, in its settings record (:data:`SETTINGS_RECORDS`: the run
  limits, the grading, replay and view settings, the agent choice, the model settings). No function parameter
  (a command's flag, an API keyword) and no field of another record named after a record's field (or, for a
  field whose name says nothing alone, ``timeout``, after its table's prefix: ``grading_timeout``) has a literal
  default: a number, a string, a boolean, or a module-level name bound to one in the same module. ``None``
  (not given: the record's default applies) and a value read from the record (``LIMITS.step_limit``) are
  allowed; :data:`DEFAULT_ONCE_ALLOWED` lists the fields that share a setting's name but not its meaning.

The same checks are a library function, :func:`check`, used by ``tests/test_layout.py``.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SRC = ROOT / "src" / "takeover"
MAX_LINES = 500
#: Folder whose modules are named after commands: its file names may repeat names used elsewhere.
COMMAND_FOLDER = "cli"
#: The module of ``COMMAND_FOLDER`` whose ``*_HELP`` constants every command may build its help on.
SHARED_OPTIONS = "options.py"
#: Flags that still name two settings while a rename is under way: ``(module under src, flag) -> why``.
PENDING_FLAG_CLASHES: dict[tuple[str, str], str] = {}

#: The data-flow layers, lowest first: a module may import from its own layer and earlier ones only.
#: Entries name the first component under ``takeover`` (a module or a package with everything inside it);
#: ``""`` is the package root (``takeover/__init__.py``, which holds only the version).
LAYERS: tuple[tuple[str, ...], ...] = (
    # 0 foundation: the package root (the version), the vocabulary, errors, the settings records (run limits,
    # the agent choice, grading, replay and view settings: records at the bottom, which import none of their
    # implementations) and beside them the input schemas (what every reader checks at the door),
    # the machinery behind ``_util`` (files, processes, the sandbox, secrets, diffs, package versions, loggers)
    # and the model endpoint (``llm``: settings, the one client, the token estimator)
    ("", "vocabulary", "errors", "_util", "limits", "agent_choice", "grading_settings", "replay_settings", "view_budgets",
     "input_schemas", "llm"),
    ("sources",),  # 1: source tasks and where repositories come from (docs/protocol.md section 2)
    # 2: the event model and every format's reader, takeover's own run format included; the shell-command
    # grammar (what a command an agent ran reads, searches, runs, writes)
    ("trajectories", "commands"),
    ("environments",),  # 3: per-task test environments
    ("repository_states",),  # 4: file classes, snapshots, the starting state, replay and its verification (section 5)
    ("points",),  # 5: verification commands and results, the handoff points (section 4)
    ("checkpoints",),  # 6
    ("views",),  # 7
    ("agents",),  # 8
    ("grading",),  # 9
    # 10: results = the typed records stages write and the report reads; rediscovery = which successor actions
    # repeat what the predecessor knew, and the figures stored with each takeover unit; claims = the claims of
    # model-written notes checked against the trace, stored with each view unit
    ("report", "results", "rediscovery", "claims"),
    # 11 (testing: test support; inspect_task: the study's handoff points as an Inspect AI task)
    ("experiments", "embedded_model", "doctor", "quickstart", "testing", "handoff", "inspect_task", "harbor"),
    ("cli", "__main__"),  # 12
)

#: Calls that load a module chosen at run time.
DYNAMIC_IMPORTS = frozenset({
    "import_module", "__import__", "reload", "module_from_spec", "spec_from_file_location", "spec_from_loader",
    "run_module",
})
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


@dataclass(frozen=True)
class Registry:
    """A seam whose implementations are registered by name: ``kind`` (what a name names), ``package`` (the
    first component under ``takeover`` whose modules declare the names) and ``modules`` (the registry
    modules, dotted under ``takeover``, that may compare them)."""

    kind: str
    package: str
    modules: tuple[str, ...]


#: The seams registered by name (rule ``name-test``); ``package`` may name one module (``agents.runtimes``).
REGISTRIES: tuple[Registry, ...] = (
    Registry("grading backend", "grading", ("grading.backends",)),
    Registry("trajectory format", "trajectories", ("trajectories.registry",)),
    Registry("agent runtime", "agents.runtimes", ("agents.runtimes",)),
    Registry("command backend", "agents.command_backends", ("agents.command_backends",)),
)
#: Identifiers that name a backend, a format or a runtime (also any ending in one of :data:`NAMING_SUFFIXES`).
NAMING = frozenset({"backend", "format", "fmt", "runtime", "agent"})
NAMING_SUFFIXES = ("_backend", "_format", "_runtime")
#: Module-level names of a rename table (rule ``rename-table``).
RENAME_TABLE = re.compile(r"^(?:\w+_)?RENAMED(?:_\w+)?$|^_?EARLIER_\w+$")
#: Functions that read renamed names (rule ``rename-table``).
RENAME_READERS = frozenset({"renamed_flags", "renamed_keyword"})
#: Files (relative to the source folder's parent) that may hold a rename table, and why.
RENAME_TABLE_ALLOWED: dict[str, str] = {
    "takeover/trajectories/takeover_run.py": "reads the run.json of run folders that earlier versions wrote on disk",
    "takeover/_util/io.py": "the one helper that reads a record's earlier field names (with_current_names)",
}


@dataclass(frozen=True)
class Seam:
    """A seam module (dotted under ``takeover``) and the modules or packages its import closure must not
    hold (rule ``seam-closure``)."""

    module: str
    forbidden: tuple[str, ...]


#: The seams whose import closure is bounded: importing the agent-runtime seam loads no runtime.
SEAMS: tuple[Seam, ...] = (
    Seam("agents.runtime", ("agents.runtimes", "agents.command_backends", "agents.mini_swe_agent",
                            "agents.openhands", "agents.command", "agents.runs")),
)
@dataclass(frozen=True)
class SettingsRecord:
    """A settings record (rule ``default-once``): ``module`` (dotted under ``takeover``), the class, and the
    prefix its table gives a field whose name says nothing alone (``grading``: ``grading_timeout``)."""

    module: str
    name: str
    prefix: str = ""


#: The records whose defaults are declared once (rule ``default-once``).
SETTINGS_RECORDS: tuple[SettingsRecord, ...] = (
    SettingsRecord("limits", "RunLimits"),
    SettingsRecord("grading_settings", "GradingSettings", "grading"),
    SettingsRecord("replay_settings", "ReplaySettings", "replay"),
    SettingsRecord("view_budgets", "ViewBudgets"),
    SettingsRecord("agent_choice", "AgentChoice"),
    SettingsRecord("llm.settings", "ModelSettings"),
)
#: Field names that say nothing alone (other code uses them for other things: a subprocess's ``timeout``, the
#: sandbox's ``network``): they are read with their table's prefix only, or not at all without one.
GENERIC_FIELDS = frozenset({"timeout", "network", "backend", "model", "extra", "options", "retries", "temperature",
                            "runtime", "max_tokens", "backoff", "base_url"})
#: ``(file relative to the source folder's parent, name)`` of fields that share a setting's name but are
#: something else (rule ``default-once``), and why.
DEFAULT_ONCE_ALLOWED: dict[tuple[str, str], str] = {
    ("takeover/grading/reuse.py", "grading_rules"): "a stored grading key's rules when it records none (the key "
    "was decided under swebench-4.1's), not the setting's default (the installed harness's)",
}
#: Files or folders (relative to the source folder's parent) that may compare registered names, and why.
NAME_TEST_ALLOWED: dict[str, str] = {}
REFERENCE = re.compile(r"(?i:\bissues?[ \t]*[-#]?[ \t]*\d+)|PROTOCOL\.md")
CITATION = re.compile(r"docs/protocol\.md`{0,2}\s+(?:sections?|s\.)\s+(\d+(?:\s*(?:-|,|and)\s*\d+)*)")
SECTION_HEADING = re.compile(r"^## (\d+)\.", re.MULTILINE)
RULES: dict[str, str] = {
    "size": f"modules under {MAX_LINES} lines",
    "duplicate-name": "module file names used once (outside cli/)",
    "cycle": "no import circle",
    "layer": "no import from a later layer",
    "unplaced": "every module in the layer table",
    "unresolved": "every takeover import exists",
    "lazy-import": "no takeover import inside a function",
    "importlib": "no dynamic import",
    "import-fallback": "no except ImportError around takeover imports",
    "reference": "no 'issue N' / PROTOCOL.md in src/",
    "citation": "cited protocol sections exist",
    "flag-meaning": "one setting per command-line flag",
    "name-test": "no registered name compared outside its registry",
    "rename-table": "no table of renamed names, no hidden old flag",
    "seam-closure": "a seam's import closure loads no runtime",
    "default-once": "a setting's default is declared once, in its record",
}


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule`` (a key of :data:`RULES`), where (``path:line``) and what."""

    rule: str
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``line``; ``lazy`` inside a function."""

    source: str
    target: str
    line: int
    lazy: bool


@dataclass
class Module:
    name: str  # dotted, e.g. takeover.views.build
    path: Path
    rel: str  # path relative to the source folder's parent, e.g. takeover/views/build.py
    lines: int
    tree: ast.Module


@dataclass
class LayoutReport:
    """What :func:`check` found: the modules, their import edges and every violation."""

    src: Path
    modules: dict[str, Module] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    def count(self, rule: str) -> int:
        return sum(1 for v in self.violations if v.rule == rule)


def module_name(src: Path, path: Path) -> str:
    """Dotted name of ``path`` under the package folder ``src`` (``__init__.py`` is the package itself)."""
    parts = [src.name, *path.relative_to(src).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(name: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> int | None:
    """The layer index of a dotted module name, or ``None`` when the table does not place it."""
    parts = name.split(".")
    key = parts[1] if len(parts) > 1 else ""
    return next((i for i, names in enumerate(layers) if key in names), None)


def _load(src: Path) -> dict[str, Module]:
    modules = {}
    for path in sorted(src.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = module_name(src, path)
        modules[name] = Module(name, path, str(path.relative_to(src.parent)), len(text.splitlines()),
                               ast.parse(text, filename=str(path)))
    return modules


def _resolve(module: Module, node: ast.ImportFrom | ast.Import, known: dict[str, Module]) -> list[str]:
    """Dotted names of our modules that ``node`` imports (``from pkg import sub`` -> ``pkg.sub``)."""
    package = module.name.split(".")[0]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name == package or a.name.startswith(package + ".")]
    if node.level:
        base = module.name.split(".")
        if module.path.name != "__init__.py":
            base = base[:-1]
        base = base[: len(base) - node.level + 1]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
        if target != package and not target.startswith(package + "."):
            return []
    subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
    rest = [a for a in node.names if f"{target}.{a.name}" not in known]
    return subs + ([target] if rest else [])


def _walk(node: ast.AST, in_function: bool = False):
    """Yield ``(node, in_function)`` for every node below ``node``."""
    for child in ast.iter_child_nodes(node):
        inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        yield child, inner
        yield from _walk(child, inner)


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _dynamic_import(call: ast.Call, package: str) -> str | None:
    """Why ``call`` is a dynamic import of a module, or ``None``."""
    name = _call_name(call.func)
    if name in DYNAMIC_IMPORTS:
        return f"{ast.unparse(call.func)}(...) loads a module chosen at run time"
    if name == "find_spec" and call.args:
        for n in ast.walk(call.args[0]):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.split(".")[0] == package:
                return f"{ast.unparse(call)} probes our own module"
    return None


def _handles_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(_call_name(k) in IMPORT_ERRORS for k in kinds if k is not None)


def _scan(module: Module, known: dict[str, Module], report: LayoutReport) -> None:
    package = module.name.split(".")[0]
    own: dict[ast.AST, list[str]] = {}
    importers: set[str] = set()  # functions of this module that import one of our modules
    for node, in_function in _walk(module.tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            targets = _resolve(module, node, known)
            own[node] = targets
            for target in targets:
                report.edges.append(Edge(module.name, target, node.lineno, in_function))
                if in_function:
                    report.violations.append(Violation(
                        "lazy-import", f"{module.rel}:{node.lineno}",
                        f"imports {target} inside a function: import it at the top (or move the code)"))
        elif isinstance(node, ast.Call) and (why := _dynamic_import(node, package)):
            report.violations.append(Violation("importlib", f"{module.rel}:{node.lineno}", why))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
            isinstance(n, ast.Import | ast.ImportFrom) and _resolve(module, n, known) for n in ast.walk(node)
        ):
            importers.add(node.name)
    for node, _ in _walk(module.tree):
        if not isinstance(node, ast.Try) or not any(_handles_import_error(h) for h in node.handlers):
            continue
        guarded = []
        for stmt in node.body:
            for n in ast.walk(stmt):
                if own.get(n):
                    guarded.extend(own[n])
                elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in importers:
                    guarded.append(f"{n.func.id}() (which imports {package} modules)")
        for target in dict.fromkeys(guarded):
            report.violations.append(Violation(
                "import-fallback", f"{module.rel}:{node.lineno}",
                f"except ImportError around {target}: our own modules are always installed"))


def _cycles(names: list[str], edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components with more than one module (or a module importing itself)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        graph[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan; the package has well under 1,000 modules, recursion is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for name in sorted(names):
        if name not in index:
            visit(name)
    return sorted(found)


def _string_value(node: ast.expr, constants: dict[str, str]) -> str | None:
    """The text of a string constant, a module-level string constant's name, or a ``+`` of those."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string_value(node.left, constants), _string_value(node.right, constants)
        return left + right if left is not None and right is not None else None
    return None


def _assignments(body: list[ast.stmt]) -> list[tuple[str, ast.expr]]:
    """``(name, value)`` of the plain assignments ``name = value`` / ``name: T = value`` in ``body``."""
    found = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            found.append((stmt.targets[0].id, stmt.value))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            found.append((stmt.target.id, stmt.value))
    return found


def _declared_names(module: Module, shared: dict[str, str] | None = None) -> set[str]:
    """Names a module declares for a registry: ``name = "..."`` in a class body, ``NAME``/``FORMAT`` at
    module level, ``Reader(name=...)``, the string keys of the mapping given to ``Registry(...)``
    (``shared``: module-level string constants of every module, for a key imported from another)."""
    constants: dict[str, str] = dict(shared or {})
    found: set[str] = set()
    for name, value in _assignments(module.tree.body):
        if (text := _string_value(value, constants)) is not None:
            constants[name] = text
            if name in ("NAME", "FORMAT"):
                found.add(text)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ClassDef):
            found.update(text for name, value in _assignments(node.body)
                         if name == "name" and (text := _string_value(value, constants)) is not None)
        elif isinstance(node, ast.Call) and _call_name(node.func) == "Reader":
            for kw in node.keywords:
                if kw.arg == "name" and (text := _string_value(kw.value, constants)):
                    found.add(text)
        elif isinstance(node, ast.Call) and _call_name(node.func) == "Registry":
            for arg in node.args:
                if isinstance(arg, ast.Dict):
                    found.update(text for key in arg.keys
                                 if key is not None and (text := _string_value(key, constants)) is not None)
    return found


def _shared_constants(modules: dict[str, Module]) -> dict[str, str]:
    """Module-level string constants of every module, by name (a name bound to two texts is left out)."""
    seen: dict[str, set[str]] = defaultdict(set)
    for module in modules.values():
        for name, value in _assignments(module.tree.body):
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                seen[name].add(value.value)
    return {name: next(iter(texts)) for name, texts in seen.items() if len(texts) == 1}


def _names_a_seam(node: ast.expr) -> str | None:
    """The identifier when ``node`` names a backend or a format (``backend``, ``spec.backend``,
    ``row["format"]``, ``grading_backend``), else None."""
    word = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        word = node.slice.value
    if word is not None and (word in NAMING or word.endswith(NAMING_SUFFIXES)):
        return word
    return None


def _compared_names(node: ast.AST) -> list[tuple[ast.expr, list[str]]]:
    """``(subject, string constants it is compared with)`` of a comparison or a ``match`` statement."""
    def strings(n: ast.expr) -> list[str]:
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            return [n.value]
        return []

    pairs: list[tuple[ast.expr, list[str]]] = []
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
            if isinstance(op, ast.Eq | ast.NotEq):
                pairs += [(left, strings(right)), (right, strings(left))]
            elif isinstance(op, ast.In | ast.NotIn) and isinstance(right, ast.Tuple | ast.Set | ast.List):
                pairs.append((left, [t for e in right.elts for t in strings(e)]))
    elif isinstance(node, ast.Match):
        values = [p.value for case in node.cases for p in ast.walk(case.pattern) if isinstance(p, ast.MatchValue)]
        pairs.append((node.subject, [t for v in values for t in strings(v)]))
    return [(subject, texts) for subject, texts in pairs if texts]


def _name_tests(report: LayoutReport, registries: tuple[Registry, ...]) -> None:
    """Violations of the ``name-test`` rule (see the module docstring)."""
    package = report.src.name
    kinds: dict[str, str] = {}  # registered name -> what it names
    allowed: dict[str, set[str]] = defaultdict(set)  # registered name -> registry modules
    shared = _shared_constants(report.modules)
    for registry in registries:
        prefix = f"{package}.{registry.package}"
        for module in report.modules.values():
            if module.name == prefix or module.name.startswith(prefix + "."):
                for text in _declared_names(module, shared):
                    kinds.setdefault(text, registry.kind)
                    allowed[text].update(f"{package}.{m}" for m in registry.modules)
    for module in report.modules.values():
        if any(module.rel.startswith(place) for place in NAME_TEST_ALLOWED):
            continue
        for node in sorted((n for n in ast.walk(module.tree) if isinstance(n, ast.Compare | ast.Match)),
                           key=lambda n: (n.lineno, n.col_offset)):
            for subject, texts in _compared_names(node):
                word = _names_a_seam(subject)
                for text in dict.fromkeys(texts):
                    if word is None or text not in kinds or module.name in allowed[text]:
                        continue
                    registry = " or ".join(sorted(allowed[text]))
                    report.violations.append(Violation(
                        "name-test", f"{module.rel}:{node.lineno}",
                        f"compares {ast.unparse(subject)} with the {kinds[text]} name {text!r}: ask the registered "
                        f"object ({registry}) instead"))


def _rename_tables(report: LayoutReport) -> None:
    """Violations of the ``rename-table`` rule (see the module docstring)."""
    for module in report.modules.values():
        if module.rel in RENAME_TABLE_ALLOWED:
            continue
        for name, value in _assignments(module.tree.body):
            if RENAME_TABLE.match(name):
                report.violations.append(Violation(
                    "rename-table", f"{module.rel}:{value.lineno}",
                    f"{name} is a table of renamed names: a setting has one name (nothing was released under another)"))
        for node in ast.walk(module.tree):
            if isinstance(node, ast.FunctionDef) and node.name in RENAME_READERS:
                report.violations.append(Violation("rename-table", f"{module.rel}:{node.lineno}",
                                                   f"defines {node.name}, a reader of renamed names"))
            elif isinstance(node, ast.Call) and _call_name(node.func) in RENAME_READERS:
                report.violations.append(Violation("rename-table", f"{module.rel}:{node.lineno}",
                                                   f"calls {_call_name(node.func)}, a reader of renamed names"))
            elif (isinstance(node, ast.Call) and _call_name(node.func) == "Option"
                  and any(kw.arg == "hidden" and isinstance(kw.value, ast.Constant) and kw.value.value is True
                          for kw in node.keywords)):
                report.violations.append(Violation("rename-table", f"{module.rel}:{node.lineno}",
                                                   "a hidden option (an old spelling kept alive): remove it"))


def seam_closure(report: LayoutReport, module: str) -> set[str]:
    """The modules importing ``module`` (dotted, without the package's name) runs: its imports, theirs, and
    every parent package's ``__init__`` on the way, as Python loads them."""
    package = report.src.name
    targets: dict[str, set[str]] = defaultdict(set)
    for e in report.edges:
        targets[e.source].add(e.target)
    start = f"{package}.{module}"
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen or name not in report.modules:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # parent packages run first
        todo += sorted(targets[name])
    return seen


def _seam_closures(report: LayoutReport, seams: tuple[Seam, ...]) -> None:
    """Violations of the ``seam-closure`` rule (see the module docstring)."""
    package = report.src.name
    for seam in seams:
        if f"{package}.{seam.module}" not in report.modules:
            continue
        closure = seam_closure(report, seam.module)
        for name in sorted(closure):
            bad = next((f for f in seam.forbidden if name == f"{package}.{f}" or name.startswith(f"{package}.{f}.")),
                       None)
            if bad is not None:
                report.violations.append(Violation(
                    "seam-closure", report.modules[f"{package}.{seam.module}"].rel,
                    f"importing {package}.{seam.module} loads {name} (under {bad}): the seam must load no runtime"))


def _literal(node: ast.expr | None, constants: dict[str, ast.expr]) -> bool:
    """Whether ``node`` is a literal default other than None: a constant, a sign or arithmetic of literals, or
    a module-level name bound to one (``constants``)."""
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        return node.value is not None and not isinstance(node.value, type(...))
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand, constants)
    if isinstance(node, ast.BinOp):
        return _literal(node.left, constants) and _literal(node.right, constants)
    if isinstance(node, ast.Name) and node.id in constants:
        return _literal(constants[node.id], {})
    return False


def _field_default(value: ast.expr | None) -> ast.expr | None:
    """The default of a record field's value: ``x``, or ``Field(x, ...)``/``Field(default=x)``."""
    if isinstance(value, ast.Call) and _call_name(value.func) == "Field":
        if value.args:
            return value.args[0]
        return next((k.value for k in value.keywords if k.arg == "default"), None)
    return value


def setting_names(report: LayoutReport, records: tuple[SettingsRecord, ...]) -> dict[str, str]:
    """``{name a flag or keyword of a record's field goes by: "Record.field"}`` (rule ``default-once``)."""
    package = report.src.name
    names: dict[str, str] = {}
    for record in records:
        module = report.modules.get(f"{package}.{record.module}")
        cls = next((n for n in module.tree.body if isinstance(n, ast.ClassDef) and n.name == record.name),
                   None) if module else None
        for stmt in cls.body if cls else []:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                field = stmt.target.id
                if field not in GENERIC_FIELDS:
                    names.setdefault(field, f"{record.name}.{field}")
                if record.prefix:
                    names.setdefault(f"{record.prefix}_{field}", f"{record.name}.{field}")
    return names


def _defaults_once(report: LayoutReport, records: tuple[SettingsRecord, ...]) -> None:
    """Violations of the ``default-once`` rule (see the module docstring)."""
    names = setting_names(report, records)
    own = {(f"{report.src.name}.{r.module}", r.name) for r in records}
    for module in report.modules.values():
        constants = dict(_assignments(module.tree.body))
        for node in ast.walk(module.tree):
            found: list[tuple[str, ast.expr | None, int]] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                positional = [*a.posonlyargs, *a.args]
                pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True))
                pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
                found = [(arg.arg, d, arg.lineno) for arg, d in pairs]
            elif isinstance(node, ast.ClassDef) and (module.name, node.name) not in own:
                found = [(s.target.id, _field_default(s.value), s.lineno) for s in node.body
                         if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
            for name, default, line in found:
                if name in names and _literal(default, constants) and (module.rel, name) not in DEFAULT_ONCE_ALLOWED:
                    report.violations.append(Violation(
                        "default-once", f"{module.rel}:{line}",
                        f"{name} = {ast.unparse(default)} is a default of its own for {names[name]}: read it from "
                        "the record (or leave it None: the record's default applies)"))


def cited_sections(numbers: str) -> list[int]:
    """Section numbers of a citation's number list: ``"3-5"`` -> 3, 4, 5; ``"5, 7 and 8"`` -> 5, 7, 8."""
    found: list[int] = []
    for part in re.split(r"\s*(?:,|and)\s*", numbers):
        low, _, high = part.partition("-")
        found.extend(range(int(low), int(high or low) + 1))
    return found


def _help_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """The module-level ``NAME_HELP = ...`` assignments of a module."""
    found = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.endswith("_HELP")):
            found[node.targets[0].id] = node.value
    return found


def _meaning(expr: ast.expr | None, constants: dict[str, ast.expr], seen: frozenset[str] = frozenset()) -> str:
    """What a help expression says: a literal's text, else the meaning of the first ``*_HELP`` constant it
    is built on, else its source text."""
    if expr is None:
        return "(no help)"
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    names = sorted((n for n in ast.walk(expr) if isinstance(n, ast.Name) and n.id.endswith("_HELP")),
                   key=lambda n: (n.lineno, n.col_offset))
    for n in names:
        if n.id in constants and n.id not in seen:
            return _meaning(constants[n.id], constants, seen | {n.id})
    return ast.unparse(expr)


def _option_flags(call: ast.Call) -> list[str]:
    """The flags a ``typer.Option(...)`` call declares (``"--a/--no-a"`` is two); none for a hidden one."""
    if any(k.arg == "hidden" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords):
        return []
    flags = []
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("-"):
            flags += [f for f in arg.value.split("/") if f]
    return flags


def flag_meanings(modules: dict[str, Module], src: Path) -> dict[str, dict[str, list[str]]]:
    """Every flag declared in ``COMMAND_FOLDER``: flag -> meaning -> where (``path:line``) it is declared so."""
    folder = src / COMMAND_FOLDER
    shared = next((m for m in modules.values() if m.path == folder / SHARED_OPTIONS), None)
    shared_constants = _help_constants(shared.tree) if shared else {}
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for module in modules.values():
        if module.path.parent != folder:
            continue
        constants = {**shared_constants, **_help_constants(module.tree)}
        for node in ast.walk(module.tree):
            if not (isinstance(node, ast.Call) and _call_name(node.func) == "Option"):
                continue
            help_expr = next((k.value for k in node.keywords if k.arg == "help"), None)
            for flag in _option_flags(node):
                found[flag][_meaning(help_expr, constants)].append(f"{module.rel}:{node.lineno}")
    return found


def _flag_violations(report: LayoutReport, pending: dict[tuple[str, str], str]) -> None:
    src = report.src
    meanings = flag_meanings(report.modules, src)
    for flag, by_meaning in sorted(meanings.items()):
        if len(by_meaning) < 2:
            continue
        places = {where.split(":")[0] for wheres in by_meaning.values() for where in wheres}
        if any((module, flag) in pending and f"{src.name}/{module}" in places for module, _ in pending):
            continue
        shown = "; ".join(f"{', '.join(wheres)}: {meaning!r}" for meaning, wheres in by_meaning.items())
        report.violations.append(Violation("flag-meaning", flag, f"{len(by_meaning)} settings: {shown}"))
    for (module, flag), why in sorted(pending.items()):
        if not (src / module).is_file():
            continue
        places = {where.split(":")[0] for wheres in meanings.get(flag, {}).values() for where in wheres}
        if len(meanings.get(flag, {})) < 2 or f"{src.name}/{module}" not in places:
            report.violations.append(Violation(
                "flag-meaning", f"{src.name}/{module}",
                f"{flag} is listed in PENDING_FLAG_CLASHES ({why}) but names one setting now: remove the entry"))


def check(
    src: Path | str = DEFAULT_SRC,
    layers: tuple[tuple[str, ...], ...] = LAYERS,
    protocol: Path | str | None = None,
    pending_flag_clashes: dict[tuple[str, str], str] | None = None,
    registries: tuple[Registry, ...] = REGISTRIES,
    seams: tuple[Seam, ...] = SEAMS,
    settings_records: tuple[SettingsRecord, ...] = SETTINGS_RECORDS,
) -> LayoutReport:
    """Every layout rule of the module docstring over the package folder ``src``; nothing is imported.

    ``protocol`` is the protocol document that citations must match (default: ``docs/protocol.md`` two
    folders above ``src``, as in ``src/takeover``); ``pending_flag_clashes`` replaces
    :data:`PENDING_FLAG_CLASHES`; ``registries`` the seams whose names rule ``name-test`` reads; ``seams`` the
    seam modules whose import closure rule ``seam-closure`` bounds; ``settings_records`` the records whose defaults
    rule ``default-once`` keeps in one place.

    Raises:
        FileNotFoundError: ``src`` is not a folder.
        SyntaxError: a module does not parse.
    """
    src = Path(src).resolve()
    if not src.is_dir():
        raise FileNotFoundError(f"{src}: not a folder")
    report = LayoutReport(src=src, modules=_load(src))
    modules = report.modules
    for module in modules.values():
        _scan(module, modules, report)
        if module.lines >= MAX_LINES:
            report.violations.append(Violation(
                "size", module.rel, f"{module.lines} lines (every module under {MAX_LINES})"))

    by_name: dict[str, list[str]] = defaultdict(list)
    for module in modules.values():
        inner = module.path.relative_to(src)
        if module.path.name != "__init__.py" and inner.parts[0] != COMMAND_FOLDER:
            by_name[module.path.name].append(module.rel)
    for file_name, paths in sorted(by_name.items()):
        if len(paths) > 1:
            report.violations.append(Violation(
                "duplicate-name", file_name, f"{len(paths)} modules: {', '.join(paths)}"))

    for name, module in modules.items():
        if layer_of(name, layers) is None:
            report.violations.append(Violation(
                "unplaced", module.rel,
                f"{name} is in no layer: add {name.split('.')[1]!r} to LAYERS in benchmarks/check_layout.py"))
    for e in report.edges:
        where = f"{modules[e.source].rel}:{e.line}"
        if e.target not in modules:
            report.violations.append(Violation("unresolved", where, f"imports {e.target}, which does not exist"))
            continue
        a, b = layer_of(e.source, layers), layer_of(e.target, layers)
        if a is not None and b is not None and b > a:
            report.violations.append(Violation(
                "layer", where, f"{e.source} (layer {a}) imports {e.target} (layer {b})"))

    edges = [e for e in report.edges if e.target in modules and e.target != e.source]
    for component in _cycles(list(modules), edges):
        members = set(component)
        inside = sorted({(e.source, e.target, e.lazy) for e in edges if e.source in members and e.target in members})
        shown = "; ".join(f"{s} -> {t}{' (lazy)' if lazy else ''}" for s, t, lazy in inside)
        report.violations.append(Violation("cycle", " <-> ".join(component), shown))

    _flag_violations(report, PENDING_FLAG_CLASHES if pending_flag_clashes is None else pending_flag_clashes)
    _name_tests(report, registries)
    _rename_tables(report)
    _seam_closures(report, seams)
    _defaults_once(report, settings_records)

    protocol = Path(protocol) if protocol is not None else src.parents[1] / "docs" / "protocol.md"
    sections = set(map(int, SECTION_HEADING.findall(protocol.read_text(encoding="utf-8")))) \
        if protocol.is_file() else set()
    for path in sorted(src.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".pyc", ".png", ".gguf"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        rel = path.relative_to(src.parent)
        for lineno, line in enumerate(text.splitlines(), 1):
            for m in REFERENCE.finditer(line):
                report.violations.append(Violation("reference", f"{rel}:{lineno}", f"mentions {m.group(0)!r}"))
        for m in CITATION.finditer(text):
            missing = [n for n in cited_sections(m.group(1)) if n not in sections]
            if missing:
                where = f"{rel}:{text.count(chr(10), 0, m.start()) + 1}"
                why = f"{protocol} has no section {missing[0]}" if protocol.is_file() else f"{protocol} is missing"
                report.violations.append(Violation("citation", where, f"cites {' '.join(m.group(0).split())}: {why}"))
    return report


def format_report(report: LayoutReport, largest: int = 12) -> str:
    """The figures table, the largest modules and every violation grouped by rule, as text."""
    modules = report.modules.values()
    total = sum(m.lines for m in modules)
    distinct = {(e.source, e.target) for e in report.edges if e.target in report.modules}
    per_layer = Counter(layer_of(m.name) for m in modules)
    lazy = [e for e in report.edges if e.lazy]

    def _against(e: Edge) -> bool:
        a, b = layer_of(e.source), layer_of(e.target)
        return a is not None and b is not None and b > a
    out = [
        f"Layout of {report.src}",
        "",
        f"{'figure':<44}{'value':>10}",
        f"{'modules (.py files)':<44}{len(report.modules):>10}",
        f"{'lines in modules':<44}{total:>10,}",
        f"{'modules under ' + str(MAX_LINES) + ' lines':<44}{sum(m.lines < MAX_LINES for m in modules):>10}",
        f"{'import edges between modules (distinct)':<44}{len(distinct):>10}",
        f"{'takeover imports inside functions':<44}{len(lazy):>10}",
        f"{'  in cli/ (commands)':<44}{sum(e.source.split('.')[1:2] == [COMMAND_FOLDER] for e in lazy):>10}",
        f"{'  against the layers':<44}{sum(_against(e) for e in lazy):>10}",
        f"{'modules per layer (0..' + str(len(LAYERS) - 1) + ')':<44}"
        + " ".join(str(per_layer.get(i, 0)) for i in range(len(LAYERS)))
        + (f"  unplaced {per_layer[None]}" if per_layer.get(None) else ""),
        *(f"{'import closure of ' + seam.module:<44}{len(seam_closure(report, seam.module)):>10}" for seam in SEAMS
          if f"{report.src.name}.{seam.module}" in report.modules),
        "",
        f"{'largest modules':<44}{'lines':>10}",
    ]
    for m in sorted(modules, key=lambda m: (-m.lines, m.rel))[:largest]:
        mark = "  over" if m.lines >= MAX_LINES else ""
        out.append(f"  {m.rel:<42}{m.lines:>10}{mark}")
    out += ["", f"{'rule':<16}{'':<50}{'violations':>10}"]
    for rule, text in RULES.items():
        out.append(f"{rule:<16}{text:<50}{report.count(rule):>10}")
    out.append(f"{'total':<66}{len(report.violations):>10}")
    for rule, text in RULES.items():
        found = [v for v in report.violations if v.rule == rule]
        if found:
            out += ["", f"== {rule}: {text} ({len(found)})"]
            out += [f"  {v}" for v in found]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    src = Path(args[0]) if args else DEFAULT_SRC
    try:
        report = check(src)
    except (FileNotFoundError, SyntaxError) as exc:
        print(f"check_layout: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(format_report(report))
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
