"""The repeat rule of rediscovery (docs/protocol.md section 9.1): the same command on the same state is a repeat,
whatever the command; a command that writes files is compared by the change it makes; the exceptions (time,
randomness, network, another environment). Crafted pairs for each shape the grammar reads: search idioms,
loops and ``if`` blocks, scratch scripts, here-documents fed to a program, ``python -c`` probes."""

from __future__ import annotations

import pytest
from test_rediscovery_labels import _labels, _run, cmd, edit

from takeover.rediscovery import REASONS, label_successor


def _with_reasons(result) -> list[tuple[int, str, int | None, str | None]]:
    return [(a.event, a.label, a.repeats, a.reason) for a in result.labels]


@pytest.mark.parametrize("pred_command,succ_command", [
    # find -exec grep: a content search over the found files, whatever the tool that repeats it
    ("find . -path ./test -prune -o -name '*.py' -type f -exec grep -l StatementSegment {} \\;",
     "grep -rl StatementSegment . --include='*.py'"),
    ("find src -name '*.py' -exec grep -n foo {} +", "find src -name \"*.py\" -exec grep -n foo {} \\;"),
    # find | xargs grep, with or without -print0 / -0
    ("find src -name '*.py' | xargs grep -n foo", "find src -name '*.py' -print0 | xargs -0 grep -n foo"),
    # grep over $(find ...) and backquotes, and rg with a glob
    ("grep -n foo $(find src -name '*.py')", "rg -n foo src -g '*.py'"),
    ("grep -n foo `find src -name '*.py'`", "grep -rn foo src --include=*.py"),
    # git grep, ag and ack
    ("git grep -n foo -- src", "ag foo src"),
    ("ack --type=python foo src", "rg -t python foo src"),
    ("git ls-files '*.py' | xargs grep foo", "grep -r foo --include='*.py'"),
])
def test_search_idioms_are_one_search(pred_command, succ_command):
    pred = _run([cmd(pred_command)])
    result = label_successor(pred, 1, _run([cmd(succ_command), cmd(pred_command)]))
    assert _with_reasons(result) == [(0, "research", 0, None), (2, "research", 0, None)]
    assert result.unrecognised == {}


def test_a_search_idiom_over_changed_files_or_another_pattern_is_new():
    pred = _run([cmd("find src -name '*.py' | xargs grep -n foo")])
    succ = _run([cmd("find src -name '*.py' | xargs grep -n bar"),  # 0: another pattern
                 cmd("sed -i 's/a/b/' src/m.py"),  # 2
                 cmd("grep -n foo $(find src -name '*.py')")])  # 4: src changed since the search
    assert _with_reasons(label_successor(pred, 1, succ)) == [
        (0, "new", None, "search"), (2, "new", None, "edit"), (4, "new", None, "search")]


def test_a_loop_over_literal_words_reads_each_file_and_is_listed_whole_when_unread():
    pred = _run([cmd("for f in src/a.py src/b.py; do head -n 20 $f; done"),  # 0
                 cmd("for f in $(ls src); do python count.py src/$f | tail -1; done")])  # 2: a script
    succ = _run([cmd("head -n 10 src/b.py"),  # 0: lines the loop printed
                 cmd("for f in src/a.py src/b.py; do cat $f; done"),  # 2: whole files: lines not seen
                 cmd("for f in $(ls src); do\n  python count.py src/$f\ndone"),  # 4: the same loop
                 cmd("for f in $(ls tests); do python count.py tests/$f; done")])  # 6: another
    result = label_successor(pred, 3, succ)
    assert _with_reasons(result) == [(0, "reread", 0, None), (2, "new", None, "read"), (4, "rerun", 2, None),
                                     (6, "new", None, "command")]
    # The loop that is left new is listed once, whole, not split into its parts.
    assert result.unrecognised == {"for f in $(ls tests); do python count.py tests/$f; done": 1}


