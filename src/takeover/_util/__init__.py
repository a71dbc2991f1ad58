"""The machinery under every stage; nothing here knows the protocol.

- :mod:`.io`: atomic writes, the one reader of text files (one-line errors for bytes that are not UTF-8),
  JSON Lines, stable hashes, readers of earlier field names;
- :mod:`.folders`: output folders checked before the work and swapped in whole, scratch folders of dead
  processes removed;
- :mod:`.processes`: the one process runner (a command in its own session, killed with all it started);
- :mod:`.sandbox`: bubblewrap (no network, writes only in the workspace);
- :mod:`.redact`: secrets masked in logs, trajectories, prompts and reports;
- :mod:`.patches`: unified diffs (files touched, per-file pieces, normalized comparison);
- :mod:`.versions`: package versions written into records;
- :mod:`.harness_version`: the one place that knows how swebench 4.1 and 5.0 differ (where things are, the
  verdict rules of each, ``grading_rules``);
- :mod:`.logs`: other libraries' loggers at WARNING unless ``--verbose``;
- :mod:`.registries`: :class:`~takeover._util.registries.Registry`, one shape for every registry of a seam (runtimes, command and grading backends, trajectory readers).

Private to ``takeover``: import the concept packages instead.
"""
