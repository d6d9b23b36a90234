"""The rules for names and one-line values in the config, checked once, when the file is loaded
(a helper of :mod:`cockpit.core.config`; each is a field's ``check``, so a problem becomes a
:class:`~cockpit.core.config.ConfigError` naming the file, the key and, through the field's doc, the
character set that would be right).

Why at load and nowhere else: a name travels.  ``[target] name`` goes into the comment line of a
generated Slurm batch script, the tmux pane's title, ``status --json``, notify events and the
lock's file name; a container name into ``docker exec``; an action's name onto the command line.
A newline there turns a comment into a command (``name = "ok\\ntouch /tmp/P\\n#"`` ran ``touch``
on the cluster) and an escape sequence retitles the terminal.  Each consumer quoting for its own
medium is the second line of defence; this is the first: a value that is not a name never loads.

The sets (each field's doc says its own):

* :func:`target_name` (``[target] name``): letters, digits, space and ``. _ - @ + :``, 1-64,
  starting with a letter or digit and not ending with a space.
* :func:`command_word` (``[target] pct``/``docker``/``podman``, ``[gpu] nvidia_smi``,
  ``[job] py_spy``, ``[slurm] bin``): one command name or path: printable characters, no control
  character, not starting with ``-`` (it would be read as an option).
* :func:`one_line` (labels, help and advice lines, theme names): printable text on one line.
* :func:`ident` (``[[signatures]] id``): letters, digits and ``. _ -``, starting with a letter or digit.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

__all__ = ["control_problem", "target_name", "command_word", "one_line", "ident", "remote_path", "each_line"]

_TARGET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._@+:-]{0,63}\Z")
_IDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


def control_problem(v: str) -> str | None:
    """Why ``v`` is not one printable line: its first control, format or separator character
    (a newline, an escape, a bidi override), by code point; None when there is none."""
    for c in v:
        if not c.isprintable():  # Cc, Cf, Cs, Co, Cn, Zl, Zp and every space but " "
            what = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\x1b": "an escape"}.get(c) \
                or unicodedata.name(c, "a control character").lower()
            return f"contains {what} (U+{ord(c):04X})"
    return None


def target_name(v: Any) -> str | None:
    if not v:
        return None  # empty: the host names the target
    bad = control_problem(v)
    if bad:
        return bad + ": a target name is one line (it goes into scripts, titles and file names)"
    if not _TARGET_NAME.match(v) or v.endswith(" "):
        return "is not a target name: letters, digits, space and . _ - @ + : (1-64, starting with a letter or digit)"
    return None


def command_word(v: Any) -> str | None:
    if not v:
        return None
    bad = control_problem(v)
    if bad:
        return bad + ": a command is one line"
    return "must not start with '-' (it would be read as an option)" if v.startswith("-") else None


def one_line(v: Any) -> str | None:
    return control_problem(v) if v else None


def ident(v: Any) -> str | None:
    if not v:
        return None
    bad = control_problem(v)
    return None if not bad and _IDENT.match(v) else (bad + ": " if bad else "") + "is not an id (letters, digits, . _ -)"


def remote_path(v: Any) -> str | None:
    """A path inside the target: absolute, one line (it is quoted into commands and printed in verdicts)."""
    if not v:
        return None
    bad = control_problem(v)
    if bad:
        return bad + ": a path inside the target is one line"
    return None if v.startswith("/") else "must be an absolute path inside the target (starting with /)"


def each_line(v: Any) -> str | None:
    """Each string of a list (cache paths, sbatch arguments) one printable line."""
    for i, p in enumerate(v):
        bad = control_problem(p)
        if bad:
            return f"has [{i}] {p!r}, which {bad}"
    return None
