"""Pi's merge of its two settings files, with JavaScript's object semantics (SPEC settings).

Pi merges ``AGENT_DIR/settings.json`` and the project's ``.pi/settings.json`` with
``deepMergeObjects``: ``result = {...base}``, then ``result[key] = ...`` for each key of the
project file. In JavaScript ``result["__proto__"] = value`` is not a property: it sets the
prototype of ``result``, so ``{"__proto__": {"sessionDir": "/elsewhere"}}`` in a project file makes
every lookup of a setting that neither file sets fall through to ``/elsewhere``. Reading
``base["__proto__"]`` of an object parsed from JSON gives ``Object.prototype`` (an object, merged
like any other), and an own ``"__proto__"`` property (``JSON.parse`` makes one, and ``{...base}``
copies it) is a plain property. Plain dicts here are what ``JSON.parse`` gave (their prototype
is ``Object.prototype``); :class:`JsObject` is an object the merge made, with its prototype.
Lookups follow the prototype chain as JavaScript's property reads do, and say which file each
value came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from ._js import MISSING

__all__ = ["JsObject", "merge_settings", "js_get", "is_object", "to_python"]

Scope = Literal["global", "project"]


class _Special:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


OBJECT_PROTOTYPE: object = _Special("Object.prototype")
"""``Object.prototype``: an object (so Pi merges it), with no enumerable property of its own."""
FUNCTION: object = _Special("function")
"""A method of a built-in prototype (``constructor``, ``toString``, ...): not an object to Pi's
merge (``typeof`` is ``"function"``), and never a valid setting."""

# Object.prototype's own properties other than the __proto__ accessor: all functions.
_OBJECT_METHODS = frozenset(
    (
        "constructor",
        "__defineGetter__",
        "__defineSetter__",
        "hasOwnProperty",
        "__lookupGetter__",
        "__lookupSetter__",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toString",
        "valueOf",
        "toLocaleString",
    )
)


class JsObject:
    """An object made by the merge: its own properties (with the file each came from) and its
    prototype (``OBJECT_PROTOTYPE``, a parsed dict, another JsObject, a list, or None for
    ``null``).

    A merged object is made one level at a time, when first read: Pi's merge recurses as deep
    as both files nest, which no Python stack follows for a file nested thousands of levels
    (``loads_deep`` reads one), and a lookup reads a handful of levels."""

    __slots__ = ("_own", "_scopes", "_proto", "_proto_scope", "_pending")

    def __init__(self, pending: tuple[object, Scope, Mapping[str, object], Scope] | None = None) -> None:
        self._own: dict[str, object] = {}
        self._scopes: dict[str, Scope] = {}
        self._proto: object = OBJECT_PROTOTYPE
        self._proto_scope: Scope | None = None
        self._pending = pending

    def _made(self) -> JsObject:
        pending = self._pending
        if pending is not None:
            self._pending = None
            _merge_level(self, *pending)
        return self

    @property
    def own(self) -> dict[str, object]:
        return self._made()._own

    @property
    def scopes(self) -> dict[str, Scope]:
        return self._made()._scopes

    @property
    def proto(self) -> object:
        return self._made()._proto

    @property
    def proto_scope(self) -> Scope | None:
        return self._made()._proto_scope

    def __repr__(self) -> str:
        return f"JsObject({self.own!r}, proto={self.proto!r})"


def is_object(value: object) -> bool:
    """Pi's ``isMergeableObject``: an object that is neither null nor an array."""
    return isinstance(value, (dict, JsObject)) or value is OBJECT_PROTOTYPE


def _is_index(key: str) -> bool:
    canonical = key.isdigit() and key.isascii() and (key == "0" or not key.startswith("0"))
    return canonical and int(key) < 2**32 - 1


def js_get(value: object, key: str, scope: Scope | None = None) -> tuple[object, Scope | None]:
    """``value[key]`` as JavaScript reads it (own property, else up the prototype chain), and
    the file the found value came from; ``(MISSING, None)`` for ``undefined``. ``scope``: the
    file ``value`` itself came from (a parsed dict's properties all come from its file)."""
    receiver = value
    node = value
    while True:
        if node is None or node is MISSING:
            return MISSING, None
        if node is OBJECT_PROTOTYPE:
            if key == "__proto__":  # the accessor: the receiver's prototype
                return _prototype_of(receiver), None
            return (FUNCTION if key in _OBJECT_METHODS else MISSING), None
        if isinstance(node, JsObject):
            if key in node.own:
                return node.own[key], node.scopes[key]
            scope = node.proto_scope
            node = node.proto
            continue
        if isinstance(node, dict):
            if key in node:
                return node[key], scope
        elif isinstance(node, (list, str)):
            if key == "length":
                return len(node), scope
            if _is_index(key) and int(key) < len(node):
                return node[int(key)], scope
        elif not isinstance(node, (bool, int, float)):
            return MISSING, None
        node = OBJECT_PROTOTYPE


