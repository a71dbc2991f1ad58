"""Rediscovery: which of a successor's actions repeat what the predecessor knew at the cut, and the figures of a
run (docs/protocol.md section 9.1).

Modules:

- ``actions.py``: what one action reads, searches, runs as verification and edits, in every recorded shape
  (:func:`event_effects`).
- ``contents.py``: content keys, the repository state and the state a command runs on (:class:`Contents`).
- ``labels.py``: the predecessor's knowledge at the cut and the labels of a successor's actions, with the
  reason of each ``new`` one (:func:`label_successor`, :class:`Rediscovery`, :class:`RediscoveryFigures`).
- ``study.py``: the figures of a study's takeover units, stored beside each unit's run folder
  (:func:`study_figures`).
"""

from takeover.rediscovery.actions import ActionEffects, event_effects
from takeover.rediscovery.labels import (
    LABELS,
    REASONS,
    REDISCOVERY_LABELS,
    Knowledge,
    LabelledAction,
    Rediscovery,
    RediscoveryFigures,
    event_derived_states,
    knowledge_at,
    label_successor,
)

__all__ = [
    "LABELS",
    "REASONS",
    "REDISCOVERY_LABELS",
    "ActionEffects",
    "Knowledge",
    "LabelledAction",
    "Rediscovery",
    "RediscoveryFigures",
    "event_derived_states",
    "event_effects",
    "knowledge_at",
    "label_successor",
]
