"""Wire dicts ⇄ model objects, losslessly, through one configured ``cattrs.Converter``.

``from_wire`` reads whatever a session file held and never fails on a JSON object when no class
is asked for (or a union such as ``Entry`` is). It classifies as Pi does, by the tag alone: a tag
it does not know gives the ``Unknown*`` class of the nearest union (entry, message or content
block), an entry without a string ``id`` or ``type`` a ``MalformedEntry``; a field of the wrong
JSON type or a missing required field never changes the class. ``to_wire`` gives back the same
dict with the same key order::

    >>> line = {"type": "label", "id": "b2", "parentId": "a1", "timestamp": "2024-12-03T14:00:00.000Z",
    ...         "targetId": "a1", "label": "start", "color": "red"}
    >>> entry = from_wire(line)
    >>> entry.label, entry.extra
    ('start', {'color': 'red'})
    >>> list(to_wire(entry)) == list(line)
    True

How the per-class hooks work (generated once per class from its attrs fields and annotations):

- wire names are the camelCase of the field names (``cache_write_1h`` → ``cacheWrite1h``);
- a field whose annotation includes :data:`~pisession._model.Unset` may be missing (it is then
  ``UNSET``); any other missing field reads as its type's empty value (``""``, ``0``, ``()``,
  ``None``, ...) and is named in the private ``_absent`` so ``to_wire`` leaves it out;
- keys the class does not model go to ``extra`` in file order; the dict's key order goes to the
  private ``_wire_keys`` (and ``extra.wire_order``, which ``attrs.evolve`` carries over) so
  ``to_wire`` can restore it. Objects built in Python have no recorded
  order and come out in Pi's canonical order (the tag, then the fields as declared, then
  ``extra``); keys an ``attrs.evolve`` added go after the recorded ones;
- a value whose JSON type does not fit is kept in ``extra`` under its wire key, and the field
  reads as ``UNSET`` (optional) or empty (required, named in ``_absent``).

Values of untyped fields (``details``, ``data``, ``arguments``, tool declarations, ``extra``) are
frozen copies of the wire dict's (read-only ``dict``/``list`` subclasses, made when the object is
built, so nothing shares mutable state with the index), and ``to_wire`` emits them as they are.
Asking ``from_wire`` for one class raises when a required field is missing or does not fit.
"""

from __future__ import annotations

import functools
import linecache
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, overload

import attrs

from . import _model
from ._errors import WireFormatError
from ._model import (
    UNSET,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    ContentBlock,
    ContextEditEntry,
    ContextEditReplacement,
    Cost,
    CustomEntry,
    CustomMessage,
    CustomMessageEntry,
    Entry,
    FileEntry,
    ImageContent,
    LabelEntry,
    MalformedEntry,
    Message,
    MessageEntry,
    ModelChangeEntry,
    ModelObject,
    ModelRef,
    SessionContext,
    SessionHeader,
    SessionInfoEntry,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ThinkingLevelChangeEntry,
    ToolCall,
    ToolResultMessage,
    UnknownContent,
    UnknownEntry,
    UnknownMessage,
    Usage,
    UsageEntry,
    UserMessage,
)
from ._values import _empty_in_order

__all__ = ["converter", "from_wire", "to_wire"]

ModelT = TypeVar("ModelT")


