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

1. the built-in themes: ``cockpit/themes/`` of the package, read with :mod:`importlib.resources`.
   There is one copy of them: ``themes/`` at the top of the repository.  In a source checkout
   ``cockpit/themes`` is a symlink to it (:func:`builtin_theme_dir` resolves it, so live reload
   watches the real files); a wheel ships the files themselves there (package data: the build
   follows the symlink);
2. the user's themes: ``$XDG_CONFIG_HOME/cockpit/themes/*.toml`` (``~/.config/cockpit/themes``).

A broken file never crashes cockpit: :func:`load_themes` returns the problem as a message naming
the file, the key and the fix, and the app notifies it and falls back to ``dark`` (and if even
``dark`` is unreadable, to :data:`FALLBACK_DARK`, a minimal built-in default).  A theme that leaves
a layer out gets the built-in ``dark.toml``'s colour for it (:func:`default_variables`).
"""

from __future__ import annotations

import difflib
import functools
import logging
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    from importlib.resources.abc import Traversable

    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    from importlib.abc import Traversable

    import tomli as tomllib

from textual.color import Color, ColorParseError
from textual.theme import Theme

from ..core.layers import Layer

log = logging.getLogger(__name__)

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

#: the last resort when no built-in dark.toml can be read: a minimal dark theme (Textual derives
#: the colours not given) with one plain colour per layer; not a copy of themes/dark.toml
FALLBACK_DARK: dict[str, dict[str, Any]] = {  # Any: a theme file's TOML
    "theme": {"dark": True, "primary": "#4A9EFF"},
    "layers": {"config": "#C678DD", "ssh": "#61AFEF", "host": "#56B6C2", "container": "#98C379",
               "process": "#E5C07B", "gpu": "#D19A66", "app": "#E06C75"},
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
    e.g. Textual's built-in themes): the layer colours of the built-in ``dark.toml``."""
    return layer_variables(_default_layers())


@functools.lru_cache(maxsize=1)
def _default_layers() -> dict[str, str]:
    """[layers] of the built-in dark.toml (read once), over :data:`FALLBACK_DARK`'s for any layer it
    lacks or cannot give; a problem is logged here and reported by :func:`load_themes`."""
    layers = dict(FALLBACK_DARK["layers"])
    path = builtin_theme_dir().joinpath(f"{DEFAULT_THEME}.toml")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        log.warning("default layer colours: cannot read %s (%s), using plain ones", path, e)
        return layers
    found = data.get("layers")
    for key, value in (found.items() if isinstance(found, dict) else ()):
        if key in layers and isinstance(value, str) and _is_colour(value):
            layers[key] = value
    return layers


def _is_colour(value: str) -> bool:
    try:
        Color.parse(value)
    except ColorParseError:
        return False
    return True


def _did_you_mean(key: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else "known keys: " + ", ".join(known)


def _colour(where: str, key: str, value: Any) -> str:  # Any: a TOML value
    if not isinstance(value, str):
        raise ThemeError(where, f"{key} must be a colour string, not {type(value).__name__}", 'write it as "#RRGGBB"')
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeError(where, f"{key} = {value!r} is not a colour", 'write it as "#RRGGBB", "rgb(r,g,b)" or a colour name') from None
    return value


def parse_theme(name: str, data: dict[str, Any], *, where: str = "<theme>") -> Theme:  # Any: TOML
    """A Textual :class:`Theme` from a theme file's parsed TOML (raises :class:`ThemeError`)."""
    for section in data:
        if section not in ("theme", "layers", "variables"):
            raise ThemeError(where, f"unknown table [{section}]", _did_you_mean(section, ("theme", "layers", "variables")))
    t = data.get("theme", {})
    if not isinstance(t, dict):
        raise ThemeError(where, "[theme] must be a table", "write it as [theme] followed by key = value lines")
    kwargs: dict[str, Any] = {}  # Any: Theme's keyword arguments of several types
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


def load_theme_file(path: Traversable) -> Theme:
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


def builtin_theme_dir() -> Traversable:
    """``cockpit/themes`` of the package: in a source checkout (editable install too) the symlink
    resolved to the top-level ``themes/``; in an installed wheel, the files shipped with it."""
    shipped = resources.files("cockpit").joinpath("themes")
    return shipped.resolve() if isinstance(shipped, Path) else shipped


def user_theme_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "cockpit" / "themes"


def _toml_files(d: Traversable) -> list[Traversable]:
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


def load_themes(builtin_dir: Traversable | None = None, user_dir: Path | None = None) -> ThemeSet:
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
        ts.themes = {DEFAULT_THEME: parse_theme(DEFAULT_THEME, FALLBACK_DARK, where="<built-in minimal dark>"), **ts.themes}
        ts.sources[DEFAULT_THEME] = "<built-in>"
    return ts
