"""A predecessor run that sends a program's output into a file it keeps, and its small repository: the
test of unrecorded output (``test_unrecorded_output.py``) and ``benchmarks/fuzz_inputs.py`` use it.

``python3 -c '...uuid4()...' > run_id.txt`` stands for ``pytest test_dummy.py > pytest_output.txt``: the record
shows the command, never the bytes, and each replay writes other ones (a uuid surely, pytest's timing line
often). The other files the run keeps hold what the record shows: a here-document, an ``echo``, an output
later printed with ``cat``. Event 8 is the run's first source edit.
"""

from __future__ import annotations

from pathlib import Path

from _mini_swe_agent import write_1x
from conftest import git, make_repo

from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

INSTANCE = "acme__widget-1"
BASE = {"pkg/mod.py": "def f():\n    return 1\n", "tests/test_mod.py": "def test_f():\n    pass\n"}
STEPS = [
    ("cat <<'EOF' > check.py\nfrom pkg.mod import f\nprint('f() =', f())\nEOF", "", 0),           # event 0
    ("python3 -c 'import uuid; print(uuid.uuid4())' > run_id.txt", "", 0),                        # event 2
    ("echo 'hello there' > greeting.txt", "", 0),                                                 # event 4
    ("python3 check.py > answer.txt; cat answer.txt", "f() = 1", 0),                              # event 6
    ("sed -i 's/return 1/return 2/' pkg/mod.py", "", 0),                                          # event 8: the edit
    ("rm run_id.txt greeting.txt answer.txt check.py", "", 0),                                    # event 10
]
#: The same run without the program's output in a file: its replay is the same each time.
SAME_EACH_TIME = [(c.replace("rm run_id.txt ", "rm "), o, e) for c, o, e in STEPS if "uuid" not in c]


def output_run(root: Path, steps: list[tuple[str, str, int]] = STEPS) -> tuple[SourceTask, RepoSource, Path, Path]:
    """``(task, its mirror, the run file, a dataset holding the task)`` under ``root``: the repository, its
    mirror, and a mini-swe-agent 1.x run of ``steps`` that submits ``return 2``."""
    _, sha = make_repo(root / "src", BASE, bare_mirror=root / "mirror" / "acme__widget.git")
    task = SourceTask(instance_id=INSTANCE, repo="acme/widget", base_commit=sha, problem_statement="f() must be 2")
    final, _ = make_repo(root / "final", BASE)
    (final / "pkg" / "mod.py").write_text("def f():\n    return 2\n")
    git(final, "add", "-A")
    run = write_1x(root / "run.json", INSTANCE, steps, git(final, "diff", "--cached"))
    dataset = root / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    return task, RepoSource(root / "mirror", offline=True), run, dataset
