"""Theme files → Textual themes, with one colour per failure layer.

A theme file is TOML::

    [theme]            # Textual's theme colours
    dark = true
    primary = "#4A9EFF"
    ...                # secondary accent foreground background surface panel success warning error boost
    [layers]           # one colour per failure layer: config ssh host container process gpu app
    app = "#FF5C7A"
    [variables]        # optional: any other Textual CSS variable, e.g. "footer-key-foreground"

The theme's name is the file's name without ``.toml``.  Layer colours become the CSS variables
``$layer-config`` … ``$layer-app``; the stylesheet uses only ``$variables``.

Where themes come from (later ones override earlier ones with the same name):

1. the built-in themes: ``themes/`` at the top of a source checkout when cockpit runs from one
   (the canonical files), otherwise the copies shipped inside the package
   (``cockpit/ui/themes/``, package data, read with :mod:`importlib.resources`; a test keeps the
   two byte-identical);
2. the user's themes: ``$XDG_CONFIG_HOME/cockpit/themes/*.toml`` (``~/.config/cockpit/themes``).

A broken file never crashes cockpit: :func:`load_themes` returns the problem as a message naming
the file, the key and the fix, and the app notifies it and falls back to ``dark`` (and if even
``dark`` is unreadable, to :data:`FALLBACK_DARK`, compiled in).
"""

from __future__ import annotations

import difflib
import os
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from textual.color import Color, ColorParseError
from textual.theme import Theme

from ..core.layers import Layer

__all__ = [
    "DEFAULT_THEME",
    "BUILTIN_ORDER",
    "THEME_COLOURS",
    "FALLBACK_DARK",
    "ThemeError",
    "ThemeSet",
    "layer_variables",
    "default_variables",
    "parse_theme",
    "load_theme_file",
    "load_themes",
    "builtin_theme_dir",
    "user_theme_dir",
]

DEFAULT_THEME = "dark"
BUILTIN_ORDER = ("dark", "light", "high-contrast", "colorblind")

#: the Textual theme colours a file may set under [theme]
THEME_COLOURS = ("primary", "secondary", "accent", "foreground", "background", "surface", "panel",
                 "success", "warning", "error", "boost")
_REQUIRED = ("primary",)
LAYERS = tuple(layer.value for layer in Layer)

#: the dark theme, compiled in: the last resort when themes/dark.toml itself cannot be read
#: (a test keeps it equal to themes/dark.toml)
FALLBACK_DARK: dict[str, Any] = {
    "theme": {
        "dark": True, "primary": "#4A9EFF", "secondary": "#8C7AE6", "accent": "#FFB454", "foreground": "#E0E0E0",
        "background": "#15171C", "surface": "#1C1F26", "panel": "#262A33", "success": "#4CC38A",
        "warning": "#F2B33D", "error": "#FF5C5C",
    },
    "layers": {
        "config": "#B38CFF", "ssh": "#5FB3FF", "host": "#4FD1C5", "container": "#9BD65B",
        "process": "#F2B33D", "gpu": "#FF8A3D", "app": "#FF5C7A",
    },
}


class ThemeError(Exception):
    def __init__(self, where: str, problem: str, fix: str = "") -> None:
        self.where, self.problem, self.fix = where, problem, fix
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return f"{self.where}: {self.problem}" + (f" ({self.fix})" if self.fix else "")


def layer_variables(layers: dict[str, str]) -> dict[str, str]:
    """``{"app": "#f00"}`` → ``{"layer-app": "#f00"}``."""
    return {f"layer-{k}": v for k, v in layers.items()}


def default_variables() -> dict[str, str]:
    """The app's own CSS variables with their defaults (used by any theme that does not set them,
    e.g. Textual's built-in themes)."""
    return layer_variables(FALLBACK_DARK["layers"])


