"""A griffe extension that lets the API reference show pisession's docstrings as Markdown.

pisession's docstrings are written for ``help()`` and Sphinx: ``::`` literal blocks, ``>>>``
examples and roles such as :class:`Entry`. mkdocstrings renders docstrings as Markdown, where
those would show as raw text, so this extension rewrites them as they are loaded:

- a role (:class:`X`, :meth:`~a.b.c`, ...) becomes the code span `X` (`c`);
- a paragraph ending in ``::`` and the block after it become a fenced ``python`` block;
- a run of ``>>>`` lines becomes a fenced ``pycon`` block.

The model classes are attrs classes, whose ``__init__`` attrs writes at import time, out of
griffe's sight: the extension gives each one the keyword-only signature attrs makes (minus the
private ``_wire_keys``), so the reference shows how to build one.

It also shows ``builtins.list`` (which ``SessionManager`` has to write because it has a
``list`` method) as plain ``list`` in signatures. Enabled in mkdocs.yml under the python handler's
``extensions``; used for the docs build only, never imported by pisession.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|data|mod|exc|obj|const):`~?([^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match.group(1)
    if match.group(0).split("`")[1].startswith("~"):
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def markdown_docstring(text: str) -> str:
    """The docstring ``text`` with its reStructuredText idioms rewritten as Markdown."""
    lines = _ROLE.sub(_role, text).split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i].strip())
                i += 1
            out += ["```pycon", *block, "```"]
            continue
        if stripped.endswith("::") and not stripped.startswith(".."):
            head = line.rstrip()[:-2].rstrip()
            if head.strip():
                out.append(head + ":")
            i += 1
            while i < len(lines) and not lines[i].strip():
                i += 1
            base = _indent(line)
            indented = i < len(lines) and _indent(lines[i]) > base
            block = []
            # An indented block runs until the text comes back to the paragraph's margin; a
            # block written at the margin (as some one-line docstrings do) ends at a blank line.
            while i < len(lines) and (
                (indented and (not lines[i].strip() or _indent(lines[i]) > base))
                or (not indented and lines[i].strip())
            ):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            margin = min((_indent(b) for b in block if b.strip()), default=0)
            language = "pycon" if block and block[0].strip().startswith(">>>") else "python"
            out += ["", "```" + language, *(b[margin:] for b in block), "```", ""]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _plain_builtins(expr: Any) -> Any:
    if isinstance(expr, griffe.ExprAttribute):
        names = expr.values
        if len(names) == 2 and isinstance(names[0], griffe.ExprName) and names[0].name == "builtins":
            return names[1]
    if dataclasses.is_dataclass(expr) and isinstance(expr, griffe.Expr):
        for field in dataclasses.fields(expr):
            value = getattr(expr, field.name)
            if isinstance(value, griffe.Expr):
                object.__setattr__(expr, field.name, _plain_builtins(value))
            elif isinstance(value, list):
                value[:] = [_plain_builtins(v) if isinstance(v, griffe.Expr) else v for v in value]
    return expr


def _attrs_init(cls: griffe.Class) -> griffe.Function | None:
    """The ``__init__`` attrs generates for the model class ``cls``, as griffe objects."""
    import attrs

    import pisession._model as model

    runtime = getattr(model, cls.name, None)
    if runtime is None or not attrs.has(runtime):
        return None
    parameters = []
    for field in attrs.fields(runtime):
        if field.name.startswith("_"):
            continue
        member = cls.all_members.get(field.name)
        annotation = member.annotation if isinstance(member, griffe.Attribute) else None
        if field.default is attrs.NOTHING:
            default = None
        elif isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            default = "..."
        elif field.default is model.UNSET:
            default = "UNSET"
        else:
            default = repr(dict(field.default)) if isinstance(field.default, dict) else repr(field.default)
        parameters.append(
            griffe.Parameter(
                field.alias or field.name,
                annotation=annotation or ("Mapping[str, Any]" if field.name == "extra" else None),
                kind=griffe.ParameterKind.keyword_only,
                default=default,
            )
        )
    parameters.sort(key=lambda parameter: parameter.name == "extra")  # the class's own fields first
    return griffe.Function("__init__", parameters=griffe.Parameters(*parameters), parent=cls)


def _record_init(cls: griffe.Class) -> griffe.Function | None:
    """The ``__init__`` a :class:`pisession._record.Record` subclass takes: its fields, in order,
    by position or by name (its own signature is ``*args, **kwargs``)."""
    import importlib

    from pisession._record import Record

    runtime = getattr(importlib.import_module(cls.module.path), cls.name, None)
    if not (isinstance(runtime, type) and issubclass(runtime, Record)) or "__init__" in vars(runtime):
        return None
    parameters = []
    for name in runtime._record_fields:
        member = cls.all_members.get(name)
        default = runtime._record_defaults.get(name, _NO_DEFAULT)
        parameters.append(
            griffe.Parameter(
                name,
                annotation=member.annotation if isinstance(member, griffe.Attribute) else None,
                kind=griffe.ParameterKind.positional_or_keyword,
                default=None if default is _NO_DEFAULT else repr(default),
            )
        )
    return griffe.Function("__init__", parameters=griffe.Parameters(*parameters), parent=cls)


_NO_DEFAULT = object()


class PisessionDocs(griffe.Extension):
    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        if cls.module.path == "pisession._model" and "__init__" not in cls.members:
            init = _attrs_init(cls)
            if init is not None:
                cls.set_member("__init__", init)
        elif "__init__" not in cls.members and cls.module.path.startswith("pisession"):
            init = _record_init(cls)
            if init is not None:
                cls.set_member("__init__", init)

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)

    def on_function_instance(self, *, func: griffe.Function, **kwargs: Any) -> None:
        if isinstance(func.returns, griffe.Expr):
            func.returns = _plain_builtins(func.returns)
        for parameter in func.parameters:
            if isinstance(parameter.annotation, griffe.Expr):
                parameter.annotation = _plain_builtins(parameter.annotation)
        _parameter_table(func)


def _parameter_table(func: griffe.Function) -> None:
    """Every public function gets a Parameters table (name, type, default), with the
    docstring's ``:param NAME:`` text where it has one, so no argument is documented only by
    its name in a signature."""
    if func.name.startswith("_") and func.name != "__init__":
        return
    names = [p.name for p in func.parameters if p.name not in ("self", "cls")]
    if not names:
        return
    text = func.docstring.value if func.docstring is not None else ""
    missing = [name for name in names if f":param {name}:" not in text]
    if not missing:
        return
    lines = [f":param {name.lstrip('*')}: " for name in missing]
    addition = "\n".join(lines)
    if func.docstring is None:
        func.docstring = griffe.Docstring(addition, parent=func)
    else:
        func.docstring.value = text.rstrip() + "\n\n" + addition
