"""One JSON codec for the report model: encode, decode and the JSON schema, all read off the dataclasses.

Every class of the report (findings, fixes, coverage, sections, causes, the verdict, the guard's limits and
violations) is a frozen dataclass; its JSON form is the walk of its fields: enums by value, tuples as lists,
nested dataclasses as objects, ``dict[str, X]`` as objects, paths as strings. Reading a JSON form back reads
the type hints (``typing.get_type_hints``, once per class) and checks every value against them, so a report
or a guard sidecar from an untrusted hand fails with one :class:`CodecError` line naming the key, never a
traceback deep in a renderer.

Where a class's JSON is not the plain walk, it says so once, next to the field (``field(metadata=wire(...))``:
a renamed key, a value left out when empty, a nested object written flat into its owner, pairs written as
objects, a converter) or on the class (``_codec = Shape(...)``: the key order, values computed from the
object, a tag naming the subclass, a compact array form). Nothing else writes or reads a report's JSON.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, TypeVar, Union

T = TypeVar("T")
_META = "hf_vocab_audit.codec"  # the field metadata key wire() fills
_MESSAGE_CAP = 200  # a hostile value never floods the one-line error


class CodecError(ValueError):
    """A JSON form that does not describe the class it is read as: one line naming the key and the problem."""


# ---- what a class and its fields declare -----------------------------------------------------------------

Omit = Callable[[Any, Any], bool]  # (value, owner) -> leave the key out


def if_none(value: Any, owner: Any) -> bool:
    """Leave the key out when the value is None."""
    return value is None


def if_empty(value: Any, owner: Any) -> bool:
    """Leave the key out when the value is falsy (0, False, empty, None)."""
    return not value


def unless(name: str) -> Omit:
    """Leave the key out when the owner's field ``name`` is None (a value that only means something with it)."""
    def omit(value: Any, owner: Any) -> bool:
        return getattr(owner, name) is None
    return omit


@dataclass(frozen=True)
class Wire:
    """How one field is written and read (see :func:`wire`)."""

    key: str | None = None
    omit: Omit | None = None
    none_as: Mapping[str, Any] | None = None
    flatten: bool = False
    rest: bool = False
    record: tuple[str, ...] | None = None
    get: str | None = None
    read_only: bool = False
    encode: Callable[[Any], Any] | None = None
    decode: Callable[[Any, str], Any] | None = None
    schema: Mapping[str, Any] | None = None


def wire(*, key: str | None = None, omit: Omit | None = None, none_as: Mapping[str, Any] | None = None,
         flatten: bool = False, rest: bool = False, record: tuple[str, ...] | None = None, get: str | None = None,
         read_only: bool = False, encode: Callable[[Any], Any] | None = None,
         decode: Callable[[Any, str], Any] | None = None, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Field metadata for a JSON form that is not the plain walk.

    ``key``: the JSON key (default: the field name). ``omit``: when to leave the key out (:func:`if_none`,
    :func:`if_empty`, :func:`unless`). ``none_as``: the value written for None (read back as None, so is an
    empty value). ``flatten``: a nested dataclass whose keys are written into the owner's object (read back
    when any of them is there). ``rest``: a ``dict`` of the keys no field claims (written after the fields,
    read from whatever is left). ``record``: tuples written as objects with these keys. ``get``: the
    attribute (a property or method) whose value is written instead of the field's. ``read_only``: read
    from the key, never written (the owner writes it). ``encode``/``decode``/``schema``: a converter for a
    value whose form is none of these (``decode`` gets the JSON value and its path, and raises
    :class:`CodecError`).
    """
    return {_META: Wire(key, omit, none_as, flatten, rest, record, get, read_only, encode, decode, schema)}


@dataclass(frozen=True)
class Shape:
    """How a class is written, declared once as ``_codec = Shape(...)`` in its body.

    ``order``: field names and computed keys in the JSON's order (default: the fields, then the computed).
    ``computed``: JSON key -> attribute (a property or a method taking no argument) written from the object
    and ignored when read. ``tag``: a ``ClassVar`` written first that names the subclass, read to pick it
    (``noun`` says what it names in an error). ``positional``: written as an array of the field values.
    ``omit_none``: every None field is left out.
    """

    order: tuple[str, ...] = ()
    computed: Mapping[str, str] = field(default_factory=dict)
    tag: str | None = None
    noun: str = ""
    positional: bool = False
    omit_none: bool = False


_PLAIN = Shape()
_NO_WIRE = Wire()


class JsonForm:
    """``to_dict`` / ``from_dict`` for a model class: the codec's, never a hand-written pair."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return encode_object(self)

    @classmethod
    def from_dict(cls: type[T], data: Any) -> T:
        return decode(cls, data)


