"""The ``docker`` grading backend: swebench's official harness on its own images (docs/protocol.md
section 6).

- :mod:`.docker_backend`: one prediction graded by ``run_instance`` under a run id of its own
  (:func:`grade_docker`) on the task's instance image (its content id in the key and the result), the
  harness's report read back and checked to belong to the patch, and :class:`DockerBackend`, the backend
  registered as ``docker``.
- :mod:`.harness_run`: a harness run id of its own per grading (two gradings of one patch at once never share a
  container or a folder) and the harness's log root inside the grading's folder.
"""

from takeover.grading.docker.docker_backend import DockerBackend, grade_docker

__all__ = ["DockerBackend", "grade_docker"]
