"""Keep secrets out of logs, trajectories and reports.

Values of environment variables whose names look like credentials (``*_KEY``, ``*_TOKEN``,
``*_SECRET``, ``*PASSWORD*``) and well-known key shapes (``sk-...``, ``Bearer ...``, GitHub ``ghp_...``,
AWS ``AKIA...``, Slack ``xoxb-...``, GitLab ``glpat-...``, PEM private key blocks) are replaced by
``[REDACTED]`` wherever text is written by ``takeover``.
"""

from __future__ import annotations

import os
import re
from typing import Any

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
# Field names inside records whose string values are credentials (not ``prompt_tokens`` and the like).
_SECRET_FIELD = re.compile(r"(^|[_-])(api[_-]?key|token|secret|password|authorization)$", re.IGNORECASE)
_SHAPES = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-]{16,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack tokens
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"),  # GitLab personal access tokens
    # PEM private keys, whole block (RSA, EC, OPENSSH, ENCRYPTED, ...); an unterminated one to the end.
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.DOTALL),
]
MASK = "[REDACTED]"


def _secret_values() -> list[str]:
    vals = [v for k, v in os.environ.items() if _SECRET_NAME.search(k) and v and len(v) >= 8]
    return sorted(set(vals), key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with every known secret value and key-shaped string masked."""
    if not text:
        return text
    for value in _secret_values():
        text = text.replace(value, MASK)
    for pattern in _SHAPES:
        text = pattern.sub(MASK, text)
    return text


def redact_obj(obj: Any) -> Any:
    """Redact every string inside a JSON-like value (dicts, lists); keys named like secrets are masked whole."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {
            k: (MASK if isinstance(k, str) and _SECRET_FIELD.search(k) and isinstance(v, str) and v else redact_obj(v))
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [redact_obj(v) for v in obj]
    return obj
