"""The words a note's claims are made of: paths, line ranges, test identifiers, commands, functions and
classes, error names, outcome words and the verbs that say what was done to a file (docs/protocol.md
section 7.6).

Regular expressions and small classifiers over strings, used by :mod:`takeover.claims.extraction`. Nothing
here reads a trajectory.
"""

from __future__ import annotations

import re

from takeover.commands import is_verification_command, segments

#: Suffixes that make a word a file path (source suffixes of docs/protocol.md section 3.2, configuration,
#: documentation and data files an agent reads or writes).
PATH_SUFFIXES = (
    "py", "pyi", "pyx", "pxd", "js", "jsx", "mjs", "ts", "tsx", "java", "go", "rs", "c", "cc", "cpp", "h", "hpp", "cs",
    "rb", "php", "scala", "kt", "sh", "cfg", "ini", "toml", "txt", "rst", "md", "json", "yaml", "yml", "html", "css",
    "xml", "in", "lock", "patch", "diff", "log", "csv",
)
_SUFFIX = "|".join(sorted(PATH_SUFFIXES, key=len, reverse=True))
#: A file path (``requests/auth.py``, ``./reproduce.py``, ``/testbed/setup.cfg``), optionally followed by a line
#: or a range (``auth.py:146``, ``auth.py:146-148``, ``auth.py#L146-L148``).
PATH = re.compile(
    rf"(?<![\w/.@:-])(?P<path>(?:\.{{1,2}}/|/)?(?:[\w.-]+/)*[\w-][\w.-]*\.(?:{_SUFFIX}))(?![\w/-]|\.\w)"
    r"(?:(?::|#L)(?P<start>\d+)(?:(?:-|–|:)L?(?P<end>\d+))?)?"
)
#: A folder written as such: ``src/_pytest/``, ``./testing/``.
FOLDER = re.compile(r"(?<![\w/.@:-])(?P<path>(?:\.{1,2}/)?(?:[A-Za-z_][\w.-]*/)+)(?=[\s,;:)\]]|$)")
#: A pytest test id: ``testing/test_capture.py::TestX::test_y[param]``.
TEST_ID = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w.-]+\.py::[\w:]+(?:\[[^\]\s]*\])?")
#: A test function or class by name: ``test_digest_auth``, ``TestCapture``.
TEST_NAME = re.compile(r"(?<![\w.])(?:test_\w+|Test[A-Z]\w*)\b(?!\.\w)")
#: Lines of a file: ``line 147``, ``lines 130-160``, ``lines 146 to 148``, ``L146-L148``.
LINES = re.compile(r"\b(?:lines?\s+(?P<start>\d+)(?:\s*(?:-|–|to|through|and)\s*(?P<end>\d+))?|"
                   r"L(?P<lstart>\d+)(?:-L?(?P<lend>\d+))?)\b")
#: An exception or warning class: ``AttributeError``, ``AssertionError``, ``DeprecationWarning``, ``Traceback``.
ERROR = re.compile(r"\b(?:[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning)|Traceback|KeyboardInterrupt|StopIteration)\b")
#: Functions and classes: ``def f``/``class C``, a call ``f()``/``a.b()``, a dotted name ``a.b.c``, a
#: snake_case name with an underscore, a CamelCase name with two capitals.
SYMBOL = re.compile(
    r"\b(?:def|class)\s+(?P<defined>[A-Za-z_]\w*)|"
    r"(?<![\w.])(?P<call>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\(\)|"
    r"(?<![\w./-])(?P<dotted>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(/-])|"
    r"(?<![\w./-])(?P<snake>_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+_*|__[a-z]+__)(?![\w(/-])|"
    r"(?<![\w./-])(?P<camel>[A-Z](?=\w*[a-z])(?=[A-Za-z0-9]*[A-Z])[A-Za-z0-9]+)(?![\w(/-])"
)
#: Dotted words and CamelCase words that are English, a product or an abbreviation, never code.
NOT_SYMBOLS = frozenset({
    "e.g", "i.e", "etc", "vs", "a.k.a", "GitHub", "JavaScript", "TypeScript", "PyPI", "NumPy", "SymPy", "SciPy",
    "PyTest", "macOS", "iOS", "OpenAI", "ChatGPT", "LaTeX", "README", "NONE_OBSERVED",
})
#: Programs a command in a note may start with (a backticked word with arguments is a command when its
#: program is one of these or a script).
PROGRAMS = frozenset({
    "python", "python3", "pytest", "py.test", "tox", "nox", "git", "grep", "egrep", "rg", "sed", "awk", "cat", "head",
    "tail", "nl", "ls", "find", "pip", "pip3", "make", "bash", "sh", "cd", "echo", "mkdir", "rm", "cp", "mv", "touch",
    "diff", "patch", "wc", "sort", "curl", "npm", "yarn", "pnpm", "node", "go", "cargo", "mypy", "ruff", "flake8",
    "pylint", "django-admin", "coverage", "unittest", "runtests.py", "test", "apply_patch", "str_replace_editor",
})
def _verb(pattern: str) -> re.Pattern[str]:
    """A verb as a word of prose, never a part of code (``add()``, `` `edit` ``, ``obj.update``)."""
    return re.compile(rf"(?<![\w`.])(?:{pattern})(?![\w(`])", re.IGNORECASE)


