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
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_ANNOTATIONS = frozenset(
    ("$schema", "$id", "$defs", "title", "description", "default", "examples", "$comment")
)
_KEYWORDS = frozenset(
    (
        "$ref",
        "type",
        "enum",
        "properties",
        "required",
        "items",
        "anyOf",
        "not",
        "pattern",
        "minLength",
        "minimum",
        "maximum",
    )
)


class SchemaProblem(ValueError):
    """Where a document breaks its schema, and how."""


def check(schema: dict[str, Any], instance: Any) -> Any:
    """``instance`` as read (see the module's docstring); SchemaProblem if it is invalid."""
    return _check(schema, instance, schema, "$")


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


def _check(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> Any:
    unknown = set(schema) - _KEYWORDS - _ANNOTATIONS - {k for k in schema if k.startswith("x-")}
    if unknown:
        raise ValueError(f"schema keyword(s) this checker does not know: {sorted(unknown)}")
    what = schema.get("description")
    if "$ref" in schema:
        value = _check(_resolve(root, schema["$ref"]), value, root, path)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        matched = [name for name in types if _is_type(name, value)]
        if not matched:
            raise SchemaProblem(
                f"{path}: {_json_type(value)} where {' or '.join(types)} is expected"
            )
        if value is None and "array" in types:
            value = []  # null for a list is an empty list (Go's nil slice)
        elif isinstance(value, float) and "integer" in matched and "number" not in matched:
            value = int(value)
    if "enum" in schema and not any(
        type(option) is type(value) and option == value for option in schema["enum"]
    ):
        raise SchemaProblem(f"{path}: {value!r} is not one of {schema['enum']}")
    if "anyOf" in schema:
        value = _any_of(schema["anyOf"], value, root, path)
    if "not" in schema and _valid(schema["not"], value, root, path):
        raise SchemaProblem(f"{path}: {value!r} must not match {schema['not']}")
    if isinstance(value, str):
        if "pattern" in schema and not _compiled(schema["pattern"]).search(value):
            raise SchemaProblem(f"{path}: {value!r} is not {what or 'of the expected form'}")
        if len(value) < schema.get("minLength", 0):
            raise SchemaProblem(f"{path}: shorter than {schema['minLength']} characters")
    elif _is_type("number", value):
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaProblem(f"{path}: {value!r} is less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaProblem(f"{path}: {value!r} is more than {schema['maximum']}")
    elif isinstance(value, list) and "items" in schema:
        value = [
            _check(schema["items"], item, root, f"{path}[{index}]")
            for index, item in enumerate(value)
        ]
    elif isinstance(value, dict):
        missing = [name for name in schema.get("required", ()) if name not in value]
        if missing:
            raise SchemaProblem(f"{path}: missing {', '.join(missing)}")
        properties = schema.get("properties", {})
        value = {
            key: _check(properties[key], item, root, f"{path}.{key}") if key in properties else item
            for key, item in value.items()
        }
    return value


def _any_of(options: list[dict[str, Any]], value: Any, root: dict[str, Any], path: str) -> Any:
    problems = []
    for option in options:
        try:
            return _check(option, value, root, path)
        except SchemaProblem as problem:
            problems.append(str(problem))
    raise SchemaProblem(" and ".join(problems))


def _valid(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str) -> bool:
    try:
        _check(schema, value, root, path)
    except SchemaProblem:
        return False
    return True


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
