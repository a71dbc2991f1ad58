"""Import mini-swe-agent quietly and offline.

mini-swe-agent prints a banner, creates its global config folder (``~/.config/mini-swe-agent``) and loads
a ``.env`` from it at import time; litellm downloads its model cost map at import time. Before the first
import we therefore set, unless the user already chose otherwise:

- ``LITELLM_LOCAL_MODEL_COST_MAP=True``: litellm reads its bundled price table (no network);
- ``MSWEA_SILENT_STARTUP=1``: no banner;
- ``MSWEA_GLOBAL_CONFIG_DIR``: a private folder under the system temp dir, so nothing is written in the
  user's home (a user who set the variable keeps their own folder and ``.env``);
- ``MSWEA_COST_TRACKING=ignore_errors``: local models with no price do not abort runs (cost = 0).
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from takeover.agents.command_backend import TESTBED

MSWEA_VERSION_RANGE = ">=2.4,<2.5"


def quiet_env() -> None:
    """Set the variables above (idempotent, never overrides a user's value)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")
    if not os.environ.get("MSWEA_GLOBAL_CONFIG_DIR"):
        uid = os.getuid() if hasattr(os, "getuid") else "user"
        os.environ["MSWEA_GLOBAL_CONFIG_DIR"] = str(Path(tempfile.gettempdir()) / f"takeover-mswea-{uid}")


@functools.cache
def load() -> Any:
    """Import and return the ``minisweagent`` package after :func:`quiet_env`; litellm's loggers are quieted."""
    quiet_env()
    import minisweagent

    # Other libraries (swebench's harness) set the root logger to INFO on import; litellm's loggers have no
    # level of their own, so every call would be logged. Warnings and errors still come through.
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx", "httpcore"):
        if logging.getLogger(name).level == logging.NOTSET:
            logging.getLogger(name).setLevel(logging.WARNING)
    return minisweagent


@functools.cache
def load_litellm() -> Any:
    """Import and return ``litellm`` (seconds of import time: only the agent's model needs it), without
    its "Provider List"/"Give Feedback" banners, which it prints on stdout when a price lookup fails."""
    load()
    import litellm

    litellm.suppress_debug_info = True
    return litellm


@functools.cache
def benchmark_config(protocol: str) -> dict:
    """mini-swe-agent's own SWE-bench config for an action protocol, read from the installed package.

    ``text`` -> ``swebench_backticks.yaml`` (one bash block per response, ``LitellmTextbasedModel``);
    ``tools`` -> ``swebench.yaml`` (native ``bash`` tool calls, ``LitellmModel``).
    """
    load()
    from minisweagent.config import get_config_from_spec

    name = {"text": "swebench_backticks", "tools": "swebench"}[protocol]
    return get_config_from_spec(name)


def agent_templates(protocol: str) -> dict[str, str]:
    """``{"system_template", "instance_template"}`` of :func:`benchmark_config`, with the working directory
    as the template variable ``cwd`` where mini-swe-agent's prompts name :data:`TESTBED` literally.

    mini-swe-agent renders the templates with the environment's ``cwd`` (every environment's config has
    one), so the prompt names the folder the commands really run in: ``/testbed`` in a SWE-bench image or
    a sandbox mounting the workspace there, else the workspace's host path.
    """
    agent = benchmark_config(protocol)["agent"]
    return {key: agent[key].replace(TESTBED, "{{cwd}}") for key in ("system_template", "instance_template")}
