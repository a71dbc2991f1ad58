"""Trajectories: the normalized event model and readers of real agents' native formats (issue 2)."""
