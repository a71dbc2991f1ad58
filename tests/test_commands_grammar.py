"""The shell-command grammar (takeover.commands): segments, wrappers, pipelines, here-documents, git options,
and what a command reads, searches and writes."""

from __future__ import annotations

import pytest

from takeover.commands import (
    FileRead,
    NormalForm,
    Search,
    changes_environment,
    file_reads,
    heredoc_targets,
    is_read_only,
    is_restore_command,
    is_verification_command,
    normal_form,
    rewrites_worktree,
    scripts_run,
    searches,
    segments,
    varying_output,
    written_files,
)


def test_segments_split_outside_quotes_and_command_substitutions():
    segs = segments("cd /testbed && grep -n 'a|b; c' f.py | head -3; echo $(ls | wc -l)")
    assert [s.program for s in segs] == ["cd", "grep", "head", "echo"]
    assert [s.operator for s in segs] == ["", "&&", "|", ";"]
    assert segs[1].args == ("-n", "a|b; c", "f.py")
    assert segs[2].piped


def test_redirections_are_not_split_and_not_words():
    seg = segments("pytest -x tests 2>&1 > out.log")[0]
    assert seg.program == "pytest" and seg.args == ("-x", "tests")
    assert seg.writes_files == ("out.log",)
    assert segments("ls &>/dev/null")[0].writes_files == ()


@pytest.mark.parametrize("command,program", [
    ("timeout 60 pytest -x", "pytest"),
    ("timeout -s KILL 60 pytest", "pytest"),
    ("stdbuf -oL pytest", "pytest"),
    ("stdbuf -o L pytest", "pytest"),
    ("xvfb-run -a python -m pytest", "pytest"),
    ("xvfb-run -s '-screen 0 1x1x8' pytest", "pytest"),
    ("builtin cd src", "cd"),
    ("env -u HOME X=1 cat f.py", "cat"),
    ("sudo -u bob nice -n 5 cat f.py", "cat"),
    ("FOO=1 /usr/bin/cat f.py", "cat"),
    ("npx jest", "jest"),
    ("uv run --frozen pytest", "pytest"),
    ("python3 -mpytest", "pytest"),
])
def test_program_after_wrappers_and_launchers(command, program):
    assert segments(command)[0].program == program


def test_here_document_bodies_are_not_commands_but_their_targets_are_written():
    command = "cat <<'EOF' > helper.py\nimport pytest\nEOF\npython helper.py"
    assert [s.program for s in segments(command)] == ["cat", "python"]
    assert heredoc_targets(command) == [("helper.py", "import pytest")]
    assert written_files(command) is None  # python helper.py may write anything
    assert written_files("cat > a.py <<EOF\nx = 1\nEOF") == ["a.py"]


def test_verification_through_the_union_of_wrappers():
    assert is_verification_command("builtin command pytest")
    assert is_verification_command("stdbuf -oL xvfb-run -a tox -e py3")
    assert not is_verification_command("cat <<'EOF' > t.py\nimport pytest\nEOF")


@pytest.mark.parametrize("command,reads", [
    ("cat src/a.py", [FileRead("src/a.py")]),
    ("cat -n a.py b.py", [FileRead("a.py"), FileRead("b.py")]),
    ("nl -ba a.py | sed -n '10,20p'", [FileRead("a.py", 10, 20)]),
    ("cat a.py | head -n 5", [FileRead("a.py", 1, 5)]),
    ("sed -n '10,20p' a.py", [FileRead("a.py", 10, 20)]),
    ("sed -n 5p a.py", [FileRead("a.py", 5, 5)]),
    ("sed -n '30,$p' a.py", [FileRead("a.py", 30, None)]),
    ("head -n 40 a.py", [FileRead("a.py", 1, 40)]),
    ("head -40 a.py", [FileRead("a.py", 1, 40)]),
    ("tail -n 5 a.py", [FileRead("a.py", -5, None)]),
    ("tail -n +7 a.py", [FileRead("a.py", 7, None)]),
    ("cat < a.py", [FileRead("a.py")]),
    ("grep foo a.py | head -3", []),
    ("sed -i 's/a/b/' a.py", []),
])
def test_file_reads(command, reads):
    assert file_reads(command) == reads


