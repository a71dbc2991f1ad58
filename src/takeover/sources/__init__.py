"""Where a study's inputs come from (docs/protocol.md section 2): the source tasks and their repositories.

- :mod:`.tasks`: :class:`SourceTask` (one SWE-bench instance), the loaders and the seeded selection;
- :mod:`.repos`: :class:`RepoSource` (a mirror of bare repositories, or GitHub) and workspaces.

    from takeover.sources import RepoSource, load_tasks, select_tasks
    tasks = select_tasks(load_tasks("swebench_verified.jsonl"))      # the paper's 75
    RepoSource(mirror="/data/mirror", offline=True).workspace(tasks[0].repo, tasks[0].base_commit, "ws")
"""

from takeover.sources.repos import MIRROR_ENV, RepoSource
from takeover.sources.tasks import SourceTask, load_tasks, select_tasks, task_by_id, task_index

__all__ = ["MIRROR_ENV", "RepoSource", "SourceTask", "load_tasks", "select_tasks", "task_by_id", "task_index"]
