"""Trajectories written in mini-swe-agent's own native layouts, as its harness saves them.

- 1.x (``trajectory_format: mini-swe-agent-1``, e.g. 1.15.0): one bash block per assistant message, the
  observation as a ``user`` message ``<returncode>N</returncode>\\n<output>...</output>``, the submission
  ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached`` answered by the bare diff.
- 2.x (``trajectory_format: mini-swe-agent-1.1``, ``info.mini_version`` 2.x, the shipped SWE-bench config
  ``config/benchmarks/swebench.yaml``): tool calls (``tool_calls`` + ``extra.actions``), ``tool`` messages with
  ``extra.returncode``, and the submission ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt``
  ending the run with an ``exit`` message (``DockerEnvironment._check_finished`` raises ``Submitted``, so that
  command gets no tool message).
"""

from __future__ import annotations

import json
from pathlib import Path

SUBMIT_1X = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
SUBMIT_2X = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"
_USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


def _response(text: str, n: int) -> dict:
    return {"id": f"resp-{n}", "model": "test-model", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": dict(_USAGE)}


def write_1x(path: Path, instance_id: str, steps: list[tuple[str, str, int]], submission: str) -> Path:
    """A mini-swe-agent 1.x run: ``steps`` are (command, output, exit code); the last action submits."""
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "<pr_description>\nfix f\n</pr_description>"}]
    for n, (command, output, code) in enumerate(steps):
        text = f"THOUGHT: step {n}.\n\n```bash\n{command}\n```"
        messages.append({"role": "assistant", "content": text, "extra": {"response": _response(text, n)}})
        messages.append({"role": "user", "content": f"<returncode>{code}</returncode>\n<output>\n{output}</output>"})
    text = f"THOUGHT: done.\n\n```bash\n{SUBMIT_1X}\n```"
    messages.append({"role": "assistant", "content": text, "extra": {"response": _response(text, len(steps))}})
    messages.append({"role": "user", "content": submission})
    doc = {
        "info": {"exit_status": "Submitted", "submission": submission,
                 "model_stats": {"instance_cost": 0.0, "api_calls": len(steps) + 1}, "mini_version": "1.15.0",
                 "config": {"agent": {"step_limit": 250, "cost_limit": 3.0},
                            "environment": {"image": f"docker.io/swebench/sweb.eval.x86_64.{instance_id}:latest",
                                            "cwd": "/testbed", "timeout": 60, "executable": "docker"},
                            "model": {"model_name": "test-model"}}},
        "messages": messages, "trajectory_format": "mini-swe-agent-1", "instance_id": instance_id,
    }
    path.write_text(json.dumps(doc, indent=1))
    return path


def write_2x(path: Path, instance_id: str, steps: list[tuple[str, str, int]], submission: str,
             submit: str = SUBMIT_2X) -> Path:
    """A mini-swe-agent 2.x tool-calling run: ``steps`` are (command, output, exit code); then ``submit``."""
    messages: list[dict] = [{"role": "system", "content": "You are a helpful assistant that can interact with a "
                             "computer shell to solve programming tasks."},
                            {"role": "user", "content": "<pr_description>\nfix f\n</pr_description>"}]
    for n, (command, _, _) in enumerate([*steps, (submit, "", 0)]):
        call_id = f"call_{n}"
        text = f"Step {n}."
        messages.append({
            "content": text, "role": "assistant", "function_call": None,
            "tool_calls": [{"function": {"arguments": json.dumps({"command": command}), "name": "bash"},
                            "id": call_id, "type": "function"}],
            "extra": {"actions": [{"command": command, "tool_call_id": call_id}], "response": _response(text, n),
                      "cost": 0.0, "timestamp": 1767225600.0 + n},
        })
        if n < len(steps):
            output, code = steps[n][1], steps[n][2]
            messages.append({
                "content": f"<returncode>{code}</returncode>\n<output>\n{output}</output>",
                "extra": {"raw_output": output, "returncode": code, "timestamp": 1767225600.5 + n, "exception_info": ""},
                "tool_call_id": call_id, "role": "tool",
            })
    messages.append({"role": "exit", "content": submission,
                     "extra": {"exit_status": "Submitted", "submission": submission}})
    doc = {
        "info": {"model_stats": {"instance_cost": 0.0, "api_calls": len(steps) + 1},
                 "config": {"agent": {"step_limit": 250, "cost_limit": 3.0},
                            "agent_type": "minisweagent.agents.default.DefaultAgent",
                            "model": {"model_name": "test-model"},
                            "model_type": "minisweagent.models.litellm_model.LitellmModel",
                            "environment": {"image": f"docker.io/swebench/sweb.eval.x86_64.{instance_id}:latest",
                                            "cwd": "/testbed", "timeout": 60, "interpreter": ["bash", "-c"]},
                            "environment_type": "minisweagent.environments.docker.DockerEnvironment"},
                 "mini_version": "2.0.0", "exit_status": "Submitted", "submission": submission},
        "messages": messages, "trajectory_format": "mini-swe-agent-1.1", "instance_id": instance_id,
    }
    path.write_text(json.dumps(doc, indent=1))
    return path
