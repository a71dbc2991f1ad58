"""The shell-command grammar (takeover.commands): segments, wrappers, pipelines, here-documents, git options,
and what a command reads, searches and writes."""

from __future__ import annotations

import pytest

from takeover.commands import (
    FileRead,
    Search,
    file_reads,
    heredoc_targets,
    is_read_only,
    is_restore_command,
    is_verification_command,
    rewrites_worktree,
    searches,
    segments,
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
])
def test_searches(command, found):
    assert searches(command) == found


def test_writes_read_only_and_restores():
    assert written_files("sed -i 's/a/b/' a.py b.py") == ["a.py", "b.py"]
    assert written_files("echo x | tee -a log.txt") == ["log.txt"]
    assert written_files("cat a.py") == []
    assert written_files("cp a.py.bak a.py") == ["a.py"]
    assert is_read_only("git -C /testbed --no-pager diff | head") and not is_read_only("git -C x checkout a.py")
    assert rewrites_worktree("cd /testbed && git -c core.x=1 stash")
    assert is_restore_command("mv a.py.orig a.py") and not is_restore_command("cp a.py a.py.orig")
