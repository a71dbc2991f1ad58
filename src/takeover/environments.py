"""Per-(repo, version) execution environments for the local backend (issue 3)."""