def test_an_if_block_is_one_command():
    block = "if [ -f setup.py ]; then cat setup.py; else ls; fi"
    pred = _run([cmd(block)])
    succ = _run([cmd(block.replace("; ", ";  ")), cmd("if [ -f setup.cfg ]; then cat setup.cfg; fi")])
    result = label_successor(pred, 1, succ)
    assert _with_reasons(result) == [(0, "rerun", 0, None), (2, "new", None, "command")]
    assert result.unrecognised == {"if [ -f setup.cfg ]; then cat setup.cfg; fi": 1}


def test_a_scratch_script_of_the_predecessor_rerun_on_the_same_state_whatever_its_name():
    write = "cat <<'EOF' > debug_issue.py\nfrom calc import add\nprint(add(1, 2))\nEOF"
    pred = _run([cmd(write), cmd("python debug_issue.py"), cmd("python add_debug.py"),
                 cmd("sed -i 's/a - b/a + b/' src/calc.py"), cmd("python debug_issue.py")])
    succ = _run([
        cmd(write),  # 0: the same here-document on the same state: the predecessor's change
        cmd("cd /testbed && python   debug_issue.py 2>&1 | head -n 40"),  # 2: the same run, output plumbing apart
        cmd("python add_debug.py > /dev/null"),  # 4
        cmd("python debug_issue.py | grep 3"),  # 6: another pipeline: another command
        cmd("sed -i 's/a - b/a + b/' src/calc.py"),  # 8: the checkpoint's edit
        cmd("python debug_issue.py"),  # 10: on the state after the edit: the predecessor's event 8
        cmd("python debug_detailed2.py"),  # 12: never run
    ])
    result = label_successor(pred, 9, succ, start="base")
    assert _with_reasons(result) == [
        (0, "redo_edit", 0, None), (2, "rerun", 2, None), (4, "rerun", 4, None), (6, "new", None, "command"),
        (8, "redo_edit", 6, None), (10, "rerun", 8, None), (12, "new", None, "command")]
    assert result.unrecognised == {"python debug_detailed2.py": 1, "python debug_issue.py": 1}
    # From the checkpoint (the edit applied), only the run on the state after the edit repeats.
    from_checkpoint = label_successor(pred, 9, _run([cmd("python debug_issue.py"), cmd("python add_debug.py")]))
    assert _with_reasons(from_checkpoint) == [(0, "rerun", 8, None), (2, "new", None, "command")]


def test_here_documents_fed_to_a_program_and_python_c_probes():
    lint = "sqlfluff lint - 2>&1 <<EOF\nSELECT a FROM t\nEOF"
    probe = 'python -c "import calc; print(calc.__version__)"'
    pred = _run([cmd(lint), cmd(probe)])
    succ = _run([cmd(lint.replace("2>&1 ", "")),  # 0: the same input
                 cmd("sqlfluff lint - <<'SQL'\nSELECT b FROM t\nSQL"),  # 2: other input: another run
                 cmd("python -c 'import calc; print(calc.__version__)'"),  # 4: quoting apart, the same words
                 cmd('python -c "import calc;print(calc.__version__)"')])  # 6: other code
    assert _with_reasons(label_successor(pred, 3, succ)) == [
        (0, "rerun", 0, None), (2, "new", None, "command"), (4, "rerun", 2, None), (6, "new", None, "command")]


def test_output_that_depends_on_time_randomness_or_the_network_is_never_a_repeat():
    script = "cat <<'EOF' > stamp.py\nimport datetime\nprint(datetime.datetime.now())\nEOF"
    commands = [script, "python stamp.py",  # a script whose code reads the clock
                'python -c "import random; print(random.random())"', "date", "pip install numpy",
                "curl -s https://example.com", "python reproduce.py"]
    pred = _run([cmd(c) for c in commands])
    result = label_successor(pred, len(pred.events) - 1, _run([cmd(c) for c in commands]), start="base")
    assert _with_reasons(result) == [
        (0, "redo_edit", 0, None), (2, "new", None, "time"), (4, "new", None, "randomness"), (6, "new", None, "time"),
        (8, "new", None, "network"), (10, "new", None, "network"), (12, "rerun", 12, None)]
    assert set(REASONS) >= {a.reason for a in result.labels if a.reason}