class _NoFit:
    """Returned by decoders for a value that does not fit; never escapes this module."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOFIT"


_NOFIT: Final = _NoFit()

Decoder = Callable[[Any], Any]
"""Takes a wire value, returns the model value or ``_NOFIT``."""

_ENTRY_CLASSES: Final = (
    MessageEntry,
    ThinkingLevelChangeEntry,
    ModelChangeEntry,
    UsageEntry,
    CompactionEntry,
    ContextEditEntry,
    BranchSummaryEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    SessionInfoEntry,
)
_MESSAGE_CLASSES: Final = (
    SystemMessage,
    UserMessage,
    AssistantMessage,
    ToolResultMessage,
    BashExecutionMessage,
    CustomMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
)
_BLOCK_CLASSES: Final = (TextContent, ImageContent, ThinkingContent, ToolCall)
_UNKNOWN_CLASSES: Final = (UnknownEntry, MalformedEntry, UnknownMessage, UnknownContent)
_PLAIN_CLASSES: Final = (Cost, Usage, ContextEditReplacement, ModelRef, SessionContext)
_ALL_CLASSES: Final = (
    SessionHeader,
    *_ENTRY_CLASSES,
    *_MESSAGE_CLASSES,
    *_BLOCK_CLASSES,
    *_UNKNOWN_CLASSES,
    *_PLAIN_CLASSES,
)
_NOT_WIRE: Final = frozenset({"extra", "_wire_keys", "_absent"})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _tag_of(cls: type) -> tuple[str, str] | None:
    """The wire tag a class carries as a ClassVar: ``("type", "message")``, ``("role", "user")``.

    The ``Unknown*`` classes' ``"unknown"`` is no wire tag: their field ``wire_type`` or
    ``wire_role`` holds the tag the file had."""
    if cls in _UNKNOWN_CLASSES:
        return None
    for key in ("type", "role"):
        value = cls.__dict__.get(key)
        if isinstance(value, str):
            return key, value
    return None


# --------------------------------------------------------------------------- field analysis
# Each attrs field becomes a _Field: its wire name, whether it may be missing, and how to check
# or decode a wire value. Scalar checks are inlined into the generated hooks; nested classes,
# sequences and unions go through small decoder functions.

_SCALAR_CHECKS: Final[Mapping[Any, str]] = {
    str: "type(v) is str",
    bool: "(v is True or v is False)",
    int: "type(v) is int",
    float: "type(v) in _NUMBER",  # JSON numbers parse to int or float
    type(None): "v is None",
}
_NUMBER: Final = frozenset({int, float})
_MISSING: Final = _NoFit()  # distinct from _NOFIT: "key absent" in generated code


@attrs.frozen
class _Field:
    name: str
    wire: str
    optional: bool  # may be missing from the wire dict (then UNSET)
    check: str | None  # inline expression over ``v``; None when ``decoder`` or anything goes
    decoder: Decoder | None
    encode: bool  # the value may hold model objects or tuples
    empty: Callable[[], Any] | None = None  # the value a missing or misfit required field reads as


def _union_members(tp: Any) -> tuple[Any, ...]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return (tp,)


def _is_message(tp: Any) -> bool:
    return tp in _MESSAGE_CLASSES or tp is UnknownMessage


def _is_block(tp: Any) -> bool:
    return tp in _BLOCK_CLASSES or tp is UnknownContent


def _empty(members: tuple[Any, ...]) -> Callable[[], Any]:
    """The empty value of a required field's type: what it reads as when the wire dict lacks it
    or holds another JSON type (Pi reads such a field as it is; pisession keeps it in ``extra``)."""
    if type(None) in members:
        return lambda: None
    first = members[0]
    if first is str:
        return lambda: ""
    if first is bool:
        return lambda: False
    if first in (int, float):
        return lambda: 0
    if typing.get_origin(first) is Sequence:
        return lambda: ()
    if typing.get_origin(first) is Mapping:
        return lambda: _model._EMPTY
    if _is_message(first):
        return lambda: _STRUCT[UnknownMessage]({})
    if attrs.has(first):
        return lambda: _STRUCT[first]({})
    raise TypeError(f"no empty value for {members!r}")  # pragma: no cover


def _analyse(name: str, tp: Any, wire: str | None = None) -> _Field:
    wire = wire or _camel(name)
    if tp is Any:
        return _Field(name, wire, True, None, _freeze_any, False)
    members = _union_members(tp)
    optional = _model.Unset in members
    members = tuple(m for m in members if m != _model.Unset)
    empty = None if optional else _empty(members)
    scalars = [m for m in members if m in _SCALAR_CHECKS]
    if int in scalars and float in scalars:
        scalars.remove(int)  # one number check covers both
    check = " or ".join(_SCALAR_CHECKS[m] for m in scalars) or None
    complex_decoders: list[Decoder] = []
    items: list[Any] = []
    messages = [m for m in members if _is_message(m)]
    if len(messages) > 1:  # the Message union
        complex_decoders.append(_message_value)
    for m in members:
        origin = typing.get_origin(m)
        if m in _SCALAR_CHECKS or (len(messages) > 1 and m in messages):
            continue
        if origin is Sequence:
            items.extend(_union_members(typing.get_args(m)[0]))
        elif origin is Mapping:
            complex_decoders.append(_mapping_decoder(typing.get_args(m)[1]))
        elif attrs.has(m):
            complex_decoders.append(_class_decoder(m))
        else:  # pragma: no cover - an annotation this factory was not taught
            raise TypeError(f"no wire decoder for {name}: {m!r}")
    if items:
        complex_decoders.append(_sequence_decoder(items))
    if not complex_decoders:
        return _Field(name, wire, optional, check, None, False, empty)
    if check is not None:
        complex_decoders.insert(0, _scalar_decoder(check))
    decoder = complex_decoders[0] if len(complex_decoders) == 1 else _first_fit(tuple(complex_decoders))
    return _Field(name, wire, optional, None, decoder, True, empty)


# What a wire value may be: parsed JSON, or what to_wire gave back (frozen containers).
_DICTS: Final[frozenset[type]] = frozenset((dict, _model._ReadOnlyDict))
_LISTS: Final[frozenset[type]] = frozenset((list, _model._ReadOnlyList))


def _freeze_any(v: Any) -> Any:
    t = type(v)
    return _model.freeze_json(v) if t is dict or t is list else v


def _scalar_decoder(check: str) -> Decoder:
    test = eval(f"lambda v: {check}", {"_NUMBER": _NUMBER})
    return lambda v: v if test(v) else _NOFIT


def _first_fit(decoders: tuple[Decoder, ...]) -> Decoder:
    def decode(v: Any) -> Any:
        for dec in decoders:
            r = dec(v)
            if r is not _NOFIT:
                return r
        return _NOFIT

    return decode


def _mapping_decoder(value_tp: Any) -> Decoder:
    """A JSON object (``arguments``, ``sections``) once its values fit, read-only."""
    if value_tp is Any:
        return lambda v: _model.freeze_json(v) if type(v) in _DICTS else _NOFIT
    value_check = _scalar_decoder(" or ".join(_SCALAR_CHECKS[m] for m in _union_members(value_tp)))

    def decode(v: Any) -> Any:
        if type(v) not in _DICTS:
            return _NOFIT
        for x in v.values():
            if value_check(x) is _NOFIT:
                return _NOFIT
        return _model._ReadOnlyDict(v)

    return decode


def _class_decoder(cls: type) -> Decoder:
    def decode(v: Any) -> Any:
        return _STRUCT[cls](v) if type(v) in _DICTS else _NOFIT

    return decode


def _message_value(v: Any) -> Any:
    return _message(v) if type(v) in _DICTS else _NOFIT


def _sequence_decoder(items: list[Any]) -> Decoder:
    """A JSON array of messages, of content blocks, or of anything; decoded to a tuple."""
    if items == [Any]:
        return lambda v: tuple(map(_freeze_any, v)) if type(v) in _LISTS else _NOFIT
    if all(_is_message(m) for m in items):
        item_decoder: Decoder = _message
    elif all(_is_block(m) for m in items):
        # A block type the field does not allow (a toolCall in user content) reads as unknown.
        item_decoder = _block_union(frozenset(m.type for m in items if m in _BLOCK_CLASSES))
    else:  # pragma: no cover
        raise TypeError(f"no wire decoder for a sequence of {items!r}")

    def decode(v: Any) -> Any:
        if type(v) not in _LISTS:
            return _NOFIT
        out = []
        for x in v:
            if type(x) not in _DICTS:
                return _NOFIT
            out.append(item_decoder(x))
        return tuple(out)

    return decode


# --------------------------------------------------------------------------- generated hooks
# Like cattrs' own make_dict_*_fn, the hooks are generated source (shown in tracebacks through
# linecache). Decoding bypasses __init__ and sets the slots directly: attrs' frozen __init__ costs
# twice as much, and every decoded value is already in its final form.
#
# A class's hooks are generated the first time one of them is called (see _generate): compiling
# all 33 classes' hooks costs tens of milliseconds, more than a command such as `pisession tree`
# spends on everything else, and most programs meet only a few classes.


_STRUCT: dict[type, Decoder] = {}  # class → structure function returning the object or _NOFIT
_UNSTRUCT: dict[type, Callable[[Any], dict[str, Any]]] = {}
_FIELDS: dict[type, tuple[_Field, ...]] = {}


def _slot_setter(cls: type, name: str) -> Callable[[Any, Any], None]:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name].__set__  # type: ignore[no-any-return]
    raise AttributeError(name)  # pragma: no cover


def _compile(source: str, name: str, cls: type, namespace: dict[str, Any]) -> Any:
    filename = f"<pisession generated {name} {cls.__name__}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def _make_struct(cls: type, fields: tuple[_Field, ...]) -> Decoder:
    tag = _tag_of(cls)
    ns: dict[str, Any] = {
        "_NOFIT": _NOFIT,
        "_MISSING": _MISSING,
        "_UNSET": UNSET,
        "_NUMBER": _NUMBER,
        "_EMPTY": _model._EMPTY,
        "_extra_in_order": _model._extra_in_order,
        "_empty_in_order": _empty_in_order,
        "_fz": _freeze_any,
        "_new": object.__new__,
        "_cls": cls,
        "_known": frozenset([f.wire for f in fields] + ([tag[0]] if tag else [])),
        "_set_extra": _slot_setter(cls, "extra"),
        "_set_wire_keys": _slot_setter(cls, "_wire_keys"),
        "_set_absent": _slot_setter(cls, "_absent"),
    }
    lines = ["def structure(d):"]
    if tag:
        lines += [f"    if d.get({tag[0]!r}) != {tag[1]!r}:", "        return _NOFIT", "    n = 1"]
    else:
        lines.append("    n = 0")
    lines += ["    shadowed = ()", "    absent = ()"]
    for i, f in enumerate(fields):
        ns[f"_set_{i}"] = _slot_setter(cls, f.name)
        if f.optional:
            unfit = [f"f{i} = _UNSET"]
        else:
            ns[f"_empty_{i}"] = f.empty
            unfit = [f"f{i} = _empty_{i}()", f"absent += ({f.name!r},)"]
        lines += [f"    v = d.get({f.wire!r}, _MISSING)", "    if v is _MISSING:"]
        lines += [f"        {x}" for x in unfit]
        if f.check is None and f.decoder is None:
            lines += ["    else:", f"        f{i} = v", "        n += 1"]
            continue
        if f.decoder is not None:
            ns[f"_dec_{i}"] = f.decoder
            lines += ["    else:", f"        v = _dec_{i}(v)", "        if v is _NOFIT:"]
        else:
            lines += [f"    elif not ({f.check}):"]
        pad = " " * (12 if f.decoder is not None else 8)
        # keep the raw value where the file had it; the field reads as UNSET or empty
        lines += [f"{pad}shadowed += ({f.wire!r},)"] + [f"{pad}{x}" for x in unfit]
        if f.decoder is not None:
            lines += ["        else:", f"            f{i} = v", "            n += 1"]
        else:
            lines += ["    else:", f"        f{i} = v", "        n += 1"]
    lines += [
        "    keys = tuple(d)",
        "    o = _new(_cls)",
        "    _set_wire_keys(o, keys)",
        "    _set_absent(o, absent)",
        "    if n == len(keys):",
        "        _set_extra(o, _empty_in_order(keys))",
        "    else:",
        "        _set_extra(o, _extra_in_order({k: _fz(d[k]) for k in keys"
        " if not (k in _known and k not in shadowed)}, keys))",
    ]
    lines += [f"    _set_{i}(o, f{i})" for i in range(len(fields))]
    lines.append("    return o")
    return _compile("\n".join(lines) + "\n", "structure", cls, ns)  # type: ignore[no-any-return]


def _make_unstruct(cls: type, fields: tuple[_Field, ...]) -> Callable[[Any], dict[str, Any]]:
    tag = _tag_of(cls)
    ns: dict[str, Any] = {"_UNSET": UNSET, "_encode": _encode, "_reorder": _reorder}
    lines = ["def unstructure(o):", f"    out = {{{tag[0]!r}: {tag[1]!r}}}" if tag else "    out = {}"]
    lines.append("    absent = o._absent")
    for f in fields:
        value = "_encode(v)" if f.encode else "v"
        written = "v is not _UNSET"
        if not f.optional:
            written += f" and (not absent or {f.name!r} not in absent)"
        lines += [f"    v = o.{f.name}", f"    if {written}:", f"        out[{f.wire!r}] = {value}"]
    lines += [
        "    extra = o.extra",
        "    if extra:",
        "        for k, v in extra.items():",
        "            if k not in out:",  # a set field wins over a stale raw value
        "                out[k] = v",
        "    order = o._wire_keys",
        "    if order is None:",  # built by attrs.evolve: the order its extra was read in
        "        order = getattr(extra, 'wire_order', None)",
        "    if order is None or order == tuple(out):",
        "        return out",
        "    return _reorder(out, order)",
    ]
    return _compile("\n".join(lines) + "\n", "unstructure", cls, ns)  # type: ignore[no-any-return]


def _reorder(out: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    ordered = {k: out.pop(k) for k in order if k in out}
    ordered.update(out)  # keys the recorded order does not know (added by evolve) go last
    return ordered


# --------------------------------------------------------------------------- union hooks


def _block_union(allowed: frozenset[str]) -> Decoder:
    def decode(d: Mapping[str, Any]) -> Any:
        tag = d.get("type")
        if type(tag) is str and tag in allowed:
            return _BLOCK_TABLE[tag](d)
        return _STRUCT[UnknownContent](d)

    return decode


_ENTRY_TABLE: dict[str, Decoder] = {}
_MESSAGE_TABLE: dict[str, Decoder] = {}
_BLOCK_TABLE: dict[str, Decoder] = {}
_content_block: Final = _block_union(frozenset(c.type for c in _BLOCK_CLASSES))
_TABLE_OF: Final[Mapping[type, dict[str, Decoder]]] = {
    **dict.fromkeys(_ENTRY_CLASSES, _ENTRY_TABLE),
    **dict.fromkeys(_MESSAGE_CLASSES, _MESSAGE_TABLE),
    **dict.fromkeys(_BLOCK_CLASSES, _BLOCK_TABLE),
}


def _generate(cls: type) -> tuple[_Field, ...]:
    """Generate ``cls``'s hooks in place of its stubs (once; a race generates equal twins)."""
    fields = _FIELDS.get(cls)
    if fields is not None:
        return fields
    hints = typing.get_type_hints(cls, vars(_model))
    fields = tuple(
        _analyse(a.name, hints[a.name], a.metadata.get("wire"))
        for a in attrs.fields(cls)
        if a.name not in _NOT_WIRE
    )
    struct = _make_struct(cls, fields)
    _STRUCT[cls] = struct
    _UNSTRUCT[cls] = _make_unstruct(cls, fields)
    table = _TABLE_OF.get(cls)
    if table is not None:
        table[cls.__dict__[_tag_of(cls)[0]]] = struct  # type: ignore[index]
    _FIELDS[cls] = fields
    return fields


