"""What an experiment's stages hand on and what the report reads: the typed records of the unit files, the
rows of ``results.csv`` and the metrics derived from the records (docs/protocol.md sections 8.3 and 9).

- :mod:`.records`: the ``inputs`` and ``output`` record of each stage's unit files (the table there);
- :mod:`.result_row`: :class:`ResultRow`, whose fields are the columns of ``results.csv``, and the record
  fields each column is taken from;
- :mod:`.metrics`: the metrics a takeover run records from its patches and test lists
  (:func:`checkpoint_diff_preserved`, :func:`only_source_files_changed`, :func:`pass_rate`).
"""

from takeover.results.metrics import checkpoint_diff_preserved, only_source_files_changed, pass_rate
from takeover.results.records import (
    AgentRunOutput,
    CheckpointInputs,
    CheckpointOutput,
    CheckpointUnitInputs,
    EnvironmentInputs,
    EnvironmentOutput,
    GradeInputs,
    GradeOutput,
    GradingSettings,
    HandoffStateInputs,
    HandoffStateOutput,
    ImportInputs,
    ImportOutput,
    MissingEntry,
    PlanEntry,
    PointEntry,
    PointsInputs,
    PointsOutput,
    PredecessorOutput,
    PredecessorRunInputs,
    PredecessorRunOutput,
    ReplaySummary,
    TakeoverInputs,
    TakeoverRunOutput,
    TaskInputs,
    TrajectoryFile,
    UnitLabels,
    ViewOutput,
    ViewUnitInputs,
)
from takeover.results.result_row import (
    GRADE_OUTPUT_COLUMNS,
    LABEL_COLUMNS,
    POINT_COLUMNS,
    RESULT_COLUMNS,
    RUN_OUTPUT_COLUMNS,
    STATUS_COLUMNS,
    ResultRow,
)

__all__ = [
    "GRADE_OUTPUT_COLUMNS",
    "LABEL_COLUMNS",
    "POINT_COLUMNS",
    "RESULT_COLUMNS",
    "RUN_OUTPUT_COLUMNS",
    "STATUS_COLUMNS",
    "AgentRunOutput",
    "CheckpointInputs",
    "CheckpointOutput",
    "CheckpointUnitInputs",
    "EnvironmentInputs",
    "EnvironmentOutput",
    "GradeInputs",
    "GradeOutput",
    "GradingSettings",
    "HandoffStateInputs",
    "HandoffStateOutput",
    "ImportInputs",
    "ImportOutput",
    "MissingEntry",
    "PlanEntry",
    "PointEntry",
    "PointsInputs",
    "PointsOutput",
    "PredecessorOutput",
    "PredecessorRunInputs",
    "PredecessorRunOutput",
    "ReplaySummary",
    "ResultRow",
    "TakeoverInputs",
    "TakeoverRunOutput",
    "TaskInputs",
    "TrajectoryFile",
    "UnitLabels",
    "ViewOutput",
    "ViewUnitInputs",
    "checkpoint_diff_preserved",
    "only_source_files_changed",
    "pass_rate",
]
