"""Rediscovery figures on the shared real runs (self-pairs) and on a study's successor runs.

    python benchmarks/rediscovery_figures.py [TRAJECTORIES_DIR] [--study OUT]

For every run under TRAJECTORIES_DIR (default: ``$TAKEOVER_SHARED/data/trajectories``; every record of a file
that holds several) and every handoff point found in it, the run cut at the point is the predecessor and the
same run from its start the successor (a *self-pair*, docs/protocol.md, Extension "Rediscovery"). Each row
prints the cut, the actions before it that read, search or verify (``pre_rsv``: each must be labelled
rediscovery, ``pre_rsv_labelled`` says how many are), the edits before it (``pre_edits``, labelled
``redo_edit``: ``pre_redo``), the actions after it labelled rediscovery (``post_rediscovery``: real repeats)
and the run's share of rediscovery events. Points come from the run's stored states where it has them
, else from the states its events determine (none of the shared runs stores them) (an exact replay needs each task's environment).

With ``--study OUT`` it also prints the stored figures of every takeover unit of that study folder
(computing those a folder written before lacks, as ``takeover report`` does).
Exit status 1 when a self-pair leaves a read, search or verification before the cut unlabelled.
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


def self_pairs(root: Path) -> tuple[list[dict], collections.Counter]:
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
                unrecognised.update(result.unrecognised)
                rows.append({
                    "run": f"{path.relative_to(root)}{'' if len(runs) == 1 else '#' + str(run.record)}",
                    "point": point.type, "cut": cut, "actions": result.figures.actions,
                    "pre_rsv": len(rsv), "pre_rsv_labelled": sum(a.label in REDISCOVERY_LABELS for a in rsv),
                    "pre_edits": len(edits), "pre_redo": sum(a.label == "redo_edit" for a in edits),
                    "post_rediscovery": len(post), "share": result.figures.rediscovery_share,
                })
    return rows, unrecognised


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--study", type=Path, default=None)
    args = parser.parse_args(argv)
    rows, unrecognised = self_pairs(args.root)
    columns = ["run", "point", "cut", "actions", "pre_rsv", "pre_rsv_labelled", "pre_edits", "pre_redo",
               "post_rediscovery", "share"]
    print("\t".join(columns))
    for r in rows:
        print("\t".join(str(r[c]) for c in columns))
    missed = sum(r["pre_rsv"] - r["pre_rsv_labelled"] for r in rows)
    print(f"\n{len(rows)} self-pairs; reads/searches/verifications before the cut: "
          f"{sum(r['pre_rsv'] for r in rows)}, labelled rediscovery: {sum(r['pre_rsv_labelled'] for r in rows)}; "
          f"edits before the cut: {sum(r['pre_edits'] for r in rows)}, redo_edit: {sum(r['pre_redo'] for r in rows)}; "
          f"rediscovery after the cut: {sum(r['post_rediscovery'] for r in rows)}")
    print("command parts no rule reads (count over self-pairs, most frequent first):")
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