def _prototype_of(value: object) -> object:
    if isinstance(value, JsObject):
        return value.proto
    return OBJECT_PROTOTYPE if isinstance(value, dict) else MISSING


def _set(result: JsObject, key: str, value: object, scope: Scope) -> None:
    """``result[key] = value`` (``result`` made by a spread: its prototype is still
    ``Object.prototype``, unless this very loop set it, which only ``__proto__`` does)."""
    if key == "__proto__" and key not in result._own:
        # Object.prototype's setter: an object or null becomes the prototype; anything else
        # is dropped without a word.
        if value is None or isinstance(value, (dict, list, JsObject)):
            result._proto, result._proto_scope = value, scope
        return
    result._own[key] = value
    result._scopes[key] = scope


def _merge(base: object, base_scope: Scope, overrides: Mapping[str, object], scope: Scope) -> JsObject:
    """Pi's ``deepMergeObjects(base, overrides)`` (``overrides`` a parsed dict), made when read."""
    return JsObject((base, base_scope, overrides, scope))


def _merge_level(
    result: JsObject, base: object, base_scope: Scope, overrides: Mapping[str, object], scope: Scope
) -> None:
    """One level of ``deepMergeObjects``: ``{...base}``, then ``result[key] = ...`` for each key
    of ``overrides``, an object merged into an object left to be made when read."""
    if isinstance(base, dict):  # {...base}: every own property, an own "__proto__" as a plain one
        for key, value in base.items():
            result._own[key] = value
            result._scopes[key] = base_scope
    for key, value in overrides.items():
        base_value, base_value_scope = js_get(base, key, base_scope)
        if is_object(base_value) and is_object(value):
            assert isinstance(value, dict)
            merged: object = _merge(base_value, base_value_scope or base_scope, value, scope)
        else:
            merged = value
        _set(result, key, merged, scope)


def _is_tool_modifier(entry: object) -> bool:
    return isinstance(entry, str) and entry.startswith(("+", "-"))


def merge_settings(global_values: Mapping[str, object], project_values: Mapping[str, object]) -> JsObject:
    """Pi's ``deepMergeSettings(global, project)``: the merge, then ``defaultTools`` merged as
    Pi merges it. A ``defaultTools`` key in either file makes Pi copy the merged object
    (``{...merged, defaultTools}``), which keeps its own properties only: a prototype the
    project's ``__proto__`` set is gone again."""
    merged = _merge(dict(global_values), "global", project_values, "project")
    base_tools = global_values.get("defaultTools", MISSING)
    project_tools = project_values.get("defaultTools", MISSING)
    if base_tools is MISSING and project_tools is MISSING:
        return merged
    tools: object
    tools_scope: Scope = "project"
    if project_tools is MISSING:
        tools, tools_scope = base_tools, "global"
    elif (
        isinstance(base_tools, list)
        and isinstance(project_tools, list)
        and all(_is_tool_modifier(entry) for entry in project_tools)
    ):
        tools = [*base_tools, *project_tools]
    else:
        tools = project_tools
    copied = JsObject()
    copied.own.update(merged.own)
    copied.scopes.update(merged.scopes)
    copied.own["defaultTools"] = tools
    copied.scopes["defaultTools"] = tools_scope
    return copied


def to_python(value: object) -> object:
    """A merged value as plain JSON-like Python: an object as the dict of what a property read
    finds (inherited properties, then its own over them), ``Object.prototype`` as ``{}``, a
    function as MISSING."""
    if value is FUNCTION:
        return MISSING
    if value is OBJECT_PROTOTYPE:
        return {}
    if isinstance(value, JsObject):
        chain: list[JsObject | dict[str, object]] = []
        node: object = value
        seen: set[int] = set()
        while isinstance(node, (JsObject, dict)) and id(node) not in seen:
            seen.add(id(node))
            chain.append(node)
            node = node.proto if isinstance(node, JsObject) else None
        out: dict[str, object] = {}
        for link in reversed(chain):
            own = link.own if isinstance(link, JsObject) else link
            for key, item in own.items():
                out[key] = to_python(item)
        return out
    if isinstance(value, dict):
        return {key: to_python(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_python(item) for item in value]
    return value
