"""Does a JSON value satisfy a schema of the SPEC §2.2 subset? Plain Python, linear time.

The checker asks it whether a schema's `default` fits that schema. It decides exactly as
fastjsonschema (draft-07), the validator the runtime checks inputs and outputs with, decides on
the subset — a differential property test holds the two together — so a default the checker
accepts is one the runtime accepts. It exists because fastjsonschema generates and compiles
code per schema (about half a millisecond each): a 64 KiB manifest can hold a thousand
defaults, and the checker must stay fast on hostile input.

Semantics (draft-07 as fastjsonschema reads it): `integer` admits an integral float (`1.0`);
booleans are never numbers; `enum`/`const` compare as JSON (`true` ≠ `1`, `1` = `1.0`, object
key order ignored); each keyword applies only to values of its kind (`minLength` to strings,
`minimum` to numbers, `items` to arrays, `properties` to objects); lengths count code points.
"""

from __future__ import annotations

from typing import Any

_KINDS = {
    "string": lambda v: type(v) is str,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "number": lambda v: type(v) is int or type(v) is float,
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
}


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: booleans apart from numbers, `1 == 1.0`, keys unordered."""
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in (int, float) and tb in (int, float):
        return bool(a == b)
    if ta is not tb:
        return False
    if ta is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if ta is dict:
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def schema_problem(schema: Any, value: Any, what: str = "the value") -> str | None:
    """Why `value` does not satisfy `schema` (a schema of the subset), or None when it does."""
    if type(schema) is not dict:
        return None  # a boolean sub-schema or a broken one: the subset check reports those
    kinds = schema.get("type")
    if kinds is not None:
        names = [kinds] if type(kinds) is str else kinds
        if not any(_KINDS.get(n, lambda v: False)(value) for n in names):
            return f"{what} must be {' or '.join(str(n) for n in names)}"
    enum = schema.get("enum")
    if type(enum) is list and not any(json_equal(value, e) for e in enum):
        return f"{what} must be one of the `enum` values"
    if "const" in schema and not json_equal(value, schema["const"]):
        return f"{what} must be the `const` value"
    t = type(value)
    if (t is int or t is float) and t is not bool:
        low, high = schema.get("minimum"), schema.get("maximum")
        if _number(low) and value < low:
            return f"{what} must be at least {low}"
        if _number(high) and value > high:
            return f"{what} must be at most {high}"
    elif t is str:
        low, high = schema.get("minLength"), schema.get("maxLength")
        if type(low) is int and len(value) < low:
            return f"{what} must have at least {low} characters"
        if type(high) is int and len(value) > high:
            return f"{what} must have at most {high} characters"
    elif t is list:
        low, high = schema.get("minItems"), schema.get("maxItems")
        if type(low) is int and len(value) < low:
            return f"{what} must have at least {low} items"
        if type(high) is int and len(value) > high:
            return f"{what} must have at most {high} items"
        items = schema.get("items")
        if items is not None:
            for i, item in enumerate(value):
                problem = schema_problem(items, item, f"{what}[{i}]")
                if problem is not None:
                    return problem
    elif t is dict:
        required = schema.get("required")
        if type(required) is list:
            for name in required:
                if name not in value:
                    return f"{what} must have `{name}`"
        properties = schema.get("properties")
        properties = properties if type(properties) is dict else {}
        for name, sub in properties.items():
            if name in value:
                problem = schema_problem(sub, value[name], f"{what}.{name}")
                if problem is not None:
                    return problem
        if schema.get("additionalProperties") is False:
            for name in value:
                if name not in properties:
                    return f"{what} must not have `{name}` (no additional properties)"
    return None


def _number(v: Any) -> bool:
    return (type(v) is int or type(v) is float) and type(v) is not bool
