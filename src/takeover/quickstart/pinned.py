"""The quickstart's pinned tasks: where each one's inputs come from and the sha256 they must have.

- the predecessor trajectory: the raw file at a pinned GitHub commit, its sha256 pinned below;
- the dataset row: ``princeton-nlp/SWE-bench_Verified`` on Hugging Face; the row's ``instance_id``,
  ``repo``, ``base_commit``, ``patch`` and ``test_patch`` must match a pinned sha256
  (:func:`row_fingerprint`).

:mod:`takeover.quickstart.downloads` downloads and checks them.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel

#: Where the pinned dataset rows come from.
HF_DATASET = "princeton-nlp/SWE-bench_Verified"
ROW_FINGERPRINT_FIELDS = ("instance_id", "repo", "base_commit", "patch", "test_patch")


class PinnedTask(BaseModel):
    """A task whose inputs the quickstart can download and verify by itself.

    Attributes:
        instance_id: SWE-bench instance.
        trajectory_url: raw URL of the predecessor's trajectory at a fixed commit.
        trajectory_sha256: sha256 of that file.
        trajectory_source: where it comes from, for the report.
        row_sha256: sha256 of the canonical JSON (sorted keys) of the row's ``instance_id``, ``repo``,
            ``base_commit``, ``patch`` and ``test_patch``.
    """

    instance_id: str
    trajectory_url: str
    trajectory_sha256: str
    trajectory_source: str
    row_sha256: str


_GEMINI_RUN = ("https://raw.githubusercontent.com/gruckion/mini-swe-agent/d12a71affd95403b036b2bdbd827349b77bfffb9/"
               "swebench_results/20251118_gemini-3-pro-74pct/trajs/{id}/{id}.traj.json")
PINNED: dict[str, PinnedTask] = {
    "pytest-dev__pytest-7521": PinnedTask(
        instance_id="pytest-dev__pytest-7521",
        trajectory_url=_GEMINI_RUN.format(id="pytest-dev__pytest-7521"),
        trajectory_sha256="c34a101073be11f77f23c3da479a6f874cb691dbbbf776c6dd41b641a721927d",
        trajectory_source="mini-swe-agent 1.15.0, google/gemini-3-pro-preview, 2025-11-18 "
                          "(gruckion/mini-swe-agent@d12a71a, swebench_results/20251118_gemini-3-pro-74pct)",
        row_sha256="6d194d3ecc470173647aedeae998d642c629c799ae6dd474fcd872a618487a21",
    ),
}


def row_fingerprint(row: object) -> str:
    """sha256 of the canonical JSON of a task's identifying fields (:data:`ROW_FINGERPRINT_FIELDS`); ``row``
    is a task record or a dict."""
    get = (lambda k: row.get(k)) if isinstance(row, dict) else (lambda k: getattr(row, k, None))
    data = {k: get(k) for k in ROW_FINGERPRINT_FIELDS}
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