def test_installed_packages_and_scratch_files_outside_the_repository_are_part_of_the_state():
    probe = 'python -c "import numpy"'
    pred = _run([cmd(probe), cmd("pip install numpy"), cmd(probe),
                 cmd("cat > /tmp/t.py <<EOF\nprint(1)\nEOF"), cmd("python /tmp/t.py")])
    # The same run from the start: each probe repeats the one on the same environment.
    same = label_successor(pred, 9, pred, start="base")
    assert _with_reasons(same)[:3] == [(0, "rerun", 0, None), (2, "new", None, "network"), (4, "rerun", 4, None)]
    assert _with_reasons(same)[3:] == [(6, "redo_edit", 6, None), (8, "rerun", 8, None)]
    # A successor that resumed from the checkpoint runs in the task's own environment: no numpy, no /tmp/t.py.
    resumed = label_successor(pred, 9, _run([cmd(probe), cmd("python /tmp/t.py"),
                                             cmd("cat > /tmp/t.py <<EOF\nprint(2)\nEOF"), cmd("python /tmp/t.py")]))
    assert _with_reasons(resumed) == [(0, "rerun", 0, None), (2, "new", None, "command"), (4, "new", None, "edit"),
                                      (6, "new", None, "command")]


def test_a_command_that_writes_files_is_compared_by_the_change_it_makes():
    pred = _run([cmd("sed -i 's/a/b/' src/x.py"), cmd("sed -i 's/b/c/' src/x.py"),
                 edit("/testbed/src/y.py", "old", "new"), cmd("python apply_fix.py")])
    succ = _run([cmd("sed -i 's/a/b/' src/x.py"),  # 0: an intermediate change of the predecessor's
                 cmd("sed -i 's/b/d/' src/x.py"),  # 2: a change it did not make
                 edit("/testbed/src/y.py", "old", "new"),  # 4: the checkpoint's edit
                 cmd("python apply_fix.py")])  # 6: a script that (the states say) rewrites src/z.py
    # Without states the script writes nothing seen, and it runs on another state than the predecessor's run.
    assert _with_reasons(label_successor(pred, 7, succ, start="base")) == [
        (0, "redo_edit", 0, None), (2, "new", None, "edit"), (4, "redo_edit", 4, None), (6, "new", None, "command")]
    pred_states = [{"src/x.py": "b"}] * 2 + [{"src/x.py": "c"}] * 2 + [{"src/x.py": "c", "src/y.py": "y"}] * 2 + [
        {"src/x.py": "c", "src/y.py": "y", "src/z.py": "z"}] * 2
    succ_states = [{"src/x.py": "b"}] * 2 + [{"src/x.py": "d"}] * 2 + [{"src/x.py": "d", "src/y.py": "y"}] * 2 + [
        {"src/x.py": "d", "src/y.py": "y", "src/z.py": "z"}] * 2
    with_states = label_successor(pred, 7, succ, start="base", predecessor_states=pred_states,
                                  successor_states=succ_states)
    # With states the script's change is seen: the change the predecessor's run of it made (event 6).
    assert _with_reasons(with_states) == [
        (0, "redo_edit", 0, None), (2, "new", None, "edit"), (4, "redo_edit", 4, None), (6, "redo_edit", 6, None)]


def test_messages_and_rejected_actions_are_new_with_their_reason():
    pred = _run([cmd("ls"), {"type": "message", "text": "I think the bug is in add()."}])
    succ = _run([{"type": "message", "text": "I think the bug is in add()."},
                 {**cmd("ls"), "format_error": True}, {**cmd("ls"), "not_applied": True}])
    assert _labels(label_successor(pred, 3, succ)) == [(0, "new", None), (2, "new", None), (4, "new", None)]
    assert [a.reason for a in label_successor(pred, 3, succ).labels] == ["message"] * 3
