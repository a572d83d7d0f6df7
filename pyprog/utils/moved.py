"""Old import paths of moved modules and names: they still work, with a warning.

A module that moved leaves a small module at its old path whose attributes are looked up,
on first use, in the modules that now hold them (PEP 562's module ``__getattr__``)::

    # pyprog/offpolicy/rounds.py, after the move
    from pyprog.utils.moved import moved

    __getattr__, __dir__ = moved(__name__, "pyprog.logs.rounds", "pyprog.logs.times")

Each use of an old path warns with a :class:`MovedWarning` (a ``DeprecationWarning``) that
names the new one; the old paths go in :data:`REMOVED_IN`.
"""

from __future__ import annotations

import functools
import importlib
import sys
import warnings
from collections.abc import Callable, Iterable

__all__ = ["REMOVED_IN", "MovedWarning", "moved", "renamed_arguments"]

#: The release in which the old paths stop working.
REMOVED_IN = "0.3"


class MovedWarning(DeprecationWarning):
    """A name imported from the path it had before pyprog's layout of issue 49."""


def _home(name: str, modules: Iterable[str]) -> str | None:
    """The first of ``modules`` that holds ``name`` (imported as needed)."""
    for module in modules:
        if hasattr(importlib.import_module(module), name):
            return module
    return None


def _defining_module(value: object, name: str, found_in: str) -> str:
    """Where ``value`` is defined (a function's or class's module), else ``found_in``."""
    module = getattr(value, "__module__", None)
    if isinstance(module, str) and module.startswith("pyprog.") and module in sys.modules:
        if getattr(sys.modules[module], name, None) is value:
            return module
    return found_in


def moved(
    old: str,
    *modules: str,
    names: Iterable[str] | None = None,
    renamed: dict[str, str] | None = None,
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` that find names in ``modules``, warning.

    Parameters
    ----------
    old : str
        The old module's name (pass ``__name__``).
    *modules : str
        The modules that now hold its names, searched in order.
    names : iterable of str, optional
        Only these names moved (the old module still defines the others itself); default:
        every public or private name the new modules hold.
    renamed : dict, optional
        Old name -> new name, for names that also changed (found in ``modules`` by the new).

    Returns
    -------
    (__getattr__, __dir__)

    Examples
    --------
    >>> import types, sys, warnings
    >>> sys.modules["pyprog.old"] = types.ModuleType("pyprog.old")
    >>> getattr_, _ = moved("pyprog.old", "pyprog.logs.times", names=["as_days"])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     f = getattr_("as_days")
    >>> f.__module__, caught[0].category.__name__
    ('pyprog.logs.times', 'MovedWarning')
    >>> str(caught[0].message)
    'pyprog.old.as_days moved to pyprog.logs.times.as_days; the old path goes in pyprog 0.3'
    >>> del sys.modules["pyprog.old"]
    """
    if not modules:
        raise ValueError("moved() needs at least one new module")
    only = None if names is None else frozenset(names)
    renamed = dict(renamed or {})

    def __getattr__(name: str) -> object:
        home, new = None, renamed.get(name, name)
        if not name.startswith("__") and (only is None or name in only):
            home = _home(new, modules)
        if home is None:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), new)
        home = _defining_module(value, new, home)
        warnings.warn(
            f"{old}.{name} moved to {home}.{new}; the old path goes in pyprog {REMOVED_IN}",
            MovedWarning,
            stacklevel=2,
        )
        # kept in the old module, so that ``from old import name`` (which asks twice) and
        # later uses warn once
        vars(sys.modules[old])[name] = value
        return value

    def __dir__() -> list[str]:
        found = set(only or ()) | set(renamed)
        if only is None:
            for module in modules:
                found |= set(getattr(importlib.import_module(module), "__all__", ()))
        return sorted(found)

    __getattr__.forwards = only  # type: ignore[attr-defined]  # which names (None: all)
    return __getattr__, __dir__


def renamed_arguments(**renamed: str) -> Callable[[Callable], Callable]:
    """A decorator: keyword arguments by their old names still work, with a warning.

    ``@renamed_arguments(seed="random_state")`` lets ``f(seed=0)`` call ``f(random_state=0)``
    with a :class:`MovedWarning`; giving both is a ``TypeError``.

    Examples
    --------
    >>> @renamed_arguments(seed="random_state")
    ... def draw(n, random_state=None):
    ...     return random_state
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     draw(3, seed=7)
    7
    >>> str(caught[0].message)
    'draw(seed=...) is now draw(random_state=...); the old name goes in pyprog 0.3'
    """

    def decorate(f: Callable) -> Callable:
        name = f.__qualname__.removesuffix(".__init__")  # a class: its name

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{name}() got both {old}= and {new}=; give {new}=")
                    warnings.warn(
                        f"{name}({old}=...) is now {name}({new}=...); the old name "
                        f"goes in pyprog {REMOVED_IN}",
                        MovedWarning,
                        stacklevel=2,
                    )
                    kwargs[new] = kwargs.pop(old)
            return f(*args, **kwargs)

        return wrapper

    return decorate