def _install_stubs(cls: type) -> None:
    """Stand-ins that generate ``cls``'s hooks on first call, then call the real one."""

    def structure(d: Any) -> Any:
        _generate(cls)
        return _STRUCT[cls](d)

    def unstructure(o: Any) -> dict[str, Any]:
        _generate(cls)
        return _UNSTRUCT[cls](o)

    _STRUCT[cls] = structure
    _UNSTRUCT[cls] = unstructure
    table = _TABLE_OF.get(cls)
    if table is not None:
        table[cls.__dict__[_tag_of(cls)[0]]] = structure  # type: ignore[index]


for _cls in _ALL_CLASSES:
    _install_stubs(_cls)
del _cls


# Classified as Pi classifies: by the tag alone. A field that is missing or of another JSON type
# never changes the class (it reads as empty and keeps its raw value, see _make_struct); only
# an entry without a string id or type is set apart, as MalformedEntry.


def _entry(d: Mapping[str, Any]) -> Any:
    tag = d.get("type")
    if type(tag) is str and type(d.get("id")) is str:
        struct = _ENTRY_TABLE.get(tag)
        return _STRUCT[UnknownEntry](d) if struct is None else struct(d)
    return _STRUCT[MalformedEntry](d)


def _file_entry(d: Mapping[str, Any]) -> Any:
    if d.get("type") == "session" and type(d.get("id")) is str:
        return _STRUCT[SessionHeader](d)
    return _entry(d)