@pytest.mark.parametrize("command,found", [
    ("grep -rn 'def foo' src --include=*.py", [Search("content", "def foo", ("src", "filter:*.py"))]),
    ("rg -n 'def foo' src -g '*.py'", [Search("content", "def foo", ("src", "filter:*.py"))]),
    ("grep -r -e foo .", [Search("content", "foo", (".",))]),
    ("git --no-pager grep -n foo", [Search("content", "foo", (".",))]),
    ("find . -name '*.py' -type f", [Search("names", "-name *.py -type f", (".",))]),
    ("ls -la src", [Search("list", "", ("src",))]),
    ("cat a.py | grep foo", []),
    ("grep --color foo a.py", [Search("content", "foo", ("a.py",))]),  # --color takes no word of its own
    # the idioms that hand a searcher its files: the finder's roots and name filters are the scope
    ("find . -path ./test -prune -o -name '*.py' -type f -exec grep -l StatementSegment {} \\;",
     [Search("content", "StatementSegment", (".", "filter:*.py"))]),
    ("find src -name '*.py' | xargs grep -n foo", [Search("content", "foo", ("src", "filter:*.py"))]),
    ("find . -name '*.py' -print0 | xargs -0 -r grep -l foo", [Search("content", "foo", (".", "filter:*.py"))]),
    ("grep -n foo $(find src -name '*.py')", [Search("content", "foo", ("src", "filter:*.py"))]),
    ("grep -n foo `find src tests -name '*.py'`", [Search("content", "foo", ("src", "tests", "filter:*.py"))]),
    ("git ls-files '*.py' | xargs grep foo", [Search("content", "foo", (".", "filter:*.py"))]),
    ("grep -rl foo src | xargs grep -n bar",
     [Search("content", "foo", ("src",)), Search("content", "bar", ("src",))]),
    ("git grep -n foo -- src", [Search("content", "foo", ("src",))]),
    ("ag -G '\\.py$' foo lib", [Search("content", "foo", ("lib", "filter:\\.py$"))]),
    ("ack --type=python foo lib", [Search("content", "foo", ("lib", "filter:type:python"))]),
    ("rg -t py -C 3 foo", [Search("content", "foo", (".", "filter:type:py"))]),
    ("ag -g fields src", [Search("names", "fields", ("src",))]),
    # files the shell computes are not known: no search
    ("grep foo $(cat list.txt)", []),
    ("find . -name '*.py' -exec cat {} \\;", []),
    ("ls $d", []),
])
def test_searches(command, found):
    assert searches(command) == found


@pytest.mark.parametrize("command,segs", [
    # the reserved words are not the command; headers and closing words are no segment
    ("if grep -q foo a.py; then cat a.py; else ls; fi", [("grep", "grep -q foo a.py"), ("cat", "cat a.py"),
                                                          ("ls", "ls")]),
    ("while ! make; do sleep 1; done", [("make", "make"), ("sleep", "sleep 1")]),
    # a loop over literal words: its body once per word
    ("for f in a.py b.py; do head -5 $f; done", [("head", "head -5 a.py"), ("head", "head -5 b.py")]),
    ("for f in a b\ndo\n  for g in x y; do cat $f/${g}.py; done\ndone",
     [("cat", "cat a/x.py"), ("cat", "cat a/y.py"), ("cat", "cat b/x.py"), ("cat", "cat b/y.py")]),
    # over anything else: once, unexpanded; single quotes are not expanded
    ("for f in $(ls); do grep -n x \"$f\"; done", [("grep", 'grep -n x "$f"')]),
    ("for f in a; do echo '$f' $f; done", [("echo", "echo '$f' a")]),
    ("case $x in a) cat a ;; *) ls ;; esac", [("cat", "cat a"), ("ls", "ls")]),
    ("{ cat a; cat b; } > out", [("cat", "cat a"), ("cat", "cat b"), (None, "> out")]),
])
def test_compound_commands(command, segs):
    found = segments(command)
    assert [(s.program, s.text) for s in found] == segs
    assert {s.block for s in found} == {command}


