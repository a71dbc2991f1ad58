"""Experiments end to end: the experiment file, units of work, executors (docs/protocol.md sections 2-9).

Public API::

    from takeover.experiments import load_experiment, run_experiment
    from takeover.report import build_report

    config = load_experiment("experiment.toml")          # or ExperimentConfig(...) in Python
    summary = run_experiment(config, workers=4)           # resumable; see ExperimentSummary
    report = build_report(config.out)                     # results.csv, report.md, report.json, plots/

Modules: ``config`` (the experiment file), ``selection`` (source tasks and imported runs), ``planning``
(each stage's units), ``stages`` (the unit functions), ``units`` (unit files and keys), ``engine``
(executors, resuming, caps), ``pipeline`` (:func:`run_experiment`), ``progress`` (the live table).
"""

from takeover.experiments.config import ExperimentConfig, load_experiment
from takeover.experiments.pipeline import ExperimentSummary, run_experiment

__all__ = ["ExperimentConfig", "ExperimentSummary", "load_experiment", "run_experiment"]
