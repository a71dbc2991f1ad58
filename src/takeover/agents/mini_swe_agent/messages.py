"""mini-swe-agent's messages as events of the shared recorder (docs/protocol.md sections 1 and 8).

Each executed action is one ``action`` event followed by one ``observation`` event, both with the
snapshot taken after the command; a format-error turn is an ``action`` (``format_error``) plus the
harness's reminder (``observation`` from ``user``), both with the unchanged snapshot; the submission
command is an action of type ``finish`` and its observation holds the submitted text.
"""

from __future__ import annotations

import re

from takeover.agents.recorder import RunRecorder
from takeover.vocabulary import ActionProtocol


class MessageEvents:
    """Turns the messages of one mini-swe-agent run into events of ``recorder``.

    Args:
        recorder: the run's recorder.
        protocol: the action protocol, which decides how an action's text and thought are recorded.
        action_regex: the text protocol's pattern of an action block (removed from the thought).
    """

    def __init__(self, recorder: RunRecorder, *, protocol: ActionProtocol, action_regex: str):
        self.recorder = recorder
        self.protocol = protocol
        self.action_regex = action_regex
        self._open_actions: list[int] = []  # action events of the current step awaiting an observation

    def _thought(self, content: str) -> str:
        if self.protocol == "text":
            return re.sub(self.action_regex, "", content, flags=re.DOTALL).strip()
        return content.strip()

    def ready(self) -> int:
        """Index of the first event that may not be written yet (the first action whose command has not
        finished); the recorder's :meth:`~takeover.agents.recorder.RunRecorder.flush` stops there."""
        return self._open_actions[0] if self._open_actions else len(self.recorder.events)

    def add_actions(self, message: dict, call_index: int) -> None:
        """Record the actions of a parsed response (mini-swe-agent's ``extra.actions``); they await their
        snapshot (:meth:`command_done`) and their observation (:meth:`add_observations`)."""
        rec = self.recorder
        content = message.get("content") or ""
        actions = message.get("extra", {}).get("actions", [])
        self._open_actions = []
        for i, action in enumerate(actions):
            command = action.get("command", "")
            if self.protocol == "text":
                text = content
            else:
                text = (
                    content.strip() + "\n\n" if i == 0 and content.strip() else ""
                ) + f"```bash\n{command}\n```"
            ev = rec.add_event(
                kind="action",
                source="agent",
                type="command",
                text=text,
                thought=self._thought(content) if i == 0 else None,
                command=command,
                llm_call=call_index,
                cwd=rec.record.command_root or rec.record.workspace,
            )
            self._open_actions.append(ev.index)

    def add_format_error(self, error_message: dict, call_index: int) -> None:
        """Record a format-error turn: the rejected response and the harness's reminder (``error_message``,
        mini-swe-agent's ``FormatError`` message), both with the unchanged snapshot."""
        rec = self.recorder
        extra = error_message.get("extra", {})
        response = extra.get("response")
        text = extra.get("model_response")
        if text is None and isinstance(response, dict):
            try:
                text = response["choices"][0]["message"].get("content") or ""
                calls = response["choices"][0]["message"].get("tool_calls") or []
                text += "".join(
                    f"\n[tool call {c['function']['name']}: {c['function']['arguments']}]" for c in calls
                )
            except (KeyError, IndexError, TypeError):
                text = ""
        action = rec.add_event(
            kind="action",
            source="agent",
            type="message",
            text=text or "",
            thought=(text or "").strip() or None,
            llm_call=call_index,
            format_error=True,
            snapshot=rec.snapshot,
        )
        rec.add_event(
            kind="observation",
            source="user",
            type="message",
            text=error_message.get("content") or "",
            cause=action.index,
            snapshot=rec.snapshot,
        )

    def command_done(self, position: int, snapshot: str | None, *, finish: bool) -> None:
        """The command of the ``position``-th open action ran: give its event the ``snapshot`` taken after
        it, and the type ``finish`` when it was the submission."""
        event = self.recorder.events[self._open_actions[position]]
        event.snapshot = snapshot
        if finish:
            event.type = "finish"

    def drop_unexecuted(self, executed: int) -> None:
        """Only the first ``executed`` open actions ran: the others get no observation (the run ends)."""
        self._open_actions = self._open_actions[:executed]

    def add_observations(self, observations: list[dict], submission: str | None = None) -> None:
        """Record one observation per executed open action (mini-swe-agent's observation messages, in
        order), then the submitted text as the observation of the submission command, if any."""
        rec = self.recorder
        # Observations follow all actions of their response, so each shows the latest repository state.
        for position, obs in enumerate(observations):
            action = rec.events[self._open_actions[position]]
            rec.add_event(
                kind="observation",
                source="environment",
                type=action.type,
                text=obs.get("content") or "",
                cause=action.index,
                exit_code=obs.get("extra", {}).get("returncode"),
                snapshot=rec.snapshot,
            )
        if submission is not None:
            action = rec.events[self._open_actions[len(observations)]]
            rec.add_event(
                kind="observation",
                source="environment",
                type="finish",
                text=submission,
                cause=action.index,
                exit_code=0,
                snapshot=rec.snapshot,
            )
        self._open_actions = []
