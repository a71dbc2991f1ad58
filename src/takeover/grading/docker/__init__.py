"""The ``docker`` grading backend: swebench's official harness on its own images (docs/protocol.md
section 6).

- :mod:`.docker_backend`: one prediction graded by ``run_instance`` under a run id of its own
  (:func:`grade_docker`) on the task's instance image (its content id in the key and the result), the
  harness's report read back and checked to belong to the patch, and :class:`DockerBackend`, the backend
  registered as ``docker``.
"""

from takeover.grading.docker.docker_backend import DockerBackend, grade_docker

__all__ = ["DockerBackend", "grade_docker"]
