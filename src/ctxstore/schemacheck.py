"""JSON Schema checking for the part of draft 2020-12 that ctxstore's own schemas use.

``parse_contract`` checks a contract against the very schema ``ctxstore contract schema``
prints, so the two accept the same documents by construction (a property test compares
this with the reference validator, the ``jsonschema`` package).  Keywords: ``$ref`` (to
``#/$defs/...``), ``type``, ``enum``, ``properties``, ``required``, ``items``, ``anyOf``,
``not``, ``pattern`` (``re.search``, as ``jsonschema`` does), ``minLength``, ``minimum``,
``maximum``.  A keyword outside that list is a ValueError, never silently unchecked.

:func:`check` also returns the value as a receiver reads it: ``null`` where an array may
stand is an empty list, and an integral float where an integer is expected (``3.0``,
which JSON Schema counts as an integer) is an int.

A schema is read as a constant: which keywords each schema object has is found once, so
a schema changed after its first use is checked as it was then.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

_ANNOTATIONS = frozenset(
    ("$schema", "$id", "$defs", "title", "description", "default", "examples", "$comment")
)


class SchemaProblem(ValueError):
    """Where a document breaks its schema, and how."""


def check(schema: dict[str, Any], instance: Any) -> Any:
    """``instance`` as read (see the module's docstring); SchemaProblem if it is invalid."""
    return _check(schema, instance, schema, "$")


# One checker per keyword: (schema, value, root, path) -> the value as read.
_KeywordChecker = Callable[[dict[str, Any], Any, dict[str, Any], str], Any]


def _check(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    for check_keyword in _plan(schema):
        value = check_keyword(schema, value, root, path)
    return value


# Each schema's checkers, found once: a document is checked against the same few dozen
# schema objects over and over.  The schema is held so its id is not reused.
_PLANS: dict[int, tuple[dict[str, Any], tuple[_KeywordChecker, ...]]] = {}


def _plan(schema: dict[str, Any]) -> tuple[_KeywordChecker, ...]:
    known = _PLANS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    unknown = set(schema) - _KNOWN - {key for key in schema if key.startswith("x-")}
    if unknown:
        raise ValueError(f"schema keyword(s) this checker does not know: {sorted(unknown)}")
    if len(_PLANS) >= 1024:
        _PLANS.clear()  # a bound for callers that build schemas on the fly
    checkers = tuple(check_keyword for keyword, check_keyword in _CHECKERS if keyword in schema)
    _PLANS[id(schema)] = (schema, checkers)
    return checkers


def _check_ref(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    return _check(_resolve(root, schema["$ref"]), value, root, path)


def _check_type(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    matched = [name for name in types if _is_type(name, value)]
    if not matched:
        raise SchemaProblem(f"{path}: {_json_type(value)} where {' or '.join(types)} is expected")
    if value is None and "array" in types:
        return []  # null for a list is an empty list (Go's nil slice)
    if isinstance(value, float) and "integer" in matched and "number" not in matched:
        return int(value)
    return value


def _check_enum(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    # type() too: JSON Schema tells true from 1 and "1" from 1
    if not any(type(option) is type(value) and option == value for option in schema["enum"]):
        raise SchemaProblem(f"{path}: {value!r} is not one of {schema['enum']}")
    return value


def _check_any_of(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    problems = []
    for option in schema["anyOf"]:
        try:
            return _check(option, value, root, path)
        except SchemaProblem as problem:
            problems.append(str(problem))
    raise SchemaProblem(" and ".join(problems))


def _check_not(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    try:
        _check(schema["not"], value, root, path)
    except SchemaProblem:
        return value
    raise SchemaProblem(f"{path}: {value!r} must not match {schema['not']}")


def _check_pattern(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    if isinstance(value, str) and not _compiled(schema["pattern"]).search(value):
        what = schema.get("description") or "of the expected form"
        raise SchemaProblem(f"{path}: {value!r} is not {what}")
    return value


def _check_min_length(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    if isinstance(value, str) and len(value) < schema["minLength"]:
        raise SchemaProblem(f"{path}: shorter than {schema['minLength']} characters")
    return value


def _bound(keyword: str, beyond: Callable[[Any, Any], bool], word: str) -> _KeywordChecker:
    """The checker of ``minimum`` (``beyond``: less than) or ``maximum``."""

    def check_bound(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
        if _is_type("number", value) and beyond(value, schema[keyword]):
            raise SchemaProblem(f"{path}: {value!r} is {word} than {schema[keyword]}")
        return value

    return check_bound


def _check_items(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    if not isinstance(value, list):
        return value
    items = schema["items"]
    return [_check(items, item, root, f"{path}[{index}]") for index, item in enumerate(value)]


def _check_required(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    if isinstance(value, dict):
        missing = [name for name in schema["required"] if name not in value]
        if missing:
            raise SchemaProblem(f"{path}: missing {', '.join(missing)}")
    return value


def _check_properties(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    if not isinstance(value, dict):
        return value
    properties = schema["properties"]
    return {
        key: _check(properties[key], item, root, f"{path}.{key}") if key in properties else item
        for key, item in value.items()
    }


# In the order they apply: a reference and the type first (they may change the value as
# read), so the first problem reported is the one the order below meets first.
_CHECKERS: tuple[tuple[str, _KeywordChecker], ...] = (
    ("$ref", _check_ref),
    ("type", _check_type),
    ("enum", _check_enum),
    ("anyOf", _check_any_of),
    ("not", _check_not),
    ("pattern", _check_pattern),
    ("minLength", _check_min_length),
    ("minimum", _bound("minimum", operator.lt, "less")),
    ("maximum", _bound("maximum", operator.gt, "more")),
    ("items", _check_items),
    ("required", _check_required),
    ("properties", _check_properties),
)
_KNOWN = frozenset(keyword for keyword, _ in _CHECKERS) | _ANNOTATIONS


def _is_type(name: str, value: Any) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, int | float)
    kinds = {"string": str, "array": list, "object": dict}
    return isinstance(value, kinds[name])


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _resolve(root: dict[str, Any], reference: str) -> dict[str, Any]:
    if not reference.startswith("#/$defs/"):
        raise ValueError(f"only #/$defs/ references are supported, not {reference!r}")
    resolved: dict[str, Any] = root["$defs"][reference.removeprefix("#/$defs/")]
    return resolved


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _is_type(name, value):
            return name
    return type(value).__name__