def _message(d: Mapping[str, Any]) -> Any:
    tag = d.get("role")
    if type(tag) is str:
        struct = _MESSAGE_TABLE.get(tag)
        if struct is not None:
            return struct(d)
    return _STRUCT[UnknownMessage](d)


# --------------------------------------------------------------------------- encoding


def _encode(v: Any) -> Any:
    """A typed field's value to JSON: model objects by their hook, tuples to lists."""
    f = _UNSTRUCT.get(type(v))
    if f is not None:
        return f(v)
    t = type(v)
    if t is tuple or t is list:
        return [_encode(x) for x in v]
    wire = getattr(v, "to_wire", None)  # lazily typed sequences built by the index
    if wire is not None and callable(wire) and not isinstance(v, type):
        return wire()
    return v


def _walk(v: Any) -> Any:
    """Plain JSON with model objects anywhere inside; containers without any come back as is."""
    t = type(v)
    f = _UNSTRUCT.get(t)
    if f is not None:
        return f(v)
    if t is dict:
        out = None
        for k, x in v.items():
            y = _walk(x)
            if y is not x:
                if out is None:
                    out = dict(v)
                out[k] = y
        return v if out is None else out
    if t is list:
        items = [_walk(x) for x in v]
        return v if all(a is b for a, b in zip(items, v, strict=True)) else items
    if t is tuple:
        return [_walk(x) for x in v]
    # Results built outside the converter (tree nodes, projections, lazy message lists).
    wire = getattr(v, "to_wire", None)
    if wire is not None and callable(wire) and not isinstance(v, type):
        return wire()
    return v


