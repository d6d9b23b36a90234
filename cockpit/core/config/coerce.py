"""TOML values → a section's dataclass: types, choices and each key's own check, with errors that
name the key and show its documentation (shared by the loader and the ``[[…]]`` array parsers)."""

from __future__ import annotations

import dataclasses
import difflib
import typing
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["unknown_key", "str_table", "parse_section", "section_docs"]


def unknown_key(path: Path | None, dotted: str, key: str, known: Any) -> ConfigError:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    fix = f"did you mean '{close[0]}'?" if close else "known keys: " + ", ".join(sorted(known))
    return ConfigError(path, dotted, "unknown key", fix)


def str_table(path: Path | None, dotted: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(path, dotted, f"must be a table, not {_tname(value)}", f"write it as [{dotted}] with key = \"value\" lines")
    out: dict[str, str] = {}
    for k, v in value.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = str(v)
        if not isinstance(v, str):
            raise ConfigError(path, f"{dotted}.{k}", f"must be a string, not {_tname(v)}", f"quote it: {k} = \"...\"")
        out[k] = v
    return out


def _tname(v: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array", dict: "a table"}.get(type(v), type(v).__name__)


def parse_section(path: Path | None, dotted: str, cls: type, value: Any) -> Any:
    if not isinstance(value, dict):
        raise ConfigError(path, dotted, f"must be a table, not {_tname(value)}", f"write it as [{dotted}] followed by key = value lines")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, v in value.items():
        if key not in fields:
            raise unknown_key(path, f"{dotted}.{key}", key, fields)
        f = fields[key]
        kwargs[key] = _coerce(path, f"{dotted}.{key}", hints[key], v, f.metadata)
    return cls(**kwargs)


def _coerce(path: Path | None, dotted: str, hint: Any, v: Any, md: Any) -> Any:
    allowed = _allowed_types(hint)
    doc = md.get("doc", "")
    if dict in allowed and isinstance(v, dict):
        v = str_table(path, dotted, v)
    elif list in allowed and isinstance(v, list):
        for i, item in enumerate(v):
            if not isinstance(item, str):
                raise ConfigError(path, f"{dotted}[{i}]", f"must be a string, not {_tname(item)}", "quote each entry")
    elif float in allowed and isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    elif not any(isinstance(v, t) and not (t is int and isinstance(v, bool)) for t in allowed if t is not type(None)):
        want = " or ".join(_tname_of(t) for t in allowed if t is not type(None))
        raise ConfigError(path, dotted, f"must be {want}, not {_tname(v)} ({v!r})", doc)
    choices = md.get("choices")
    if choices and v not in choices:
        close = difflib.get_close_matches(str(v), choices, n=1, cutoff=0.5)
        hint_ = f"did you mean \"{close[0]}\"? " if close else ""
        raise ConfigError(path, dotted, f"{v!r} is not one of {', '.join(repr(c) for c in choices)}", hint_ + doc)
    check = md.get("check")
    if check is not None and v is not None:
        problem = check(v)
        if problem:
            raise ConfigError(path, dotted, f"{v!r} {problem}", doc)
    return v


def _tname_of(t: type) -> str:
    return {bool: "a boolean (true/false)", int: "an integer", float: "a number", str: "a string", list: "an array of strings", dict: "a table"}.get(t, t.__name__)


def _allowed_types(hint: Any) -> tuple[type, ...]:
    origin = typing.get_origin(hint)
    if origin is None:
        return (hint,)
    if origin in (list, dict):
        return (origin,)
    out: list[type] = []
    for a in typing.get_args(hint):
        out.extend(_allowed_types(a))
    return tuple(out)


def section_docs(cls: type) -> dict[str, str]:
    """Each key's documentation, for ``sample_config.toml`` checks and help screens."""
    return {f.name: f.metadata.get("doc", "") for f in dataclasses.fields(cls)}