def test_writes_read_only_and_restores():
    assert written_files("sed -i 's/a/b/' a.py b.py") == ["a.py", "b.py"]
    assert written_files("echo x | tee -a log.txt") == ["log.txt"]
    assert written_files("cat a.py") == []
    assert written_files("cp a.py.bak a.py") == ["a.py"]
    assert is_read_only("git -C /testbed --no-pager diff | head") and not is_read_only("git -C x checkout a.py")
    assert rewrites_worktree("cd /testbed && git -c core.x=1 stash")
    assert is_restore_command("mv a.py.orig a.py") and not is_restore_command("cp a.py a.py.orig")
    assert is_read_only("find . -name '*.py' -exec grep -l foo {} +") and not is_read_only("find . -exec rm {} +")
    assert is_read_only("for f in a b; do cat $f; done") and not is_read_only("for f in a b; do sed -i s/x/y/ $f; done")
    assert written_files("for f in a.py b.py; do sed -i 's/x/y/' $f; done") == ["a.py", "b.py"]
    assert file_reads("cat $f") == [] and file_reads("head -3 $(ls *.py)") == []


@pytest.mark.parametrize("one,other", [
    ("cd /testbed && python debug_issue.py 2>&1 | head -n 40", "cd /testbed; python  debug_issue.py"),
    ("python x.py > /dev/null 2>&1", "python x.py |& tail -5 | cat"),
    ("python -c \"import a; print(a)\"", "python -c 'import a; print(a)'"),
    ("lint - <<EOF\nSELECT 1   \nEOF", "lint - <<'SQL'\nSELECT 1\nSQL"),
    ("for f in a b; do\n  python t.py $f\ndone", "for f in a b; do python t.py $f; done"),
])
def test_normal_form_keeps_what_runs_and_drops_how_it_is_shown(one, other):
    assert normal_form(one) == normal_form(other)


@pytest.mark.parametrize("one,other", [
    ("python debug_issue.py", "python debug_issue.py | grep x"),  # a filter asks another question
    ("python debug_issue.py", "python debug_issue.py > out.txt"),  # a file written
    ("grep 'a b' f", "grep a b f"),  # words, not characters
    ("lint - <<EOF\nSELECT 1\nEOF", "lint - <<EOF\nSELECT 2\nEOF"),  # another input
    ("tail -n 5 log.txt", "cat log.txt"),
])
def test_normal_form_tells_other_runs_apart(one, other):
    assert normal_form(one) != normal_form(other)


def test_normal_form_of_a_leading_cd():
    assert normal_form("cd src && ls") == NormalForm("src", "ls")
    assert normal_form("ls && cd src") == NormalForm(None, "ls && cd src")


@pytest.mark.parametrize("command,scripts,varies", [
    ("date +%Y", [], "time"),
    ("time python x.py", [], "time"),
    ('python -c "import datetime; print(datetime.datetime.now())"', [], "time"),
    ("python stamp.py", ["import time\nprint(time.time())"], "time"),
    ("python - <<EOF\nimport uuid\nprint(uuid.uuid4())\nEOF", [], "randomness"),
    ("echo $RANDOM", [], "randomness"),
    ("shuf -n 1 names.txt", [], "randomness"),
    ("pip install -e .", [], "network"),
    ("python -m pip install numpy", [], "network"),
    ("git fetch origin", [], "network"),
    ("curl -s https://example.com", [], "network"),
    ('python -c "import urllib.request as u; print(u.urlopen(\'http://x\').read())"', [], "network"),
    ("python reproduce.py", ["import requests\nprint(requests.Request('GET', 'http://x').prepare().url)"], None),
    ("pytest -q", [], None),
    ("git status", [], None),
])
def test_output_that_depends_on_more_than_the_files(command, scripts, varies):
    assert varying_output(command, scripts) == varies


def test_what_changes_the_environment_and_which_scripts_a_command_runs():
    assert changes_environment("pip install numpy") and changes_environment("uv pip install -e .")
    assert changes_environment("python setup.py develop") and changes_environment("npm ci")
    assert not changes_environment("pip download numpy") and not changes_environment("git pull")
    assert scripts_run("cd x && python -u t.py 1 && bash run.sh && ./go.sh && python -c 1 && python -m pytest") == [
        "t.py", "run.sh", "./go.sh"]
