"""The handoff views by name: a study's ``views``, ``--view``, a unit's ``view`` (docs/protocol.md section 7).

:data:`HANDOFF_VIEWS` holds the paper's four views (the default set of a study, :data:`takeover.vocabulary.VIEWS`),
then the Extensions ``trace_digest``, ``condensed`` and ``self_notes``, then every view of the ``takeover.views`` entry point group (a package
that ships a :class:`~takeover.views.handoff_view.HandoffView` subclass or instance declares
``[project.entry-points."takeover.views"] NAME = "package.module:ViewClass"``). A view file (TOML, no code:
:mod:`takeover.views.view_files`) is named by its path and registered when it is read (:func:`view_named`).
A plug-in in code may also call ``HANDOFF_VIEWS.add(name, view)``.

What a view is built with beyond its defaults is :func:`view_options`: its ``Options`` filled from the
budgets (:class:`takeover.view_budgets.ViewBudgets`: the fields of that name) and then from the view's own
table (``[view_options.NAME]``, ``--view-option NAME.KEY=VALUE``), checked, defaults left out. That is what a
view unit's key and ``views.json``'s key carry as ``view_options``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from takeover._util.registries import Registry, checked_options
from takeover.errors import InputError
from takeover.view_budgets import ViewBudgets
from takeover.views.condensed import Condensed
from takeover.views.handoff_view import HandoffView
from takeover.views.paper_views import PAPER_VIEWS
from takeover.views.self_notes import SelfNotes
from takeover.views.trace_digest import TraceDigest
from takeover.views.view_files import FileView, is_view_file, read_view_file

#: The entry point group of code-backed views.
ENTRY_POINT_GROUP = "takeover.views"

#: Every registered view by name (the first, ``repo_only``, is the base every view is compared with).
HANDOFF_VIEWS: Registry[HandoffView] = Registry(
    "view", {view.name: view for view in (*PAPER_VIEWS, TraceDigest(), Condensed(), SelfNotes())}, where="--view")

_loaded_entry_points: set[str] = set()


def load_entry_points() -> None:
    """Register the views of the ``takeover.views`` entry point group not registered yet (each once).

    Raises:
        InputError: an entry point that cannot be loaded or is no view (names the entry point).
    """
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in _loaded_entry_points:
            continue
        _loaded_entry_points.add(point.name)
        where = f"entry point {point.name} = {point.value}"
        try:
            loaded = point.load()
        except Exception as exc:  # noqa: BLE001 - a plug-in's own import error, whatever it is
            raise InputError(where, f"cannot be loaded: {type(exc).__name__}: {exc}") from None
        view = loaded() if isinstance(loaded, type) else loaded
        if not isinstance(view, HandoffView):
            raise InputError(where, "is not a takeover.views.handoff_view.HandoffView")
        if not view.name:
            raise InputError(where, "the view declares no name")
        HANDOFF_VIEWS.add(view.name, view)


def register_view_file(view: FileView) -> FileView:
    """Register a view file's view under its name.

    Raises:
        InputError: another view (built in, a plug-in, another file) has that name.
    """
    known = HANDOFF_VIEWS.get(view.name)
    if known is not None and known.definition() != view.definition():
        raise InputError(view.where, f"the view name {view.name!r} is taken by {known.where}: give the file's view "
                                     "another name", field="name")
    HANDOFF_VIEWS.add(view.name, view)
    return view


def view_named(ref: str, *, base_dir: Path | str | None = None, where: str | None = None) -> HandoffView:
    """The view ``ref`` names: a registered name, or the path of a view file (``*.toml``; relative to
    ``base_dir``), which is read and registered.

    Raises:
        InputError: an unknown name (``where``: the flag or key; the message lists the views), or a view file
            that is missing or broken (names the file).
    """
    if is_view_file(ref):
        path = Path(ref).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        return register_view_file(read_view_file(path))
    load_entry_points()
    if ref not in HANDOFF_VIEWS:
        raise InputError(where or HANDOFF_VIEWS.where, f"unknown view {ref!r}; the views are {', '.join(HANDOFF_VIEWS)} "
                         "(or a view file, PATH.toml)")
    return HANDOFF_VIEWS[ref]


def view_of(name: str, definition: Mapping[str, Any] | None = None) -> HandoffView:
    """The view a unit names: ``definition`` (a view file's content, as a unit stores it) rebuilds a view
    file's view in any process; else the registered view ``name``.

    Raises:
        InputError: an unknown name or a broken definition.
    """
    if definition is not None:
        return register_view_file(FileView.from_definition(dict(definition)))
    load_entry_points()
    return HANDOFF_VIEWS.named(name)


def model_written(name: str) -> bool:
    """Whether a model writes view ``name`` (``False`` for a name no registered view has: nothing to check)."""
    load_entry_points()
    view = HANDOFF_VIEWS.get(name)
    return bool(view is not None and view.model_written)


def written_part(name: str, block: str) -> str:
    """The part of view ``name``'s ``block`` that a model wrote (:meth:`HandoffView.written_part`; the whole
    block for a name no registered view has)."""
    load_entry_points()
    view = HANDOFF_VIEWS.get(name)
    return block if view is None else view.written_part(block)


def view_options(view: HandoffView, budgets: ViewBudgets | None = None,
                 given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The options ``view`` is built with, beyond their defaults (JSON values): its ``Options`` fields named
    like a budget of ``budgets`` take that budget (when not at its default), then ``given`` (the view's own
    table) on top, checked by the ``Options`` model.

    Raises:
        InputError: an unknown option or a bad value (``field``: ``view_options.NAME.KEY``).
    """
    fields = view.Options.model_fields
    values = budgets.within(fields) if budgets is not None else {}
    return checked_options(view.Options, {**values, **(given or {})}, where=view.where,
                           field=f"view_options.{view.name}")


def view_order(names: Iterable[str]) -> list[str]:
    """``names`` in the order of every table: the views in code in registration order (the paper's four
    first), then the others (view files, whether read in this process or not) sorted by name."""
    load_entry_points()
    known = [name for name, view in HANDOFF_VIEWS.items() if view.definition() is None]
    return sorted(set(names), key=lambda v: (known.index(v) if v in known else len(known), v))
