"""A scripted Harbor agent for the Harbor tests (``harbor run -a harbor_agents:ScriptedSuccessor``; loaded by
Harbor's process from the harbor venv with ``tests/`` on its path, never by pytest itself).

It needs no model: it runs :data:`COMMANDS` in the task's environment (the fix of the tiny flask stand-in
task, then ``git diff``) and writes its ATIF trajectory with Harbor's own models, as Harbor's installed agents
do: the seeded context first (a raw_trace task's ``trajectory.json``, which Harbor hands it as
``load_trajectory``; its steps keep ``is_copied_context``), then the instruction, then one agent step per
command with a ``bash`` tool call, its observation and made-up token counts (``100 * n`` prompt tokens and
10 completion tokens for the n-th call, 1-based).
"""

from __future__ import annotations

import json

from harbor.agents.base import BaseAgent
from harbor.agents.capabilities import AgentCapabilities
from harbor.models.trajectories import (
    Agent,
    Metrics,
    Observation,
    ObservationResult,
    Step,
    ToolCall,
    Trajectory,
)

COMMANDS = ("sed -i 's/return a - b/return a + b/' src/tinyadd/__init__.py", "git diff --stat")


class ScriptedSuccessor(BaseAgent):
    capabilities = AgentCapabilities(atif=True, load_atif_trajectory=True)

    @staticmethod
    def name() -> str:
        return "takeover-scripted"

    def version(self) -> str:
        return "1.0"

    async def setup(self, environment) -> None:
        return None

    async def load(self, instruction, environment, context) -> None:
        """Harbor's entry point when the task seeds the session: the same run, the seeded steps first."""
        await self.run(instruction, environment, context)

    async def run(self, instruction, environment, context) -> None:
        steps: list[Step] = []
        if self.load_trajectory is not None:
            seeded = Trajectory.model_validate_json(self.load_trajectory.read_text())
            steps += [s.model_copy(update={"step_id": i + 1}) for i, s in enumerate(seeded.steps)]
        steps.append(Step(step_id=len(steps) + 1, source="user", message=instruction))
        for n, command in enumerate(COMMANDS, start=1):
            result = await environment.exec(command, cwd="/testbed")
            call = ToolCall(tool_call_id=f"call-{n}", function_name="bash", arguments={"command": command})
            steps.append(Step(
                step_id=len(steps) + 1, source="agent", message=f"step {n}", tool_calls=[call],
                observation=Observation(results=[ObservationResult(source_call_id=call.tool_call_id,
                                                                   content=(result.stdout or "") + (result.stderr or ""))]),
                metrics=Metrics(prompt_tokens=100 * n, completion_tokens=10)))
        doc = Trajectory(schema_version="ATIF-v1.6", session_id=self.session_id if hasattr(self, "session_id") else "s",
                         agent=Agent(name=self.name(), version=self.version(), model_name="scripted"), steps=steps)
        (self.logs_dir / "trajectory.json").write_text(json.dumps(doc.to_json_dict(exclude_none=True), indent=1))