# ---- one class, resolved once ------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Entry:
    key: str
    name: str  # the field, or the computed attribute
    hint: Any  # the type written (and, for a field, read)
    wire: Wire
    is_field: bool
    has_default: bool = False


@dataclass(frozen=True)
class _Plan:
    shape: Shape
    entries: tuple[_Entry, ...]  # in the JSON's order
    fields: tuple[_Entry, ...]  # the fields, in the class's order (the positional form, decoding)
    keys: frozenset[str]  # every key this class writes or reads (flattened ones included)


def _shape(cls: type) -> Shape:
    shape = getattr(cls, "_codec", _PLAIN)
    return shape if isinstance(shape, Shape) else _PLAIN


def _returns(cls: type, name: str) -> Any:
    attr = getattr(cls, name)
    fn = attr.fget if isinstance(attr, property) else attr
    return typing.get_type_hints(fn).get("return", Any)


@functools.cache
def _plan(cls: type) -> _Plan:
    shape = _shape(cls)
    hints = typing.get_type_hints(cls)
    fields: list[_Entry] = []
    for f in dataclasses.fields(cls):
        w = f.metadata.get(_META, _NO_WIRE)
        hint = _returns(cls, w.get) if w.get else hints[f.name]
        if shape.omit_none and w.omit is None and _admits_none(hint):
            w = dataclasses.replace(w, omit=if_none)
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        fields.append(_Entry(w.key or f.name, f.name, hint, w, True, has_default))
    computed = [_Entry(key, attr, _returns(cls, attr), _NO_WIRE, False) for key, attr in shape.computed.items()]
    entries = fields + computed
    if shape.order:
        by_name = {e.name if e.is_field else e.key: e for e in entries}
        if sorted(shape.order) != sorted(by_name):
            raise TypeError(f"{cls.__name__}._codec.order must list each field and computed key once")
        entries = [by_name[n] for n in shape.order]
    keys: set[str] = set()
    for e in entries:
        if e.wire.flatten:
            keys |= _plan(_strip_none(e.hint)).keys
        elif not e.wire.rest:
            keys.add(e.key)
    return _Plan(shape, tuple(entries), tuple(fields), frozenset(keys))


def known_keys(cls: type) -> frozenset[str]:
    """The keys ``cls``'s JSON form writes or reads; for a class with a ``rest`` field, anything else is rest."""
    return _plan(cls).keys


# ---- encode ------------------------------------------------------------------------------------------------

def encode(value: Any) -> Any:
    """``value`` as JSON data: dataclasses by their plan, enums by value, tuples and lists as lists, paths as
    strings; anything else as it is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encode_dataclass(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, PurePath):
        return str(value)
    return value


def encode_object(obj: Any) -> dict[str, Any]:
    """``obj``'s JSON object (a dataclass that is not positional)."""
    out = _encode_dataclass(obj)
    if not isinstance(out, dict):
        raise TypeError(f"{type(obj).__name__} is written as an array, not an object")
    return out


def _encode_dataclass(obj: Any) -> Any:
    cls: type = type(obj)
    plan = _plan(cls)
    if plan.shape.positional:
        return [encode(getattr(obj, e.name)) for e in plan.fields]
    out: dict[str, Any] = {}
    if plan.shape.tag:
        out[plan.shape.tag] = getattr(cls, plan.shape.tag)
    for e in plan.entries:
        w = e.wire
        if w.read_only:
            continue
        value = getattr(obj, w.get or e.name)
        if callable(value) and (w.get or not e.is_field):
            value = value()
        if w.omit is not None and w.omit(value, obj):
            continue
        if value is None and w.none_as is not None:
            out[e.key] = dict(w.none_as)
        elif w.flatten:
            if value is not None:
                out.update(encode_object(value))
        elif w.rest:
            out.update(value)  # a newer version's sections, as they were read
        elif w.encode is not None:
            out[e.key] = w.encode(value)
        elif w.record is not None:
            out[e.key] = [dict(zip(w.record, encode(item))) for item in value]
        else:
            out[e.key] = _encode_as(e.hint, value)
    return out


def _encode_as(hint: Any, value: Any) -> Any:
    """A value typed ``Any`` (facts, details, a data value) is written as it is, ``dict[str, Any]`` as a copy:
    the JSON encoder reads them, and the object read back holds what the report held."""
    if hint is Any:
        return value
    if hint is dict or (typing.get_origin(hint) is dict and typing.get_args(hint)[1] is Any):
        return dict(value)
    return encode(value)


