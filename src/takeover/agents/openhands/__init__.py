"""OpenHands as an agent runtime (``--agent openhands``; docs/protocol.md section 8.4), the paper's agent.

Modules:

- ``oh_runtime.py``: :class:`~takeover.agents.openhands.oh_runtime.OpenHandsRuntime`, the runtime
  registered in :data:`takeover.agents.runtimes.RUNTIMES`: it runs the driver, snapshots the workspace
  after every event the driver reports, and records the events and calls from OpenHands' own record.
- ``oh_events.py``: OpenHands' persisted conversation as the recorder's events and calls.
- ``oh_driver.py``: the script OpenHands' Python runs (never imported here).
- OpenHands' own venv (Python 3.12) is :mod:`takeover.environments.openhands_venv`, built once into the cache.
- ``model_relay.py``: the model endpoint behind a Unix socket, for the sandboxed OpenHands process.
"""
