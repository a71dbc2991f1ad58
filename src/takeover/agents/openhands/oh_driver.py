"""The OpenHands side of an ``--agent openhands`` run: a script that OpenHands' own Python runs.

It is never imported by takeover: :mod:`takeover.agents.openhands.oh_runtime` runs it as
``python -I oh_driver.py CONFIG`` with the interpreter of the OpenHands environment
(:mod:`takeover.environments.openhands_venv`), usually inside bubblewrap. It imports only the standard library
and ``openhands-sdk``/``openhands-tools``.

``CONFIG`` is a JSON file: ``workspace`` (as the agent sees it), ``persistence_dir``, ``prompt_file``,
``model``, ``temperature``, ``max_output_tokens``, ``timeout``, ``num_retries``, ``step_limit``
(``max_iteration_per_run``), ``seconds`` (the wall time left), ``prompt_token_limit``,
``max_consecutive_format_errors``, ``command_timeout``, ``relay_socket`` (the model relay's Unix socket,
served by takeover outside the sandbox), ``outcome_file``, and ``snapshot_fds`` (a pipe pair to takeover).

What it does, as the paper's OpenHands agent: a local conversation on the workspace with the terminal and
file-editor tools (and the SDK's built-in ``finish``/``think``), no browser, no condenser,
``LLM(native_tool_calling=False)`` (OpenHands' text protocol), ``persistence_dir`` in the run folder
(OpenHands writes ``base_state.json`` and one file per event there). After every event it asks takeover to
snapshot the workspace (one line ``{"event": ID}`` on the pipe, answered by one line once the snapshot is
taken), so that every event's repository state is exact. The limits OpenHands has no setting for are
checked in its event callback, between steps: the wall time, the prompt-token limit and consecutive format
errors pause the conversation (it stops before its next model call). At the end it writes
``outcome_file``: ``{"status", "detail", "submission", "error_code"}``.
"""

import json
import os
import socket
import sys
import threading
import time

os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.sdk.event import ActionEvent, AgentErrorEvent, MessageEvent, ObservationEvent
from openhands.sdk.event.conversation_error import ConversationErrorEvent
from openhands.tools.file_editor import FileEditorTool
from openhands.tools.terminal import TerminalTool


def relay(socket_path: str) -> int:
    """Serve 127.0.0.1:PORT inside the sandbox, each connection piped to ``socket_path``; returns PORT."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(16)

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def accept() -> None:
        while True:
            client, _ = server.accept()
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(socket_path)
            except OSError:
                client.close()
                continue
            threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server.getsockname()[1]


class Snapshots:
    """The pipe pair to takeover: one request line per event, one answer line per snapshot taken."""

    def __init__(self, fds: list[int]):
        self.send = os.fdopen(fds[1], "w", buffering=1)
        self.answers = os.fdopen(fds[0], "r")

    def take(self, event_id: str) -> None:
        self.send.write(json.dumps({"event": event_id}) + "\n")
        self.answers.readline()


def main(config_path: str) -> int:
    with open(config_path, encoding="utf-8") as fh:
        cfg = json.load(fh)
    port = relay(cfg["relay_socket"])
    llm = LLM(
        model=cfg["model"],
        base_url=f"http://127.0.0.1:{port}{cfg['base_path']}",
        api_key="takeover-relay",  # the relay adds the real key outside the sandbox
        native_tool_calling=False,
        temperature=cfg["temperature"],
        max_output_tokens=cfg["max_output_tokens"],
        timeout=int(cfg["timeout"]),
        num_retries=int(cfg["num_retries"]),
        usage_id="agent",
        drop_params=True,
    )
    agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)], condenser=None)
    snapshots = Snapshots(cfg["snapshot_fds"])
    state = {"stop": None, "format_errors": 0, "finish": None, "message": None, "error": None}
    conversation = None
    deadline = float("inf")

    def stop(status: str) -> None:
        if state["stop"] is None:
            state["stop"] = status
            conversation.pause()

    def on_event(event) -> None:
        if isinstance(event, (ActionEvent, ObservationEvent, AgentErrorEvent, MessageEvent)):
            snapshots.take(event.id)
        if isinstance(event, ActionEvent):
            state["format_errors"] = 0
            if event.tool_name == "finish" and event.action is not None:
                state["finish"] = getattr(event.action, "message", "") or ""
        elif isinstance(event, MessageEvent) and event.source == "agent":
            state["message"] = "".join(getattr(c, "text", "") for c in event.llm_message.content)
        elif isinstance(event, MessageEvent) and state["started"]:
            # A malformed function call, or a reply with nothing in it: OpenHands answers it with a
            # message of its own and goes on (a format-error turn, docs/protocol.md section 1).
            state["format_errors"] += 1
            if state["format_errors"] >= cfg["max_consecutive_format_errors"]:
                stop("format_errors")
        elif isinstance(event, ConversationErrorEvent):
            state["error"] = (event.code, event.detail)
        if state["stop"] is None and conversation is not None:
            if time.monotonic() >= deadline:
                stop("time_limit")
            limit = cfg["prompt_token_limit"]
            if limit is not None:
                used = conversation.conversation_stats.get_combined_metrics().accumulated_token_usage
                if used is not None and used.prompt_tokens >= limit:
                    stop("token_limit")

    state["started"] = False
    conversation = Conversation(
        agent=agent,
        workspace=cfg["workspace"],
        persistence_dir=cfg["persistence_dir"],
        max_iteration_per_run=int(cfg["step_limit"]),
        stuck_detection=False,
        visualizer=None,
        callbacks=[on_event],
        delete_on_close=False,
    )
    # Time is up between steps (the callback sees no event while the model thinks): checked every second.
    def watch() -> None:
        while state["stop"] is None:
            if time.monotonic() >= deadline:
                stop("time_limit")
                return
            time.sleep(1.0)

    with open(cfg["prompt_file"], encoding="utf-8") as fh:
        prompt = fh.read()
    # takeover's clock starts with the task message (its snapshot request), just before the first model call.
    deadline = time.monotonic() + float(cfg["seconds"])
    conversation.send_message(prompt)
    state["started"] = True
    threading.Thread(target=watch, daemon=True).start()
    outcome = {"status": None, "detail": None, "submission": None, "error_code": None}
    try:
        conversation.run()
    except Exception as exc:  # noqa: BLE001 - reported to takeover, which names it
        code, detail = state["error"] or (type(exc).__name__, str(exc))
        outcome.update(status="error", error_code=code, detail=f"{type(exc).__name__}: {detail}"[:2000])
    if outcome["status"] is None:
        if state["stop"] is not None:
            outcome["status"] = state["stop"]
        elif state["error"] is not None and state["error"][0] == "MaxIterationsReached":
            outcome["status"] = "step_limit"
        elif state["error"] is not None:
            outcome.update(status="error", error_code=state["error"][0], detail=str(state["error"][1])[:2000])
        elif state["finish"] is not None:
            outcome.update(status="submitted", submission=state["finish"])
        else:  # a reply without a function call: OpenHands ends the conversation, awaiting the user
            outcome.update(status="submitted", submission=state["message"])
    outcome["execution_status"] = str(conversation.state.execution_status.value)
    with open(cfg["outcome_file"] + ".part", "w", encoding="utf-8") as fh:
        json.dump(outcome, fh)
    os.replace(cfg["outcome_file"] + ".part", cfg["outcome_file"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
