"""Regenerate ``mini_swe_agent_11.traj.json``: a real ``mini-swe-agent-1.1`` trajectory (tool calls).

mini-swe-agent's own ``DefaultAgent`` + ``LitellmModel`` + ``LocalEnvironment`` run against the scripted
model server on a two-line git repository. The script exercises what the reader must handle: a tool call,
a format error (a reply with no tool call), two tool calls in one response (one failing), and the
submission. Takes ~30 s (litellm import), hence a stored file rather than a test-time run.

    /work/venv/bin/python tests/data/make_mini_swe_agent_11.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

SCRIPT = [
    {
        "content": "Let me look at the file.",
        "tool_calls": [{"name": "bash", "arguments": {"command": "cat a.py"}}],
    },
    {"content": "I think I am done."},
    {
        "content": "",
        "tool_calls": [
            {"name": "bash", "arguments": {"command": "sed -i s/1/2/ a.py"}},
            {"name": "bash", "arguments": {"command": "false"}},
        ],
    },
    {
        "content": "",
        "tool_calls": [
            {
                "name": "bash",
                "arguments": {
                    "command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
                },
            }
        ],
    },
]


def main(out: Path) -> None:
    import minisweagent
    import yaml
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.litellm_model import LitellmModel

    from takeover.testing.scripted_server import ScriptedServer

    config = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / "default.yaml").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        (repo / "a.py").write_text("x = 1\n")
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@e",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@e",
        }
        for args in (["init", "-q"], ["add", "a.py"], ["commit", "-qm", "base"]):
            subprocess.run(["git", *args], cwd=repo, env=env, check=True)
        with ScriptedServer(SCRIPT) as srv:
            model_cfg = {
                k: v for k, v in config.get("model", {}).items() if k not in ("model_name", "model_kwargs")
            }
            model_cfg["cost_tracking"] = "ignore_errors"
            model = LitellmModel(
                model_name="openai/scripted-model",
                model_kwargs={"api_base": srv.base_url, "api_key": "not-a-key"},
                **model_cfg,
            )
            agent = DefaultAgent(
                model, LocalEnvironment(cwd=str(repo)), **{**config["agent"], "output_path": out}
            )
            agent.run("Change x to 2 in a.py")
    data = json.loads(out.read_text())
    data["instance_id"] = "scripted__repo-1"
    out.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("mini_swe_agent_11.traj.json"))
