"""The model's values that need no attrs: :data:`UNSET` and the read-only JSON containers.

:mod:`pisession._model` re-exports them, and users import ``UNSET`` from ``pisession``; they live
here so that reading a session (``pisession tree``) can use them without importing attrs and
creating the model classes, which cost more than the rest of that command's start-up.

Their classes say ``pisession._model`` is their module, where they were defined before: a pickle
of a model object names them there, and reads the same with any version of pisession.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

# typing for type checkers only (they take TYPE_CHECKING for true, and read the quoted "Any" of
# the base classes): importing it at run time took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, Literal

__all__ = ["UNSET", "Unset", "freeze_json"]


class Unset(enum.Enum):
    """The type of :data:`UNSET`, its one value: annotate ``note: str | Unset = UNSET``.

    Both tests narrow for mypy: ``x is UNSET`` / ``x is not UNSET`` and ``isinstance(x, Unset)``.
    ``UNSET`` is falsy (``__bool__`` is typed ``Literal[False]``), so ``if message.usage:`` also
    leaves ``UNSET`` out of the type, as Pi's ``if (message.usage)`` leaves out ``undefined``.
    """

    __module__ = "pisession._model"

    UNSET = "UNSET"

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset.UNSET
"""A field left out of the JSON (JavaScript's ``undefined``), as opposed to ``None`` (``null``).

It is falsy, so ``if entry.note:`` reads like Pi's ``if (entry.note)``::

    >>> LabelEntry(id="a1b2c3d4", parent_id=None, timestamp="...", target_id="x").label
    UNSET
"""

# Pickles made before the class was public name it ``pisession._model._UnsetType``.
_UnsetType = Unset


class _ReadOnlyDict(dict[str, "Any"]):
    """A JSON object inside a model: a dict (so JSON encoders and ``==`` take it) that refuses changes."""

    __module__ = "pisession._model"

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("model objects are read-only; build a new one with attrs.evolve(obj, field=...)")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (_ReadOnlyDict, (dict(self),))

    def __repr__(self) -> str:
        return dict.__repr__(self)

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        import copy

        return {k: copy.deepcopy(v, memo) for k, v in self.items()}


class _ReadOnlyDictInOrder(_ReadOnlyDict):
    """The ``extra`` of an object read from a dict: also remembers that dict's key order, so
    that ``attrs.evolve`` (which copies ``extra``) writes the changed object in the file's order."""

    __module__ = "pisession._model"

    __slots__ = ("wire_order",)

    wire_order: tuple[str, ...]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_extra_in_order, (dict(self), self.wire_order))


def _extra_in_order(values: dict[str, Any], order: tuple[str, ...]) -> _ReadOnlyDictInOrder:
    extra = _ReadOnlyDictInOrder(values)
    extra.wire_order = order
    return extra


_extra_in_order.__module__ = "pisession._model"

# One empty ``extra`` per key order (files repeat a few orders): as cheap as the shared empty
# dict was, and bounded, so a file of ever-new orders costs one small dict per object at most.
_EMPTY_IN_ORDER: dict[tuple[str, ...], _ReadOnlyDictInOrder] = {}


def _empty_in_order(order: tuple[str, ...]) -> _ReadOnlyDictInOrder:
    extra = _EMPTY_IN_ORDER.get(order)
    if extra is None:
        extra = _extra_in_order({}, order)
        if len(_EMPTY_IN_ORDER) < 4096:
            _EMPTY_IN_ORDER[order] = extra
    return extra


class _ReadOnlyList(list["Any"]):
    """A JSON array inside a model: a list (so JSON encoders and ``==`` take it) that refuses changes."""

    __module__ = "pisession._model"

    __slots__ = ()

    _read_only = _ReadOnlyDict._read_only
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (_ReadOnlyList, (list(self),))

    def __repr__(self) -> str:
        return list.__repr__(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        import copy

        return [copy.deepcopy(v, memo) for v in self]


_EMPTY: Mapping[str, Any] = _ReadOnlyDict()


def freeze_json(value: Any) -> Any:
    """A JSON value whose objects and arrays are read-only (``_ReadOnlyDict``/``_ReadOnlyList``).

    Values already frozen come back as they are; so do scalars and model objects.
    """
    t = type(value)
    if t is not dict and t is not list:
        return value
    try:
        return _freeze_nested(value)
    except RecursionError:  # Pi stores whatever an extension hands it, however deep
        return _freeze_deep(value)


def _freeze_nested(v: Any) -> Any:
    if type(v) is dict:
        return _ReadOnlyDict({k: _freeze_nested(x) if type(x) in _CONTAINERS else x for k, x in v.items()})
    return _ReadOnlyList([_freeze_nested(x) if type(x) in _CONTAINERS else x for x in v])


def _freeze_deep(value: Any) -> Any:
    """``_freeze_nested`` without recursion: post-order over an explicit stack."""
    stack: list[tuple[Any, bool]] = [(value, False)]
    frozen: dict[int, Any] = {}
    while stack:
        node, expanded = stack.pop()
        if not expanded:
            stack.append((node, True))
            children = node.values() if type(node) is dict else node
            stack.extend((c, False) for c in children if type(c) in _CONTAINERS and id(c) not in frozen)
            continue
        if id(node) in frozen:
            continue
        if type(node) is dict:
            frozen[id(node)] = _ReadOnlyDict(
                {k: frozen[id(x)] if type(x) in _CONTAINERS else x for k, x in node.items()}
            )
        else:
            frozen[id(node)] = _ReadOnlyList([frozen[id(x)] if type(x) in _CONTAINERS else x for x in node])
    return frozen[id(value)]


_CONTAINERS: Final = (dict, list)