def _did_you_mean(key: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else "known keys: " + ", ".join(known)


def _colour(where: str, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ThemeError(where, f"{key} must be a colour string, not {type(value).__name__}", 'write it as "#RRGGBB"')
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeError(where, f"{key} = {value!r} is not a colour", 'write it as "#RRGGBB", "rgb(r,g,b)" or a colour name') from None
    return value


def parse_theme(name: str, data: dict[str, Any], *, where: str = "<theme>") -> Theme:
    """A Textual :class:`Theme` from a theme file's parsed TOML (raises :class:`ThemeError`)."""
    for section in data:
        if section not in ("theme", "layers", "variables"):
            raise ThemeError(where, f"unknown table [{section}]", _did_you_mean(section, ("theme", "layers", "variables")))
    t = data.get("theme", {})
    if not isinstance(t, dict):
        raise ThemeError(where, "[theme] must be a table", "write it as [theme] followed by key = value lines")
    kwargs: dict[str, Any] = {}
    for key, value in t.items():
        if key == "dark":
            if not isinstance(value, bool):
                raise ThemeError(where, f"[theme] dark must be true or false, not {value!r}")
            kwargs["dark"] = value
        elif key in THEME_COLOURS:
            kwargs[key] = _colour(where, f"[theme] {key}", value)
        else:
            raise ThemeError(where, f"[theme] unknown key {key!r}", _did_you_mean(key, ("dark", *THEME_COLOURS)))
    for key in _REQUIRED:
        if key not in kwargs:
            raise ThemeError(where, f"[theme] {key} is missing", f'add {key} = "#RRGGBB"')
    layers = data.get("layers", {})
    if not isinstance(layers, dict):
        raise ThemeError(where, "[layers] must be a table", "one colour per layer: " + ", ".join(LAYERS))
    variables: dict[str, str] = dict(default_variables())
    for key, value in layers.items():
        if key not in LAYERS:
            raise ThemeError(where, f"[layers] unknown layer {key!r}", _did_you_mean(key, LAYERS))
        variables[f"layer-{key}"] = _colour(where, f"[layers] {key}", value)
    extra = data.get("variables", {})
    if not isinstance(extra, dict):
        raise ThemeError(where, "[variables] must be a table of Textual CSS variables")
    for key, value in extra.items():
        if not isinstance(value, str):
            raise ThemeError(where, f"[variables] {key} must be a string")
        variables[key] = value
    return Theme(name=name, variables=variables, **kwargs)


def load_theme_file(path: Path | Any) -> Theme:
    """Parse one theme file (a path or an importlib Traversable)."""
    name = path.name[: -len(".toml")] if path.name.endswith(".toml") else path.name
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ThemeError(where, f"cannot read the file: {e}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ThemeError(where, f"invalid TOML: {e}", "fix the syntax at that line") from None
    return parse_theme(name, data, where=where)


def builtin_theme_dir() -> Any:
    """``themes/`` of a source checkout when running from one, else the package's copy."""
    root = Path(__file__).resolve().parents[2]
    checkout = root / "themes"
    if (root / "pyproject.toml").is_file() and (root / "cockpit" / "ui").is_dir() and (checkout / f"{DEFAULT_THEME}.toml").is_file():
        return checkout
    return resources.files("cockpit.ui").joinpath("themes")


def user_theme_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "cockpit" / "themes"


def _toml_files(d: Any) -> list[Any]:
    try:
        if not d.is_dir():
            return []
        return sorted((p for p in d.iterdir() if p.name.endswith(".toml") and not p.name.startswith(".")), key=lambda p: p.name)
    except OSError:
        return []


@dataclass
class ThemeSet:
    """The loaded themes, in cycling order, and what went wrong while loading them."""

    themes: dict[str, Theme] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        first = [n for n in BUILTIN_ORDER if n in self.themes]
        return first + [n for n in self.themes if n not in first]

    def next_after(self, name: str) -> str:
        names = self.names
        if name not in names:
            return names[0]
        return names[(names.index(name) + 1) % len(names)]


def load_themes(builtin_dir: Any | None = None, user_dir: Path | None = None) -> ThemeSet:
    """Every theme cockpit can use; never raises."""
    ts = ThemeSet()
    dirs = [builtin_dir if builtin_dir is not None else builtin_theme_dir(), user_dir if user_dir is not None else user_theme_dir()]
    for d in dirs:
        for path in _toml_files(d):
            try:
                theme = load_theme_file(path)
            except ThemeError as e:
                ts.errors.append(e.message)
                continue
            ts.themes[theme.name] = theme
            ts.sources[theme.name] = str(path)
    if DEFAULT_THEME not in ts.themes:
        ts.themes = {DEFAULT_THEME: parse_theme(DEFAULT_THEME, FALLBACK_DARK, where="<compiled-in dark>"), **ts.themes}
        ts.sources[DEFAULT_THEME] = "<compiled-in>"
    return ts
