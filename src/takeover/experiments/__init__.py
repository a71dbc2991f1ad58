"""Experiments end to end: config, units of work, executors (docs/protocol.md sections 2-9; issue 7).

Public API::

    from takeover.experiments import load_experiment, run_experiment
    from takeover.report import build_report

    config = load_experiment("experiment.toml")          # or ExperimentConfig(...) in Python
    summary = run_experiment(config, workers=4)           # resumable; see ExperimentSummary
    report = build_report(config.out)                     # results.csv, report.md, report.json, plots/
"""

from takeover.experiments.config import ExperimentConfig, load_experiment
from takeover.experiments.runner import ExperimentSummary, run_experiment

__all__ = ["ExperimentConfig", "ExperimentSummary", "load_experiment", "run_experiment"]