# ---- decode ------------------------------------------------------------------------------------------------

def decode(cls: type[T], data: Any, where: str = "") -> T:
    """The ``cls`` that ``data`` (parsed JSON) describes, every value checked against the type hints;
    :class:`CodecError` (one line: ``where`` and the key path) when it does not describe one."""
    return typing.cast(T, _decode(cls, data, where))


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _fail(message: str) -> CodecError:
    return CodecError(message.replace("\n", " ")[:_MESSAGE_CAP])


def _wrong(where: str, value: Any) -> CodecError:
    return _fail(f"{where or 'the value'} has the wrong type: {value!r}")


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _strip_none(tp: Any) -> Any:
    if _is_union(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else Union[tuple(args)]  # noqa: UP007 - a runtime union of a tuple
    return tp


def _admits_none(tp: Any) -> bool:
    return tp is Any or tp is type(None) or (_is_union(tp) and type(None) in typing.get_args(tp))


def _decode(tp: Any, value: Any, where: str) -> Any:
    if tp is Any:
        return value
    if _is_union(tp):
        return _decode_union(tp, value, where)
    if tp is type(None):
        if value is not None:
            raise _wrong(where, value)
        return None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, value, where)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            choices = ", ".join(str(m.value) for m in tp)
            raise _fail(f"{where or 'the value'} is {value!r}, not one of {choices}") from None
    origin = typing.get_origin(tp)
    if origin is tuple:
        return _decode_tuple(tp, value, where)
    if origin is dict:
        if not isinstance(value, dict):
            raise _wrong(where, value)
        key_type, value_type = typing.get_args(tp)
        return {_decode(key_type, k, where): _decode(value_type, v, f"{where}[{k!r}]") for k, v in value.items()}
    if tp is dict:
        if not isinstance(value, dict):
            raise _wrong(where, value)
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _wrong(where, value)
        return value
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _wrong(where, value)
        return value
    if tp is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _wrong(where, value)
        return value  # an int stays an int: it writes back as it was read
    if tp is str:
        if not isinstance(value, str):
            raise _wrong(where, value)
        return value
    if isinstance(tp, type) and issubclass(tp, PurePath):
        if not isinstance(value, str):
            raise _wrong(where, value)
        return tp(value)
    raise TypeError(f"the codec cannot read {tp!r} ({where})")


def _decode_union(tp: Any, value: Any, where: str) -> Any:
    if value is None and _admits_none(tp):
        return None
    arms = [a for a in typing.get_args(tp) if a is not type(None)]
    if len(arms) == 1:  # X | None: X's own error names the key that is wrong
        return _decode(arms[0], value, where)
    for arm in arms:
        try:
            return _decode(arm, value, where)
        except CodecError:
            continue
    raise _wrong(where, value)