# --------------------------------------------------------------------------- the converter


def _explain(cls: type, d: Mapping[str, Any]) -> str:
    tag = _tag_of(cls)
    if tag is not None and d.get(tag[0]) != tag[1]:
        return f"{tag[0]} is {d.get(tag[0])!r}, not {tag[1]!r}"
    for f in _generate(cls):
        if f.wire not in d:
            if not f.optional:
                return f"required key {f.wire!r} is missing"
            continue
        v = d[f.wire]
        if f.decoder is not None:
            fits = f.decoder(v) is not _NOFIT
        else:
            fits = f.check is None or _scalar_decoder(f.check)(v) is not _NOFIT
        if not fits:
            return f"{f.wire!r} does not fit: {v!r:.80}"
    return "it does not fit"  # pragma: no cover


def _strict_hook(cls: type) -> Callable[[Any, Any], Any]:
    _generate(cls)
    struct = _STRUCT[cls]

    def hook(d: Any, _: Any) -> Any:
        if not isinstance(d, Mapping):
            raise WireFormatError(f"cannot read {cls.__name__}: expected a JSON object, got {d!r:.80}")
        r = struct(d)
        if r is _NOFIT or r._absent:
            raise WireFormatError(f"cannot read {cls.__name__} from {d!r:.200}: {_explain(cls, d)}")
        return r

    return hook