#: Words of a clause that say what was done to a file, by class (the nearest verb before a path decides).
VERBS: dict[str, re.Pattern[str]] = {
    "revert": _verb(r"revert(?:s|ed|ing)?|undo(?:es|ne|ing)?|undid|restor(?:e|es|ed|ing)|roll(?:s|ed|ing)? back|"
                    r"rollback"),
    "create": _verb(r"creat(?:e|es|ed|ing)|added a new file|new (?:file|script)"),
    "edit": _verb(
        r"edit(?:s|ed|ing)?|modif(?:y|ies|ied|ying|ications?)|chang(?:e|es|ed|ing)|updat(?:e|es|ed|ing)|"
        r"patch(?:es|ed|ing)?|fix(?:es|ed|ing)?|add(?:s|ed|ing)?|insert(?:s|ed|ing)?|replac(?:e|es|ed|ing)|"
        r"remov(?:e|es|ed|ing)|delet(?:e|es|ed|ing)|rewr(?:ote|ite|ites|itten)|refactor(?:s|ed|ing)?|"
        r"implement(?:s|ed|ing)?|adjust(?:s|ed|ing)?|alter(?:s|ed|ing)?|amend(?:s|ed|ing)?|wrote|writes|"
        r"appl(?:y|ies|ied)"),
    "run": _verb(r"r[au]n(?:s|ning)?|re-?r[au]n(?:s|ning)?|execut(?:e|es|ed|ing)|invok(?:e|es|ed|ing)"),
    "read": _verb(
        r"read(?:s|ing)?|open(?:s|ed|ing)?|view(?:s|ed|ing)?|inspect(?:s|ed|ing)?|examin(?:e|es|ed|ing)|"
        r"look(?:s|ed|ing)? (?:at|into|through)|review(?:s|ed|ing)?|print(?:s|ed|ing)?|display(?:s|ed|ing)?|"
        r"stud(?:y|ies|ied)|explor(?:e|es|ed|ing)|search(?:es|ed|ing)?|grepp?(?:s|ed|ing)?|check(?:s|ed|ing)?"),
}
#: A file said not to have changed: ``did not modify``, ``no changes to``, ``is unchanged``.
UNCHANGED = re.compile(
    r"\b(?:(?:did|does|has|have|was|were|is|are)\s*(?:not|n't)|never)\s+(?:yet\s+)?(?:been\s+)?"
    r"(?:edit|modif|chang|touch|updat|alter)\w*|\bno (?:code )?(?:changes|edits|modifications)\b|"
    r"\b(?:is|are|remains?|was|were|left)\s+(?:unchanged|untouched|unmodified|intact)\b",
    re.IGNORECASE,
)
#: Words that report an outcome: ``passes``, ``passed``, ``fails``, ``failed``, ``errors``, ``no failures``.
OUTCOME = re.compile(
    r"\b(?P<passed>pass(?:es|ed|ing)?|succeed(?:s|ed)?|succeeded|successful(?:ly)?|all green)\b|"
    r"\b(?P<failed>fail(?:s|ed|ing|ures?)?|errored|errors? out|crash(?:es|ed)?|broke|breaks)\b",
    re.IGNORECASE,
)
PAST_OUTCOMES = frozenset({"passed", "succeeded", "successfully", "failed", "errored", "crashed", "broke"})
#: A verification said not to have run (since the latest edit): ``has not been run``, ``not yet re-run``,
#: ``without running``, ``unverified``.
NOT_VERIFIED = re.compile(
    r"\b(?:(?:has|have|had|was|were|is|are|did|does)\s*(?:not|n't)|never|not)\s+(?:yet\s+)?(?:been\s+)?"
    r"(?:re-?)?(?:run|ran|executed|verified|tested|validated|re-?checked|confirmed)\b|"
    r"\bwithout (?:re-?)?running\b|\b(?:unverified|untested|not yet verified)\b|"
    r"\bno (?:tests?|checks?|verification|validation)s? (?:were|was|have been|has been) (?:re-?)?(?:run|performed)\b",
    re.IGNORECASE,
)
#: Subjects of an outcome that name no test: the tests, the test suite, the (reproduction) script.
GENERIC_SUBJECT = re.compile(
    r"\b(?P<tests>(?:test[- ]suite|tests|the suite|unit tests?|test run))\b|"
    r"\b(?P<script>(?:reproduc\w* |repro |verification |check )?script|reproduction|reproducer)\b",
    re.IGNORECASE,
)
_NEGATION_BEFORE = re.compile(r"\b(?:not|never|no longer|n't)\s+(?:\w+\s+)?$|n't\s+(?:\w+\s+)?$", re.IGNORECASE)
_NO_BEFORE = re.compile(r"\b(?:no|without(?: any)?|zero|0)\s+$", re.IGNORECASE)
#: Words of a clause that make it a plan (what is still to do) rather than a report.
TODO = re.compile(
    r"\b(?:next(?: step)?|should|need(?:s|ed)? to|must|have to|has to|to do|todo|recommend\w*|suggest\w*|"
    r"consider|will|remains? to|still (?:needs?|has|have) to|yet to|plan(?:s|ned)? to|propos\w+|"
    r"follow[- ]up|requir(?:e|es|ed) (?:the agent |us |you )?to|asks? (?:the agent |us |you )?to|wants? (?:the agent |us |you )?to)\b",
    re.IGNORECASE,
)
#: Words of a clause that make it a guess rather than a report.
HEDGE = re.compile(
    r"(?<!check )(?<!checked )(?<!checking )(?<!see )(?<!saw )(?<!verify )(?<!verified )(?<!test )(?<!tested )"
    r"\b(?:whether|if)\b|"  # "checked if X" reports a check; "if X fails" is a condition
    r"\b(?:unclear|unknown|uncertain|may|might|possibly|probably|likely|perhaps|seems?|seemed|appears?|appeared|"
    r"looks? like|apparently|not sure|unless|assum\w+|suspect\w*|could|would)\b",
    re.IGNORECASE,
)
#: First words that make a clause an instruction (a plan): ``Run ...``, ``Revert ...`` (not ``Read``, which
#: notes use in the past tense as often).
IMPERATIVES = frozenset({
    "run", "rerun", "re-run", "edit", "check", "verify", "revert", "add", "update", "fix", "review", "inspect",
    "confirm", "ensure", "remove", "create", "open", "look", "test", "investigate", "apply", "implement", "modify",
    "change", "write", "make", "delete", "restore", "undo", "execute", "validate", "keep", "finish", "complete",
    "use", "try", "examine", "debug", "re-apply", "reapply", "replace", "rewrite", "refactor", "adjust",
})


