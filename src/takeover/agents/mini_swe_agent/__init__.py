"""mini-swe-agent as an agent runtime (``--agent mini-swe-agent``, the default; docs/protocol.md section 8).

Modules:

- ``mswea_runtime.py``: :class:`~takeover.agents.mini_swe_agent.mswea_runtime.MiniSweAgentRuntime`, the
  runtime registered in :data:`takeover.agents.runtimes.RUNTIMES`.
- ``loop.py``: :class:`~takeover.agents.mini_swe_agent.loop.TakeoverAgent`, mini-swe-agent's agent loop with
  the protocol's limits, accounting and a snapshot after every action.
- ``messages.py``: mini-swe-agent's messages as events of the shared recorder.
- ``mswea_model.py``: mini-swe-agent's model interface over :class:`takeover.llm.ModelClient` (one retry
  policy, usage of every call).
- ``_mswea.py``: importing mini-swe-agent quietly and offline; its SWE-bench config and templates (the
  shared command sandbox imports mini-swe-agent through it too).

This package's ``__init__`` imports nothing, so that the shared command sandbox can load mini-swe-agent
through ``_mswea`` without importing the runtime.
"""