def _union_hook(read: Decoder, name: str) -> Callable[[Any, Any], Any]:
    def hook(d: Any, _: Any) -> Any:
        if not isinstance(d, Mapping):
            raise WireFormatError(f"cannot read {name}: expected a JSON object, got {d!r:.80}")
        return read(d)

    return hook


def _is_type(union: Any) -> Callable[[Any], bool]:
    return lambda t: bool(t == union)


_UNIONS: Final[tuple[tuple[Any, Decoder, str], ...]] = (
    (FileEntry, _file_entry, "FileEntry"),
    (Entry, _entry, "Entry"),
    (Message, _message, "Message"),
    (ContentBlock, _content_block, "ContentBlock"),
)
_CLASS_SET: Final = frozenset(_ALL_CLASSES)


@functools.cache
def _model_hook(cls: Any) -> Callable[[Any, Any], Any] | None:
    """The converter's structure hook for a model class or union, None for any other type:
    ``from_wire`` calls it directly, so that reading the model never needs cattrs."""
    if cls in _CLASS_SET:
        return _strict_hook(cls)
    for union, read, name in _UNIONS:
        if cls == union:
            return _union_hook(read, name)
    return None


@functools.cache
def _converter() -> cattrs.Converter:
    # Built on first use, with cattrs imported only then: reading and writing sessions goes
    # through the generated hooks directly and never needs it.
    import cattrs

    conv = cattrs.Converter()
    for cls in _ALL_CLASSES:
        conv.register_structure_hook(cls, _strict_hook(cls))
        conv.register_unstructure_hook(cls, _UNSTRUCT[cls])
    for union, read, name in _UNIONS:
        conv.register_structure_hook_func(_is_type(union), _union_hook(read, name))
    for container in (dict, list, tuple):
        conv.register_unstructure_hook(container, _walk)
    return conv