def outcome_of(match: re.Match[str], clause: str, offset: int) -> tuple[str, str, bool]:
    """``(outcome, tense, denial)`` of an :data:`OUTCOME` match in ``clause`` (``offset``: the match's start in
    it): ``passed``/``failed``, ``past``/``present``; a negation flips it ("does not pass": failed); ``no``
    before a failure word is a denial of failures ("no failures observed": passed, past, ``denial``)."""
    word = match.group(0).lower()
    outcome = "passed" if match.group("passed") else "failed"
    before = clause[max(0, offset - 30):offset]
    if _NO_BEFORE.search(before) and outcome == "failed":
        return "passed", "past", True
    if _NEGATION_BEFORE.search(before):
        outcome = "failed" if outcome == "passed" else "passed"
    tense = "past" if word in PAST_OUTCOMES or re.search(r"\b(?:was|were|had)\s+$", before) else "present"
    return outcome, tense, False


def looks_like_command(text: str) -> bool:
    """Whether a quoted piece of a note is a shell command: its program (after wrappers) is one of
    :data:`PROGRAMS` or a script (``./run.sh``, ``reproduce.py``) given with arguments, or the grammar of
    docs/protocol.md section 4.1 calls it a verification command."""
    text = text.strip().removeprefix("$ ").strip()
    if not text or "\n" in text.strip():
        return False
    segs = segments(text)
    if not segs or segs[0].program is None:
        return False
    program = segs[0].program
    if program in PROGRAMS or re.fullmatch(r"python\d(?:\.\d+)?", program):
        return True
    if is_verification_command(text):
        return True
    return (program.startswith("./") or "/" in segs[0].words[0]) and len(segs[0].words) > 1


def is_symbol(word: str) -> bool:
    """Whether ``word`` (a quoted piece or a match of :data:`SYMBOL`) names a function or class."""
    word = word.strip().removesuffix("()")
    word = re.sub(r"^(?:def|class)\s+", "", word)
    return bool(re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", word)) and word not in NOT_SYMBOLS


def symbol_name(word: str) -> str:
    """The name a symbol claim is checked by: ``def f`` -> ``f``, ``a.b()`` -> ``a.b``."""
    return re.sub(r"^(?:def|class)\s+", "", word.strip()).removesuffix("()")
