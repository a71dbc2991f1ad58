"""Rediscovery figures on the shared real runs (self-pairs) and on a study's successor runs.

    python benchmarks/rediscovery_figures.py [TRAJECTORIES_DIR] [--study OUT]

For every run under TRAJECTORIES_DIR (default: ``$TAKEOVER_SHARED/data/trajectories``; every record of a file
that holds several) and every handoff point found in it, the run cut at the point is the predecessor and the
same run from its start the successor (a *self-pair*, docs/protocol.md, Extension "Rediscovery"). Each row
prints the cut, the actions before it that read, search or verify (``pre_rsv``: each must be labelled
rediscovery, ``pre_rsv_labelled`` says how many are), the edits before it (``pre_edits``, labelled
``redo_edit``: ``pre_redo``), the actions before it and those still labelled ``new`` with their share
(``pre_actions``, ``pre_new``, ``pre_new_share``: every action before the cut repeats itself, so each ``new``
one is a rule's blind spot or an exception the rules name), the actions after it labelled rediscovery
(``post_rediscovery``: real repeats) and the run's share of rediscovery events. Then the total share of
``new`` actions before the cut, their reasons, every one of them (event, reason, command), and the command
parts no rule reads with their counts. Points come from the run's stored states where it has them
, else from the states its events determine (none of the shared runs stores them) (an exact replay needs each task's environment).

With ``--study OUT`` it also prints the stored figures of every takeover unit of that study folder
(computing those a folder written before lacks, as ``takeover report`` does).
Exit status 1 when a self-pair leaves a read, search or verification before the cut unlabelled for another
reason than output that depends on the time, randomness or the network.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

from takeover.errors import InputError
from takeover.points import detect_points, stored_diffs
from takeover.rediscovery import REDISCOVERY_LABELS, event_derived_states, label_successor
from takeover.rediscovery.study import study_figures
from takeover.trajectories import read_trajectories
from takeover.trajectories.registry import expand_paths

#: The shared real runs: ``$TAKEOVER_SHARED/data/trajectories``, by default ``../shared`` beside the checkout.
DEFAULT = Path(os.environ.get("TAKEOVER_SHARED", Path(__file__).resolve().parents[1].parent / "shared")) / "data" / \
    "trajectories"


#: Reasons a repeat stays ``new`` on purpose (docs/protocol.md section 9.1, the repeat rule's exceptions).
VARYING = ("time", "randomness", "network")


def self_pairs(root: Path) -> tuple[list[dict], collections.Counter]:
    """One row per shared run and handoff point found in it (module docstring), and the command parts no rule
    reads over all self-pairs, with counts. A row's ``new_before`` lists ``(event, reason, command)`` of each
    action before the cut still labelled ``new``."""
    rows: list[dict] = []
    unrecognised: collections.Counter = collections.Counter()
    for path in sorted(expand_paths([root])):
        try:
            runs = read_trajectories(path)
        except InputError as exc:  # index files and summaries beside the runs
            print(f"skipped {path.relative_to(root)}: {str(exc)[:100]}", file=sys.stderr)
            continue
        for run in runs:
            states = stored_diffs(run) or event_derived_states(run)
            points, _missing = detect_points(run.events, states)
            for point in points:
                cut = point.event_index
                result = label_successor(run, cut, run, start="base")
                pre = [a for a in result.labels if a.event <= cut]
                rsv = [a for a in pre if a.kind in ("read", "search", "verification")]
                edits = [a for a in pre if a.kind == "edit"]
                post = [a for a in result.labels if a.event > cut and a.label in REDISCOVERY_LABELS]
                new = [a for a in pre if a.label == "new"]
                unrecognised.update(result.unrecognised)
                rows.append({
                    "pre_actions": len(pre), "pre_new": len(new),
                    "pre_new_share": round(len(new) / len(pre), 4) if pre else None,
                    "new_before": [(a.event, a.reason, _command(run.events[a.event])) for a in new],
                    "run": f"{path.relative_to(root)}{'' if len(runs) == 1 else '#' + str(run.record)}",
                    "point": point.type, "cut": cut, "actions": result.figures.actions,
                    "pre_rsv": len(rsv), "pre_rsv_labelled": sum(a.label in REDISCOVERY_LABELS for a in rsv),
                    "pre_rsv_missed": sum(a.label == "new" and a.reason not in VARYING for a in rsv),
                    "pre_edits": len(edits), "pre_redo": sum(a.label == "redo_edit" for a in edits),
                    "post_rediscovery": len(post), "share": result.figures.rediscovery_share,
                })
    return rows, unrecognised


def _command(event) -> str:
    """What an action ran or said, on one line, cut to 100 characters."""
    text = event.command or (f"{event.type} {event.path}" if event.path else event.text) or event.type
    text = " ".join(text.split())
    return text if len(text) <= 100 else text[:97] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--study", type=Path, default=None)
    args = parser.parse_args(argv)
    rows, unrecognised = self_pairs(args.root)
    columns = ["run", "point", "cut", "actions", "pre_rsv", "pre_rsv_labelled", "pre_edits", "pre_redo",
               "pre_actions", "pre_new", "pre_new_share", "post_rediscovery", "share"]
    print("\t".join(columns))
    for r in rows:
        print("\t".join(str(r[c]) for c in columns))
    missed = sum(r["pre_rsv_missed"] for r in rows)
    print(f"\n{len(rows)} self-pairs; reads/searches/verifications before the cut: "
          f"{sum(r['pre_rsv'] for r in rows)}, labelled rediscovery: {sum(r['pre_rsv_labelled'] for r in rows)}; "
          f"edits before the cut: {sum(r['pre_edits'] for r in rows)}, redo_edit: {sum(r['pre_redo'] for r in rows)}; "
          f"rediscovery after the cut: {sum(r['post_rediscovery'] for r in rows)}")
    per_run: dict[str, list[int]] = {}
    for r in rows:
        counts = per_run.setdefault(r["run"], [0, 0])
        counts[0] += r["pre_new"]
        counts[1] += r["pre_actions"]
    print("actions before the cut still new, per run (over its points):")
    for run, (n, of) in per_run.items():
        print(f"  {run}\t{n} of {of}\t{n / of:.1%}" if of else f"  {run}\t0 of 0")
    pre, new = sum(r["pre_actions"] for r in rows), sum(r["pre_new"] for r in rows)
    reasons = collections.Counter(reason for r in rows for _e, reason, _c in r["new_before"])
    print(f"actions before the cut still new: {new} of {pre} ({new / pre:.1%})" if pre else "no actions before a cut")
    print("  by reason: " + ", ".join(f"{reason} {n}" for reason, n in reasons.most_common()))
    for r in rows:
        for event, reason, command in r["new_before"]:
            print(f"  {r['run']} {r['point']} event {event}: {reason}: {command!r}")
    print("command parts no rule reads, of actions left new (count over self-pairs, most frequent first):")
    for text, n in unrecognised.most_common(25):
        print(f"  {n:4d}  {text[:110]!r}")
    if args.study is not None:
        print(f"\nstudy {args.study}:")
        print("unit\tpoint_type\tview\tsuccessor\tactions\trediscovery_actions\tshare\tby_label\tfirst_new\t"
              "first_edit")
        for row in study_figures(args.study):
            f = row.figures
            if f is None:
                print(f"{row.key}\t{row.point_type}\t{row.view}\t{row.successor}\t(not computed: {row.reason})")
                continue
            print("\t".join(str(x) for x in (row.key, row.point_type, row.view, row.successor, f["actions"],
                                              f["rediscovery_actions"], f["rediscovery_share"], f["by_label"],
                                              f["events_until_first_new"], f["events_until_first_edit"])))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
