"""The handoff as Markdown for a person: the session, the repository, the facts, then the takeover prompt.

The prompt comes last and verbatim (no fence: a raw trace may hold fences itself), after a line that says
where it starts, so that it can be copied as it is.
"""

from __future__ import annotations

from takeover.handoff.compose import Handoff

PROMPT_MARKER = "<!-- takeover prompt: everything below this line is the prompt for the next agent -->"


def _files(paths: list[str]) -> str:
    return ", ".join(f"`{p}`" for p in paths) if paths else "none"


def _base(h: Handoff) -> str:
    repo = h.repository
    short = repo.base_commit[:12]
    if repo.base_source == "session":
        return f"the session's starting commit `{short}`"
    if repo.base_source == "empty_tree":
        return "the empty tree (the repository has no commit)"
    return f"HEAD `{short}`" + (f" ({repo.branch})" if repo.branch else "")


def handoff_markdown(h: Handoff) -> str:
    """The Markdown text of ``h`` (ends with a newline)."""
    s, f, p = h.session, h.facts, h.point
    agent = s.format + (f" {s.format_version}" if s.format_version else "")
    lines = [
        f"# Handoff of a {s.format} session",
        "",
        f"- Session: `{s.path}` ({agent}" + (f", session {s.session_id}" if s.session_id else "")
        + (f", model {s.model}" if s.model else "") + f"): {s.agent_events} events, {s.llm_calls} model calls, "
        + ("prompt tokens not recorded" if s.prompt_tokens is None else f"{s.prompt_tokens:,} prompt tokens"),
        f"- Task: {h.task_source}",
        f"- Repository: `{h.repository.root}`, changes against {_base(h)}",
        f"- Untracked files: {_files(h.repository.untracked)}",
        "",
        "## Facts",
        "",
        f"- Repository change state: {f.repository_change_state}",
        f"- Changed source files: {_files(f.changed_source_files)}",
        f"- Changed test files: {_files(f.changed_test_files)}",
        f"- Non-source artifacts: {_files(f.non_source_artifacts)}",
    ]
    if p.latest_verification_command:
        lines.append(f"- Latest verification: `{f.latest_validation_command}` -> {p.latest_verification_result}")
    else:
        lines.append("- Latest verification: none observed")
    if f.latest_validation_evidence:
        lines.append(f"- Latest validation evidence: {f.latest_validation_evidence}")
    lines += [
        f"- Validation status after the latest source change: {f.validation_status}",
        f"- Continuation label: **{f.continuation_label}**",
    ]
    for note in h.notes:
        lines.append(f"- Note: {note}")
    lines.append("")
    if h.view is None:
        fail = h.failure
        lines += [
            f"## No {h.view_name} view",
            "",
            (f"The notes were not accepted ({fail.outcome} after {fail.attempts} attempt(s), "
             f"{fail.usage.prompt_tokens + fail.usage.completion_tokens:,} note tokens); the protocol never "
             "replaces them by another view. Use `--view raw_trace`, or another model."),
            "",
            *[f"- {reason}" for reason in fail.reasons],
            "",
        ]
        return "\n".join(lines)
    v = h.view
    about = [f"view {v.view}", f"{v.characters:,} characters", f"about {v.estimated_tokens:,} tokens"]
    if v.note_usage is not None:
        tokens = v.note_usage.prompt_tokens + v.note_usage.completion_tokens
        about.insert(1, f"notes {v.validation} after {v.attempts} attempt(s), {tokens:,} note tokens")
    if v.dropped_events:
        about.append(f"{v.dropped_events} oldest events left out by the budget")
    lines += [f"## Takeover prompt ({', '.join(about)})", "", PROMPT_MARKER, "", v.prompt.rstrip("\n"), ""]
    return "\n".join(lines)
