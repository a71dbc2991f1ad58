"""The claims of a note checked against the trace (docs/protocol.md section 7.6): crafted notes on a crafted
run, each claim labelled with the event that shows it; the claims of a structured note by field; which views
are checked."""

from __future__ import annotations

import pytest
from test_rediscovery_labels import cmd, edit, view

from takeover.claims import check_note, checks_claims, note_block, note_claims, structured_fields, trace_facts
from takeover.trajectories import Event, LLMCall, Trajectory, Usage
from takeover.views.prompt import render
from takeover.views.structured import ModelNotes, compute_fields
from takeover.vocabulary import VIEWS

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
PYTEST_OUT = ("tests/test_calc.py::test_add FAILED\ntests/test_calc.py::test_sub PASSED\n"
              "E       AssertionError: assert -1 == 3\n=========== 1 failed, 1 passed in 0.12s ===========")
CHECKPOINT = """diff --git a/src/calc.py b/src/calc.py
index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644
--- a/src/calc.py
+++ b/src/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""


def crafted_run() -> Trajectory:
    """Events: 0 ``cat src/calc.py`` (1: its content), 2 the fix of add in src/calc.py, 4 an edit of
    src/util.py, 6 ``git checkout src/util.py`` (undoes it), 8 pytest (9: test_add FAILED, test_sub PASSED),
    10 ``sed -n '1,3p' src/calc.py``."""
    actions = [
        (cmd("cat src/calc.py"), CALC, 0),
        (edit("src/calc.py", "    return a - b\n\n\ndef sub", "    return a + b\n\n\ndef sub"), "edited", 0),
        (edit("src/util.py", "x = 1", "x = 2"), "edited", 0),
        (cmd("git checkout src/util.py"), "Updated 1 path from the index", 0),
        (cmd("python -m pytest tests/test_calc.py -v"), PYTEST_OUT, 1),
        (cmd("sed -n '1,3p' src/calc.py"), "def add(a, b):\n    return a + b\n", 0),
    ]
    events, calls = [], []
    for n, (fields, output, code) in enumerate(actions):
        a = len(events)
        events.append(Event(index=a, kind="action", source="agent", llm_call=n, text=fields.get("text", ""),
                            **{k: v for k, v in fields.items() if k != "text"}))
        events.append(Event(index=a + 1, kind="observation", source="environment", type=fields["type"], cause=a,
                            text=output, exit_code=code))
        calls.append(LLMCall(index=n, usage=Usage(prompt_tokens=100, completion_tokens=1)))
    return Trajectory(format="mini-swe-agent", working_dir="/testbed", events=events, llm_calls=calls)


def verdicts(note: str, cut: int = 11, patch: str | None = CHECKPOINT, **kw) -> list[tuple[str, str, str, int | None]]:
    facts = trace_facts(crafted_run(), cut, checkpoint_patch=patch, problem_statement="add() must return a + b.")
    return [(c.claim.kind, c.claim.text, c.verdict, c.event) for c in check_note(note, facts, **kw).claims]


def test_a_file_never_opened_is_unsupported_and_a_file_read_is_supported_by_its_read():
    assert verdicts("The agent read src/helpers.py. It read src/calc.py.") == [
        ("file", "src/helpers.py", "unsupported", None), ("file", "src/calc.py", "supported", 10)]
    # Lines are supported by the reads that printed them; lines never printed are not.
    assert verdicts("It looked at lines 1-3 of src/calc.py. It read src/calc.py:40-50.", cut=9) == [
        ("file", "src/calc.py", "supported", 0), ("file", "src/calc.py:40-50", "supported", 0)]
    assert verdicts("It printed lines 1-3 of src/calc.py.", cut=1) == [("file", "src/calc.py", "supported", 0)]


def test_a_test_claimed_passing_that_failed_is_contradicted_by_its_run():
    assert verdicts("test_add passes.") == [("outcome", "test_add passes", "contradicted", 9)]
    assert verdicts("test_add passed after the fix.") == [("outcome", "test_add passed", "contradicted", 9)]
    assert verdicts("test_sub passes and test_add fails.") == [
        ("outcome", "test_sub passes", "supported", 9), ("outcome", "test_add fails", "supported", 9)]
    # The whole run failed: "the tests pass" is contradicted, "pytest failed with an AssertionError" supported.
    assert verdicts("The tests pass.") == [("outcome", "tests pass", "contradicted", 9)]
    assert verdicts("`python -m pytest tests/test_calc.py -v` failed with an AssertionError.") == [
        ("outcome", "`python -m pytest tests/test_calc.py -v` failed", "supported", 9),
        ("error", "AssertionError", "supported", 9)]
    # Before the run there is no result to support or contradict the claim.
    assert verdicts("test_add passes.", cut=7) == [("outcome", "test_add passes", "unsupported", None)]


def test_an_edit_said_made_but_absent_from_the_checkpoint_is_contradicted_by_the_event_that_undid_it():
    assert verdicts("Edited src/util.py to set x = 2.") == [("edit", "src/util.py", "contradicted", 6)]
    assert verdicts("Modified src/calc.py so that add returns a + b.")[0] == ("edit", "src/calc.py", "supported", 2)
    # Said undone: supported by the event that undid it; said left alone while the checkpoint changes it: contradicted.
    assert verdicts("The change to src/util.py was reverted.") == [("edit", "src/util.py", "supported", 6)]
    assert verdicts("src/calc.py is unchanged.") == [("edit", "src/calc.py", "contradicted", 2)]
    # An edit no event made, of a file the checkpoint leaves alone: contradicted by the checkpoint (no event).
    assert verdicts("Edited src/other.py.") == [("edit", "src/other.py", "contradicted", None)]
    # Without the checkpoint patch the events alone decide.
    assert verdicts("Edited src/other.py.", patch=None) == [("edit", "src/other.py", "unsupported", None)]


def test_plans_commands_errors_names_and_quotes():
    assert verdicts("Next, revert the change in src/util.py.") == [("edit", "src/util.py", "contradicted", 6)]
    assert verdicts("Next, revert the change in src/calc.py.") == [("edit", "src/calc.py", "supported", 2)]
    assert verdicts("Ran `git checkout src/util.py`.") == [("command", "`git checkout src/util.py`", "supported", 6)]
    assert verdicts("Ran `tox -e py311`.") == [("command", "`tox -e py311`", "unsupported", None)]
    assert verdicts("It saw a KeyError.") == [("error", "KeyError", "unsupported", None)]
    assert verdicts("The function `sub` and `multiply()` are in src/calc.py.")[:2] == [
        ("symbol", "`sub`", "supported", 1), ("symbol", "`multiply()`", "unsupported", None)]
    assert verdicts("It changed `return a - b` to `return a + b`.")[-2:] == [
        ("quote", "`return a - b`", "supported", 1), ("quote", "`return a + b`", "supported", 2)]
    # A plan asserts no outcome and runs no command: only the files and tests it names are claims.
    assert verdicts("Run `pytest tests/test_calc.py` to check that test_add passes.") == [
        ("file", "tests/test_calc.py", "supported", 8), ("test", "test_add", "supported", 9)]
    # "Not yet re-run" after the latest edit: supported while no run followed it, contradicted by one that did.
    assert verdicts("The tests have not been re-run after the edit.", cut=7) == [
        ("verification", "tests have not been re-run", "supported", 6)]
    assert verdicts("The tests have not been re-run after the edit.") == [
        ("verification", "tests have not been re-run", "contradicted", 9)]


def test_structured_notes_map_their_fields_to_claims():
    fields = {"problem_understanding": "add() in src/calc.py returns a - b.",
              "work_completed": "Edited src/calc.py; edited src/util.py.",
              "evidence_observed": "test_sub passed.",
              "observed_failures": "`python -m pytest tests/test_calc.py -v`: test_add",
              "remaining_uncertainty": "Whether test_add passes after the fix is UNKNOWN.",
              "rollback_notes": "Revert src/calc.py if other tests break.",
              "recommended_next_action": "Run `python -m pytest tests/test_calc.py -v`."}
    facts = trace_facts(crafted_run(), 11, checkpoint_patch=CHECKPOINT)
    check = check_note("rendered record", facts, fields=fields)
    got = [(c.claim.field, c.claim.kind, c.claim.action, c.verdict, c.event) for c in check.claims]
    assert got == [
        ("problem_understanding", "symbol", "mention", "supported", 1),
        ("problem_understanding", "file", "mention", "supported", 0),
        ("work_completed", "edit", "edit", "supported", 2),
        ("work_completed", "edit", "edit", "contradicted", 6),
        ("evidence_observed", "outcome", "mention", "supported", 9),
        # A command and a test named under observed failures are said to have failed.
        ("observed_failures", "outcome", "mention", "supported", 9),
        ("observed_failures", "outcome", "mention", "supported", 9),
        # A guess asserts no outcome; a plan names files (a revert of a changed file is a plan the record allows).
        ("remaining_uncertainty", "test", "mention", "supported", 9),
        ("rollback_notes", "edit", "revert", "supported", 2),
        ("recommended_next_action", "file", "mention", "supported", 8),
    ]
    assert check.figures()["claims"] == 10 and check.figures()["contradicted"] == 1


def test_the_fields_are_read_back_from_the_packaged_record():
    notes = ModelNotes(problem_understanding="p", work_completed="Edited src/calc.py.", evidence_observed="e",
                       observed_failures="NONE OBSERVED", remaining_uncertainty="u", rollback_notes="r",
                       recommended_next_action="Run `pytest`.")
    point = type("P", (), {"changed_source_files": ["src/calc.py"], "changed_test_files": [],
                           "non_source_artifacts": [], "latest_verification_evidence": None,
                           "latest_verification_command": None, "validation_after_latest_source_change": "none"})
    block = render("view_structured_notes.md.j2", facts=compute_fields(point, CHECKPOINT), notes=notes)
    prompt = f'<takeover_instructions>x</takeover_instructions>\n\n<previous_agent view="structured_notes">\n{block}\n</previous_agent>'
    assert note_block(prompt, "structured_notes") == block
    assert structured_fields(block) == notes.model_dump()
    summary = render("view_summary_notes.md.j2", notes="- Edited src/calc.py.")
    assert note_block(f'<previous_agent view="summary_notes">\n{summary}\n</previous_agent>', "summary_notes") == \
        "- Edited src/calc.py."


@pytest.mark.parametrize("view", VIEWS)
def test_every_model_written_view_is_checked_and_no_other(view):
    assert checks_claims(view) == (view in ("summary_notes", "structured_notes"))


def test_claims_keep_their_place_in_the_note():
    note = "- Read src/calc.py.\n- test_add failed."
    for c in note_claims(note):
        assert note[c.start:c.start + len(c.text)] == c.text


def test_what_the_rules_do_not_read_is_listed():
    facts = trace_facts(crafted_run(), 11, checkpoint_patch=CHECKPOINT)
    check = check_note("The root cause is an operator precedence mistake. Read src/calc.py.", facts)
    assert check.unclaimed == ["The root cause is an operator precedence mistake."]
    assert len(check.claims) == 1


def test_a_read_of_a_missing_file_contradicts_a_claim_that_it_was_read():
    run = crafted_run()
    run.events[1].text = "cat: src/calc.py: No such file or directory"
    facts = trace_facts(run, 1, checkpoint_patch="")
    assert [(c.verdict, c.event) for c in check_note("Read src/calc.py.", facts).claims] == [("contradicted", 0)]


def test_editor_views_are_reads_with_their_lines():
    run = crafted_run()
    run.events[10] = Event(index=10, kind="action", source="agent", **view("/testbed/src/calc.py", [4, 6]))
    facts = trace_facts(run, 11, checkpoint_patch=CHECKPOINT)
    assert [(c.verdict, c.event) for c in check_note("Viewed lines 4-6 of src/calc.py.", facts).claims] == [
        ("supported", 10)]


def test_scripts_and_checks_named_without_a_path():
    """"The reproduction script", "no failures": claims about what ran and what was written, by kind."""
    run = crafted_run()
    run.events[0].command = "cat <<'EOF' > repro.py\nfrom src.calc import add\nassert add(1, 2) == 3\nEOF"
    run.events[8].command = "python repro.py"
    facts = trace_facts(run, 11, checkpoint_patch=CHECKPOINT)

    def got(note: str) -> list[tuple[str, str, str, int | None]]:
        return [(c.claim.kind, c.claim.action, c.verdict, c.event) for c in check_note(note, facts).claims]

    assert got("Next, create a reproduction script.") == [("edit", "create", "contradicted", 0)]
    assert got("The agent wrote a reproduction script.") == [("edit", "create", "supported", 0)]
    assert got("It ran the reproduction script.") == [("command", "mention", "supported", 8)]
    assert got("No failures were observed.") == [("outcome", "no_failure", "contradicted", 9)]
    # In a field of reports, a clause that is a plan stays a plan.
    fields = {"work_completed": "I need to create a reproduction script."}
    assert [(c.claim.mood, c.verdict) for c in check_note("", facts, fields=fields).claims] == [("todo", "contradicted")]
    facts = trace_facts(crafted_run(), 11, checkpoint_patch=CHECKPOINT)
    assert [c.verdict for c in check_note("Next, create a reproduction script.", facts).claims] == ["supported"]