if TYPE_CHECKING:
    import cattrs

    converter: cattrs.Converter
    """The one converter: ``converter.structure(d, Usage)``, ``converter.unstructure(entry)``."""


def __getattr__(name: str) -> Any:
    # PEP 562: ``converter`` is built the first time it is asked for.
    if name == "converter":
        return _converter()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------- public functions


def entry_from_wire(data: Mapping[str, Any]) -> Entry:
    """The entry model of an index's wire dict (any JSON object: a line without a string ``id``
    or ``type``, even one with only a ``role``, is a :class:`MalformedEntry`)."""
    return _entry(data)  # type: ignore[no-any-return]


class _SupportsToWire(Protocol):
    """Results that know their wire shape: ``SessionProjection``, ``TreeNode``, ``SessionInfo``."""

    def to_wire(self) -> Any: ...


@overload
def to_wire(obj: ModelObject | Mapping[str, Any]) -> dict[str, Any]: ...
@overload
def to_wire(obj: Sequence[ModelObject | Mapping[str, Any]]) -> list[Any]: ...
@overload
def to_wire(obj: _SupportsToWire) -> Any: ...
def to_wire(obj: object) -> Any:
    """Pi's JSON shape of a model object, or of a list/dict that may hold model objects.

    Plain JSON comes back as it is (the same object when nothing in it needed converting);
    tuples become lists::

        >>> to_wire(ModelRef(provider="anthropic", model_id="claude-sonnet-4-5"))
        {'provider': 'anthropic', 'modelId': 'claude-sonnet-4-5'}
        >>> to_wire([UserMessage(content="hi", timestamp=1), {"role": "custom"}])
        [{'role': 'user', 'content': 'hi', 'timestamp': 1}, {'role': 'custom'}]
    """
    return _walk(obj)


@overload
def from_wire(data: Mapping[str, Any], cls: None = None) -> FileEntry | Message: ...
@overload
def from_wire(data: Mapping[str, Any], cls: type[ModelT]) -> ModelT: ...
@overload
def from_wire(data: Mapping[str, Any], cls: Any) -> Any: ...
def from_wire(data: Mapping[str, Any], cls: Any = None) -> Any:
    """The model object of a wire dict.

    Without ``cls``: a header when ``type`` is ``"session"``, an entry when there is a ``type``
    key, a message when there is only a ``role``; anything else reads as an :class:`UnknownEntry`.
    This never raises for a mapping. With ``cls``, that class or union (``Usage``, ``Message``,
    ``ContentBlock``, ...): a union never raises for a mapping, a class raises
    :class:`WireFormatError` when the dict does not fit it::

        >>> from_wire({"role": "user", "content": "hi", "timestamp": 1})
        UserMessage(content='hi', timestamp=1)
        >>> from_wire({"type": "text", "text": "hi"}, ContentBlock)
        TextContent(text='hi')
    """
    if cls is None:
        if type(data) is not dict and not isinstance(data, Mapping):
            raise WireFormatError(f"expected a JSON object, got {data!r:.80}")
        if "type" in data or "role" not in data:
            return _file_entry(data)
        return _message(data)
    try:
        hook = _model_hook(cls)
    except TypeError:  # an unhashable type: not one of ours
        hook = None
    if hook is not None:
        return hook(data, cls)
    return _converter().structure(data, cls)
