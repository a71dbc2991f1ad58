"""An OpenHands conversation, as OpenHands persisted it, turned into the recorder's calls and events
(docs/protocol.md sections 1 and 8.4).

The events are those of takeover's OpenHands 1.x reader (:func:`takeover.trajectories.openhands_v1.read_dir`):
OpenHands' LLM actions and tool observations, as the paper counts agent events, plus its messages (an
agent message without a tool call, which ends the conversation; the harness's answer to a malformed
function call). Calls are every answered request of the agent's LLM, in order (the model relay sees them all), with the usage
OpenHands' metrics recorded for its response id (``stats.usage_to_metrics.agent.token_usages``, the
endpoint's usage as litellm read it), linked to their actions by that id; a reply OpenHands rejected has no
metrics, and the endpoint's usage of the relayed response stands in. A call whose reply OpenHands rejected (a malformed function call: no action, and
OpenHands answers with a message of its own) is a format-error turn: one ``message`` action marked
``format_error`` holding the rejected reply (the relay kept it), and OpenHands' answer as its observation.
Condenser calls would be recorded under another usage id and are not counted (the runtime runs no
condenser).

Every event gets the tree snapshotted when OpenHands emitted it (the driver asks for one after every event),
an action the tree of its observation (the state after it ran); if any event has none, no event keeps one
and the run's states come from a replay (``snapshots: unavailable``).
"""

from __future__ import annotations

import json
from pathlib import Path

from takeover.agents.openhands.model_relay import Exchange
from takeover.agents.recorder import RunRecorder
from takeover.llm import Usage
from takeover.trajectories._common import Source, token_usage_record
from takeover.trajectories.events import Event
from takeover.trajectories.openhands_v1 import read_dir

#: OpenHands' usage id of the agent's LLM (the driver sets it).
AGENT_USAGE_ID = "agent"


def conversation_folder(persistence_dir: Path) -> Path | None:
    """The conversation folder OpenHands made under ``persistence_dir`` (``base_state.json`` + ``events/``)."""
    found = sorted(persistence_dir.glob("**/base_state.json"))
    return found[0].parent if found else None


def _agent_usage(folder: Path) -> tuple[dict[str, Usage], dict[str, float]]:
    """The usage OpenHands' metrics recorded for each response id of the agent's LLM, and each response's
    latency (seconds)."""
    state = json.loads((folder / "base_state.json").read_text(encoding="utf-8"))
    metrics = ((state.get("stats") or {}).get("usage_to_metrics") or {}).get(AGENT_USAGE_ID) or {}
    usage = {u["response_id"]: token_usage_record(u) for u in metrics.get("token_usages") or []
             if isinstance(u, dict) and isinstance(u.get("response_id"), str)}
    latency = {r["response_id"]: float(r.get("latency") or 0.0) for r in metrics.get("response_latencies") or []
               if isinstance(r, dict) and isinstance(r.get("response_id"), str)}
    return usage, latency


def _reply_text(exchange: Exchange | None) -> str:
    return "" if exchange is None else exchange.reply


def record_conversation(recorder: RunRecorder, folder: Path, snapshots: dict[str, str], final: str | None,
                        exchanges: list[Exchange]) -> bool:
    """Record the calls and events of the conversation ``folder`` in ``recorder`` (then flushed).

    Args:
        snapshots: the tree taken after each native event (by its OpenHands ``id``).
        final: the tree at the end (for an action whose observation never came: the run was stopped).
        exchanges: the relay's requests, in order (the rejected replies of format-error turns, the initial
            prompt's characters).
    Returns:
        Whether every event has its snapshot (else none has: ``record.snapshots`` is set ``unavailable``).
    Raises:
        InputError: OpenHands' record is damaged (names the file).
    """
    [traj] = read_dir(Source(folder))
    ids: list[str | None] = traj.metadata["event_ids"]
    response_ids: list[str | None] = traj.metadata["call_response_ids"]
    usage_of, latency = _agent_usage(folder)
    # Every answered request is a call (a failed attempt that litellm retried is none), in order.
    answered_calls = [e for e in exchanges if e.status == 200 and e.response_id]
    by_response = {e.response_id: e for e in answered_calls}
    index_of = {e.response_id: i for i, e in enumerate(answered_calls)}
    linked = {rid for rid in response_ids if rid}
    unlinked = [e.response_id for e in answered_calls if e.response_id not in linked]  # rejected replies
    format_error_calls: set[str] = set()

    # Events, with a format-error action before each answer OpenHands gave to a rejected reply.
    events: list[Event] = []
    native: list[str | None] = []
    remap: dict[int, int] = {}
    for old, event in enumerate(traj.events):
        fields = event.model_dump(exclude={"index", "snapshot"})
        if event.kind == "action" and event.llm_call is not None:
            rid = response_ids[event.llm_call]
            fields["llm_call"] = index_of.get(rid) if rid else None
        if event.kind == "observation" and event.source == "user" and unlinked:
            rid = unlinked.pop(0)
            format_error_calls.add(rid)
            text = _reply_text(by_response.get(rid))
            events.append(Event(index=len(events), kind="action", source="agent", type="message", text=text,
                                thought=text.strip() or None, llm_call=index_of[rid], format_error=True))
            native.append(ids[old])
            fields["cause"] = len(events) - 1
        elif fields.get("cause") is not None:
            fields["cause"] = remap.get(fields["cause"])
        remap[old] = len(events)
        events.append(Event(index=len(events), **fields))
        native.append(ids[old])

    for exchange in answered_calls:
        rid = exchange.response_id
        # OpenHands' metrics where it kept them (it keeps none for a reply it rejected): the endpoint's own.
        usage = usage_of.get(rid) or exchange.usage or Usage()
        recorder.add_call(usage, [], latency.get(rid, exchange.seconds), format_error=rid in format_error_calls,
                          cost=0.0)
    if exchanges:
        recorder.accounting.initial_prompt_chars = sum(
            len(_content(m)) for m in (exchanges[0].request.get("messages") or [])[:2])

    trees = [snapshots.get(n) if n else None for n in native]
    answered = {e.cause: trees[i] for i, e in enumerate(events) if e.kind == "observation" and e.cause is not None}
    for i, event in enumerate(events):
        if event.kind == "action" and not event.format_error:
            trees[i] = answered.get(i) or final
    complete = all(trees) and bool(events)
    for event, tree in zip(events, trees, strict=True):
        recorder.add_event(**event.model_dump(exclude={"index", "snapshot"}), snapshot=tree if complete else None)
    if not complete and events:
        recorder.record.snapshots = "unavailable"
    recorder.flush()
    return complete


def _content(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""
