"""Content-addressed snapshots of a working tree and per-file diffs against base_commit (issue 4)."""
