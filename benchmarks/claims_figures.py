"""Claim figures of notes checked against the trace (docs/protocol.md section 7.6): on the shared real runs and
on a study's notes.

    python benchmarks/claims_figures.py [TRAJECTORIES_DIR] [--study OUT] [--claims]

For every run under TRAJECTORIES_DIR (default: ``$TAKEOVER_SHARED/data/trajectories``; every record of a file
that holds several) and every handoff point found in it (from the run's stored states, else from the states
its events determine, as ``benchmarks/rediscovery_figures.py`` does), notes that restate the trace exactly
(:mod:`takeover.testing.restating_notes`, a summary and a structured note) are checked at the point, with
the checkpoint patch the run's stored diffs give (SWE-agent), else without one. Every claim of them must be
supported: a row prints the claims per kind and verdict; exit status 1 when any claim is not supported.

With ``--study OUT`` it also prints the check of every model-written note of that study folder (computing and
storing those a folder written before lacks, as ``takeover report`` does): per view the notes, claims per
note, verdicts and shares, per kind, and with ``--claims`` every claim that is not supported and every
clause in which no claim was found.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

from takeover.claims import CLAIM_KINDS, VERDICTS, check_note, study_claims, summary_of, trace_facts
from takeover.errors import InputError
from takeover.points import detect_points, stored_diffs
from takeover.rediscovery import event_derived_states
from takeover.testing.restating_notes import restated_fields, restated_summary
from takeover.trajectories import read_trajectories
from takeover.trajectories.registry import expand_paths

#: The shared real runs: ``$TAKEOVER_SHARED/data/trajectories``, by default ``../shared`` beside the checkout.
DEFAULT = Path(os.environ.get("TAKEOVER_SHARED", Path(__file__).resolve().parents[1].parent / "shared")) / "data" / \
    "trajectories"


def shared_runs(root: Path) -> tuple[list[dict], list[str]]:
    """One row per (run, point, note): its claims per verdict and kind; and every claim not supported."""
    rows: list[dict] = []
    wrong: list[str] = []
    for path in sorted(expand_paths([root])):
        try:
            runs = read_trajectories(path)
        except InputError as exc:  # index files and summaries beside the runs
            print(f"skipped {path.relative_to(root)}: {str(exc)[:100]}", file=sys.stderr)
            continue
        for run in runs:
            diffs = stored_diffs(run)
            points, _missing = detect_points(run.events, diffs or event_derived_states(run))
            for point in points:
                cut = point.event_index
                patch = "".join(diffs[cut].values()) if diffs else None
                facts = trace_facts(run, cut, checkpoint_patch=patch)
                for note, text, fields in (("summary", restated_summary(run, cut, patch), None),
                                           ("structured", "", restated_fields(run, cut, patch))):
                    check = check_note(text, facts, fields=fields)
                    name = f"{path.relative_to(root)}{'' if len(runs) == 1 else '#' + str(run.record)}"
                    rows.append({"run": name, "point": point.type, "cut": cut, "note": note,
                                 "patch": patch is not None, **check.figures()})
                    wrong += [f"{name} {point.type} {note}: {c.claim.text!r} {c.verdict} ({c.reason})"
                              for c in check.claims if c.verdict != "supported"]
    return rows, wrong


def _kinds(figures: list[dict]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for k in CLAIM_KINDS:
        counts = {v: sum((f.get("by_kind") or {}).get(k, {}).get(v, 0) for f in figures) for v in VERDICTS}
        if sum(counts.values()):
            out[k] = counts
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trajectories", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--study", type=Path, help="a study folder (OUT of takeover run) whose notes to check")
    parser.add_argument("--claims", action="store_true", help="with --study: print every claim not supported")
    args = parser.parse_args(argv)
    rows, wrong = shared_runs(args.trajectories)
    print(f"{'run':58} {'point':32} {'cut':>4} {'note':10} {'claims':>6} {'supported':>9}")
    for r in rows:
        print(f"{r['run'][:58]:58} {r['point']:32} {r['cut']:>4} {r['note']:10} {r['claims']:>6} {r['supported']:>9}")
    total = summary_of(rows)
    print(f"\nshared runs, restating notes: {total['notes']} notes, {total['claims']} claims "
          f"({total['claims_per_note']} per note): {total['supported']} supported, {total['unsupported']} "
          f"unsupported, {total['contradicted']} contradicted; notes with a checkpoint patch: "
          f"{sum(1 for r in rows if r['patch'])}")
    print("by kind: " + "; ".join(f"{k} {n['supported']}/{n['unsupported']}/{n['contradicted']}"
                                  for k, n in _kinds(rows).items()))
    for line in wrong:
        print(f"NOT SUPPORTED: {line}")
    if args.study:
        checks = study_claims(args.study)
        by_view: dict[str, list] = collections.defaultdict(list)
        for c in checks:
            if c.figures is not None:
                by_view[str(c.view)].append(c)
            else:
                print(f"not checked {c.key}: {c.reason}")
        for view, done in by_view.items():
            s = summary_of([c.figures for c in done])
            print(f"\n{view}: {s['notes']} notes, {s['claims']} claims ({s['claims_per_note']} per note): "
                  f"{s['supported']} supported, {s['unsupported']} unsupported ({s['unsupported_share']}), "
                  f"{s['contradicted']} contradicted ({s['contradicted_share']})")
            print("  by kind: " + "; ".join(f"{k} {n['supported']}/{n['unsupported']}/{n['contradicted']}"
                                            for k, n in _kinds([c.figures for c in done]).items()))
            if args.claims:
                for c in done:
                    for claim in c.claims or []:
                        if claim["verdict"] != "supported":
                            print(f"  {claim['verdict']:12} {claim['kind']:12} {claim['text']!r}: {claim['reason']}")
                    for text in c.unclaimed or []:
                        print(f"  no claim found in: {text}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
