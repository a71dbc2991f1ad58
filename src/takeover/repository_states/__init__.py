"""What the repository held after each event of a run, and how we know it (docs/protocol.md sections 3 and 5).

- :mod:`.file_classes`: test, source and artifact files (section 3);
- :mod:`.snapshots`: content-addressed snapshots of a working tree and per-file diffs (section 5.1, source a);
- :mod:`.starting_state`: a task's starting state, ``base_commit`` plus its environment's setup edits (5.2);
- :mod:`.replay`: an imported run's actions done again in a fresh checkout (5.3);
- :mod:`.replay_verification`: whether that replay reproduces the run's own submission (5.4);
- :mod:`.editors`: the recording tools' file editors, SWE-agent's commands and OpenHands' agent skills,
  emulated for replay (5.6).

Import the modules themselves (``from takeover.repository_states.snapshots import take_snapshot``): this
face re-exports nothing, so that reading a file class never loads the replay machinery.
"""
