"""Small read-only value classes for the modules that ``pisession ls`` imports, without attrs.

attrs builds every class's methods by compiling code, and importing it costs more than itself
(it brings ``inspect``, ``ast`` and ``dis``): about 20 ms of a warm ``ls --all --json`` that
takes 0.2 s (docs/performance.md). The listing's rows, the catalog's report and Pi's settings
are plain values, so they are :class:`Record` subclasses instead: the fields are the class's
annotations (with defaults, as in a dataclass), and the class gets ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__match_args__`` and ``__replace__`` (``copy.replace`` on Python
3.13, :func:`replace` here), pickles and copies, and read-only instances. Type checkers see a
frozen dataclass (PEP 681's ``dataclass_transform``). The session model stays attrs: cattrs
structures it.
"""

from __future__ import annotations

# typing for type checkers only, as in pisession.cli.output: ls does not import it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar, TypeVar

    from typing_extensions import dataclass_transform

    _R = TypeVar("_R", bound="Record")
else:

    def dataclass_transform(**_options: object) -> object:
        return lambda cls: cls


__all__ = ["Record", "ReadOnlyError", "replace"]

_NO_DEFAULT = object()


class ReadOnlyError(AttributeError):
    """A field of a read-only value was assigned or deleted (an ``AttributeError``, as attrs'
    ``FrozenInstanceError`` is)."""


@dataclass_transform(eq_default=True, frozen_default=True)
class Record:
    """A read-only value: subclass it and annotate the fields (see the module's docstring)."""

    __slots__ = ()
    _record_fields: ClassVar[tuple[str, ...]] = ()
    _record_defaults: ClassVar[dict[str, object]] = {}
    _record_names: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **options: Any) -> None:
        super().__init_subclass__(**options)
        fields = list(cls._record_fields)
        defaults = dict(cls._record_defaults)
        # not inspect.get_annotations: importing inspect is what this module avoids (the
        # modules that define records import annotations from __future__: their annotations are
        # strings, kept in the class's own namespace on every Python)
        own = cls.__dict__.get("__annotations__")  # noqa: RUF063
        for name, annotation in (own if own is not None else getattr(cls, "__annotations__", {})).items():
            if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
                continue
            if name not in fields:
                fields.append(name)
            if name in cls.__dict__:
                defaults[name] = cls.__dict__[name]
            else:
                defaults.pop(name, None)  # declared again without a default: it has none
        with_default = [name in defaults for name in fields]
        if True in with_default and False in with_default[with_default.index(True) :]:
            late = fields[with_default.index(False, with_default.index(True))]
            raise TypeError(f"{cls.__name__}: field {late!r} without a default follows a default")
        cls._record_fields = tuple(fields)
        cls._record_names = frozenset(fields)
        cls._record_defaults = defaults
        setattr(cls, "__match_args__", tuple(fields))  # noqa: B010 - not a name type checkers allow assigned

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._record_fields
        # every field given, all by position or all by name: the common calls, made cheap
        # (the catalog makes three records per session listed)
        if not kwargs and len(args) == len(fields):
            self.__dict__.update(zip(fields, args, strict=True))
            return
        if not args and len(kwargs) == len(fields) and kwargs.keys() <= self._record_names:
            self.__dict__.update(kwargs)
            return
        if len(args) > len(fields):
            raise TypeError(
                f"{type(self).__name__}() takes {len(fields)} positional arguments but {len(args)} were given"
            )
        values = dict(zip(fields, args, strict=False))  # fewer args: defaults below
        for name, value in kwargs.items():
            if name in values:
                raise TypeError(f"{type(self).__name__}() got multiple values for argument {name!r}")
            if name not in fields:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {name!r}")
            values[name] = value
        if len(values) < len(fields) or kwargs:
            ordered = {}
            for name in fields:
                value = values.get(name, self._record_defaults.get(name, _NO_DEFAULT))
                if value is _NO_DEFAULT:
                    raise TypeError(f"{type(self).__name__}() missing required argument {name!r}")
                ordered[name] = value
            values = ordered
        self.__dict__.update(values)

    def _record_values(self) -> tuple[Any, ...]:
        state = self.__dict__
        return tuple([state[name] for name in self._record_fields])

    def __repr__(self) -> str:
        state = self.__dict__
        fields = ", ".join(f"{name}={state[name]!r}" for name in self._record_fields)
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return self._record_values() == other._record_values()

    def __hash__(self) -> int:
        return hash((type(self).__qualname__, *self._record_values()))

    def __setattr__(self, name: str, value: object) -> None:
        raise ReadOnlyError(f"{type(self).__name__} is read-only: make a changed copy with replace()")

    def __delattr__(self, name: str) -> None:
        raise ReadOnlyError(f"{type(self).__name__} is read-only")

    def __replace__(self: _R, **changes: Any) -> _R:
        state = self.__dict__
        copy = object.__new__(type(self))
        copy.__dict__.update(state)
        for name, value in changes.items():
            if name not in self._record_fields:
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
            copy.__dict__[name] = value
        return copy


def replace(record: _R, **changes: Any) -> _R:
    """A copy of ``record`` with ``changes`` (``copy.replace`` before Python 3.13)."""
    return record.__replace__(**changes)
