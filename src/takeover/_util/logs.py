"""Third-party log lines: warnings and errors only, unless asked for.

The libraries takeover uses log at INFO on their own loggers (``httpx`` one line per HTTP request,
``matplotlib.font_manager`` its font scan, litellm per model call, swebench's harness), and one of them
sets the root logger to INFO on import, so those lines would interleave with takeover's own output.
:func:`third_party_logging` keeps them at WARNING, or lets them through at INFO on stderr with
``verbose`` (``--verbose``); worker processes read the choice from :data:`VERBOSE_ENV`, which it sets.
"""

from __future__ import annotations

import logging
import os

#: Loggers of other libraries that are kept at WARNING (children such as ``matplotlib.font_manager`` follow).
THIRD_PARTY_LOGGERS = ("httpx", "httpcore", "matplotlib", "matplotlib.font_manager", "LiteLLM", "LiteLLM Router",
                       "LiteLLM Proxy", "litellm", "swebench", "urllib3", "filelock", "asyncio", "datasets",
                       "huggingface_hub", "fsspec", "PIL",
                       # mini-swe-agent's DockerEnvironment logs its container starts here (its own logger prints
                       # on stdout)
                       "takeover.agents.docker")
#: Set to ``1`` by :func:`third_party_logging` with ``verbose``, so that worker processes do the same.
VERBOSE_ENV = "TAKEOVER_VERBOSE"


def third_party_logging(verbose: bool | None = None) -> None:
    """Set the level of every logger in :data:`THIRD_PARTY_LOGGERS`: WARNING, or INFO with ``verbose`` (then
    a root handler on stderr prints them with time and logger name). ``None``: as :data:`VERBOSE_ENV` says
    (the coordinator's choice, in a worker process)."""
    if verbose is None:
        verbose = os.environ.get(VERBOSE_ENV) == "1"
    elif verbose:
        os.environ[VERBOSE_ENV] = "1"
    level = logging.INFO if verbose else logging.WARNING
    for name in THIRD_PARTY_LOGGERS:
        logging.getLogger(name).setLevel(level)
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
        os.environ.setdefault("LITELLM_LOG", "INFO")
    else:
        os.environ.setdefault("LITELLM_LOG", "ERROR")