def _decode_tuple(tp: Any, value: Any, where: str) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise _wrong(where, value)
    args = typing.get_args(tp)
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_decode(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
    if len(value) != len(args):
        raise _fail(f"{where or 'the value'} has {len(value)} item(s), not {len(args)}")
    return tuple(_decode(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))


def _variants(cls: type) -> dict[str, type]:
    """The subclasses of a tagged class by their tag value (the class itself when it has one)."""
    tag = _shape(cls).tag or ""
    out: dict[str, type] = {}
    todo = [cls]
    while todo:
        sub = todo.pop(0)
        value = getattr(sub, tag, "")
        if value:
            out.setdefault(value, sub)
        todo.extend(sub.__subclasses__())
    return out


def _decode_dataclass(cls: type, data: Any, where: str) -> Any:
    plan = _plan(cls)
    shape = plan.shape
    if shape.positional:
        if not isinstance(data, list) or len(data) != len(plan.fields):
            raise _wrong(where, data)
        return cls(*(_decode(e.hint, v, f"{where}[{i}]") for i, (e, v) in enumerate(zip(plan.fields, data))))
    if not isinstance(data, dict):
        raise _wrong(where, data)
    if shape.tag:
        value = data.get(shape.tag)
        if value != getattr(cls, shape.tag, None):
            variants = _variants(cls)
            sub = variants.get(value) if isinstance(value, str) else None
            if sub is None:
                noun = f"{shape.noun} {shape.tag}" if shape.noun else shape.tag
                at = f"{where}: " if where else ""
                raise _fail(f"{at}unknown {noun} {value!r} (known: {', '.join(variants)})")
            return _decode_dataclass(sub, data, where)
    values: dict[str, Any] = {}
    missing: list[str] = []
    for e in plan.fields:
        w = e.wire
        if w.flatten:
            inner = _strip_none(e.hint)
            if any(k in data for k in _plan(inner).keys):
                values[e.name] = _decode_dataclass(inner, data, where)
            elif not e.has_default and not _admits_none(e.hint):
                missing.append(e.key)
            continue
        if w.rest:
            values[e.name] = {k: v for k, v in data.items() if k not in plan.keys}
            continue
        if e.key not in data:
            if not e.has_default:
                missing.append(e.key)
            continue
        value, path = data[e.key], _at(where, e.key)
        if w.none_as is not None and (value is None or value == dict(w.none_as)):
            values[e.name] = None
        elif w.decode is not None:
            values[e.name] = w.decode(value, path)
        elif w.record is not None:
            values[e.name] = _decode_records(e.hint, w.record, value, path)
        else:
            values[e.name] = _decode(e.hint, value, path)
    if missing:
        raise _fail(f"{where or cls.__name__} lacks {', '.join(missing)}")
    return cls(**values)


def _decode_records(tp: Any, keys: tuple[str, ...], value: Any, where: str) -> Any:
    """Tuples written as objects (``record``): each object's keys, in order, back into the tuple type."""
    if not isinstance(value, list):
        raise _wrong(where, value)
    rows = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or any(k not in item for k in keys):
            raise _fail(f"{where}[{i}] must be an object with {', '.join(keys)}")
        rows.append([item[k] for k in keys])
    return _decode(_strip_none(tp), rows, where)


# ---- the JSON schema ---------------------------------------------------------------------------------------

def json_schema(cls: type, title: str = "") -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of what ``encode`` writes for ``cls``: each dataclass a ``$defs``
    entry whose object admits no other key, the root class inline."""
    defs: dict[str, Any] = {}
    root = _object_schema(cls, defs)
    head: dict[str, Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    if title:
        head["title"] = title
    return {**head, **root, "$defs": dict(sorted(defs.items()))}


_SIMPLE = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if tp is Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    if _is_union(tp):
        arms = [_schema(a, defs) for a in typing.get_args(tp)]
        if all(set(a) == {"type"} and isinstance(a["type"], str) for a in arms):
            return {"type": [a["type"] for a in arms]}
        return {"anyOf": arms}
    if tp in _SIMPLE:
        return {"type": _SIMPLE[tp]}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if isinstance(tp, type) and issubclass(tp, PurePath):
        return {"type": "string"}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        tag = _shape(tp).tag
        if tag and not getattr(tp, tag, ""):
            return {"oneOf": [_ref(sub, defs) for sub in _variants(tp).values()]}
        return _ref(tp, defs)
    origin = typing.get_origin(tp)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], defs)}
        return {"type": "array", "prefixItems": [_schema(a, defs) for a in args], "minItems": len(args),
                "maxItems": len(args)}
    if origin is dict:
        values = _schema(typing.get_args(tp)[1], defs)
        return {"type": "object", "additionalProperties": values} if values else {"type": "object"}
    if tp is dict:
        return {"type": "object"}
    raise TypeError(f"the codec has no schema for {tp!r}")


def _ref(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    name = cls.__name__
    if name not in defs:
        defs[name] = {}  # a placeholder while it is built (a class that holds itself)
        defs[name] = _object_schema(cls, defs)
    return {"$ref": f"#/$defs/{name}"}


def _object_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    plan = _plan(cls)
    if plan.shape.positional:
        items = [_schema(e.hint, defs) for e in plan.fields]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    props: dict[str, Any] = {}
    required: list[str] = []
    if plan.shape.tag:
        props[plan.shape.tag] = {"const": getattr(cls, plan.shape.tag)}
        required.append(plan.shape.tag)
    for e in plan.entries:
        w = e.wire
        if w.read_only or w.rest:
            continue
        hint = _strip_none(e.hint) if w.omit is if_none else e.hint  # left out, never written as null
        if w.flatten:
            inner = _object_schema(_strip_none(e.hint), defs)
            props.update(inner["properties"])
            if not _admits_none(e.hint):
                required += inner.get("required", [])
            continue
        if w.schema is not None:
            schema = dict(w.schema)
        elif w.record is not None:
            pair = typing.get_args(_strip_none(e.hint))[0]
            schema = {"type": "array", "items": {
                "type": "object", "properties": {k: _schema(a, defs) for k, a in zip(w.record, typing.get_args(pair))},
                "required": list(w.record), "additionalProperties": False}}
        elif w.none_as is not None:
            schema = {"anyOf": [_schema(_strip_none(hint), defs), {"type": "object", "maxProperties": 0}]}
        else:
            schema = _schema(hint, defs)
        props[e.key] = schema
        if w.omit is None:
            required.append(e.key)
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out
