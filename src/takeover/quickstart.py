"""takeover quickstart: the whole protocol offline on one machine (issue 8)."""
