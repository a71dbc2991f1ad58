"""mini-swe-agent's model interface over takeover's one model client (docs/protocol.md section 8).

mini-swe-agent's ``DefaultAgent`` asks its model to ``query(messages)`` and gets a message back. Our
models keep mini-swe-agent's own parts (its action parsing, its observation templates, its cost from
litellm's price table, the message and ``extra`` shapes it writes into its trajectory) and send the
request through :class:`takeover.llm.ModelClient`, so that agent runs and note writing follow one retry
policy (a 429 mid-run waits as the server asks) and record usage the same way.

Two action protocols:

- ``text`` (default, the paper's): ``TextModel``; the reply must hold exactly one
  ````mswea_bash_command```` block, looked for after thinking blocks are removed
  (:func:`takeover.llm.strip_thinking`); no native tool calling.
- ``tools``: ``ToolsModel`` with mini-swe-agent's native ``bash`` tool.

Each returned message (and each format error) carries ``extra["call"]``: the call's ``usage`` and its
``attempts`` (:class:`takeover.llm.CallAttempt`), read by the run recorder with :func:`call_usage`.
The API key is read from the settings' variable at call time, so it never enters a config that
mini-swe-agent serializes into its trajectory.
"""

from __future__ import annotations

import functools
import time
from typing import Any, ClassVar

from takeover.agents.mini_swe_agent import _mswea
from takeover.llm import CallAttempt, ModelClient, ModelSettings, Usage, litellm_model_name, strip_thinking

_mswea.load()

from minisweagent.exceptions import FormatError
from minisweagent.models import GLOBAL_MODEL_STATS
from minisweagent.models.utils.actions_text import parse_regex_actions
from minisweagent.models.utils.actions_toolcall import BASH_TOOL


class _ClientModel:
    """Mixin: ``query`` through :class:`ModelClient`; parsing, cost and message shape stay mini-swe-agent's."""

    tools: ClassVar[list[dict] | None] = None
    client: ModelClient

    def query(self, messages: list[dict], **kwargs) -> dict:
        """One model call. Raises :class:`takeover.llm.ModelCallError` (the endpoint failed for good, or
        answered with reasoning only) and mini-swe-agent's ``FormatError`` (no single action)."""
        litellm = _mswea.load_litellm()
        completion = self.client.complete(self._prepare_messages_for_api(messages), tools=self.tools)
        response = litellm.ModelResponse(**completion.response)
        cost = self._calculate_cost(response)
        GLOBAL_MODEL_STATS.add(cost["cost"])
        call = {"usage": completion.usage.model_dump(mode="json"),
                "attempts": [a.model_dump(mode="json") for a in completion.attempts]}
        try:
            actions = self._parse_actions(response)
        except FormatError as exc:
            extra = exc.messages[0]["extra"]
            extra.update(cost, response=response.model_dump(mode="json"), call=call)
            if "model_response" in extra:
                extra["model_response"] = completion.content  # the reply as given, thinking included
            raise
        message = response.choices[0].message.model_dump()
        message["extra"] = {"actions": actions, "response": response.model_dump(), **cost, "call": call,
                            "timestamp": time.time()}
        return message


@functools.cache
def model_class(protocol: str) -> type:
    """The mini-swe-agent model class of an action protocol, built on first use.

    - ``text``: ``TextModel``, one bash block per reply, looked for after thinking blocks are removed;
    - ``tools``: ``ToolsModel``, native tool calls with mini-swe-agent's ``bash`` tool.

    mini-swe-agent's litellm-backed base classes import litellm, which takes seconds; building the classes
    here keeps ``import takeover.agents`` (and so every ``takeover`` command's start) fast.

    Raises:
        ValueError: ``protocol`` is neither ``text`` nor ``tools``.
    """
    _mswea.load_litellm()
    if protocol == "text":
        from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

        class TextModel(_ClientModel, LitellmTextbasedModel):
            """Text protocol: one bash block per reply, thinking blocks aside."""

            def _parse_actions(self, response: Any) -> list[dict]:
                return parse_regex_actions(
                    strip_thinking(response.choices[0].message.content or ""),
                    action_regex=self.config.action_regex,
                    format_error_template=self.config.format_error_template,
                    template_kwargs={"finish_reason": response.choices[0].finish_reason},
                )

        return TextModel
    if protocol == "tools":
        from minisweagent.models.litellm_model import LitellmModel

        class ToolsModel(_ClientModel, LitellmModel):
            """Native tool calls (mini-swe-agent's ``bash`` tool)."""

            tools: ClassVar[list[dict] | None] = [BASH_TOOL]

        return ToolsModel
    raise ValueError(f"unknown action protocol {protocol!r}; expected text or tools")


def make_model(settings: ModelSettings, protocol: str, model_config: dict[str, Any]) -> Any:
    """A mini-swe-agent model for ``settings`` and ``protocol``.

    Args:
        settings: endpoint, sampling and retry settings.
        protocol: ``text`` or ``tools``.
        model_config: the ``model`` section of mini-swe-agent's benchmark config (templates). Its
            ``model_kwargs`` are replaced by what the client sends (temperature, ``max_tokens``, the
            settings' ``extra.params``), so the trajectory records the request as it was made.

    Raises:
        ValueError: ``protocol`` is neither ``text`` nor ``tools``.
    """
    cls = model_class(protocol)
    kwargs: dict[str, Any] = {"temperature": settings.temperature}
    if settings.max_tokens is not None:
        kwargs["max_tokens"] = settings.max_tokens
    kwargs.update(settings.extra.get("params") or {})
    config = {k: v for k, v in model_config.items() if k not in ("model_name", "model_kwargs", "model_class")}
    config.update(model_name=litellm_model_name(settings), model_kwargs=kwargs, cost_tracking="ignore_errors")
    model = cls(**config)
    model.client = ModelClient(settings)
    return model


def call_usage(extra: dict[str, Any]) -> tuple[Usage, list[CallAttempt]]:
    """The usage and the attempts of one call from a message's (or a format error's) ``extra``.

    Raises:
        KeyError: ``extra`` holds no ``call`` (the message did not come from a model of
            :func:`model_class`).
    """
    call = extra["call"]
    return Usage.model_validate(call["usage"]), [CallAttempt.model_validate(a) for a in call["attempts"]]
