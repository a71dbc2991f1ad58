"""takeover doctor: what works on this machine and how to fix what does not (issue 8)."""
