"""Start-up cost: the commands that reach no host import neither asyncssh nor textual.

Every sub-command, and every test that runs ``cockpit`` in a subprocess, pays for what
``cockpit.cli`` imports before the command runs.  asyncssh alone costs about 0.1-0.2 s of CPU,
the TUI's textual more; the parser must not pull them in (``cockpit init``'s module stands on
discovery, which stands on the SSH transport: those imports happen where a host is reached).
``--help`` and a config error run no event loop either: asyncio (about 40 ms) is imported by the
commands that run one.  Each test runs
the installed entry point (the script ``pip install`` made beside this Python, else the entry
point's own ``from cockpit.cli import main``) under ``python -X importtime``, which lists every
module the process imported, and reads that list: a module-level ``import asyncssh`` (or of a
module that has one) put back on the path fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: what a command that reaches no host must not import (cockpit.ui: the screens, on textual)
HEAVY = ("asyncssh", "textual", "cockpit.ui")
#: and one that runs nothing (help, a config error): asyncio is imported by the commands that run a loop
IDLE = (*HEAVY, "asyncio")


def _entry() -> list[str]:
    """The interpreter's arguments that run the installed ``cockpit`` (after ``-X importtime``)."""
    beside = Path(sys.executable).parent / "cockpit"
    if beside.is_file() and os.access(beside, os.X_OK) and beside.read_bytes()[:2] == b"#!" and b"python" in beside.read_bytes().split(b"\n", 1)[0]:
        return [str(beside)]
    return ["-c", "import sys\nfrom cockpit.cli import main\nsys.exit(main())"]


def run(*argv: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """``cockpit ARGV`` in a subprocess, and its ``-X importtime`` lines (each a module, indented
    under the one that imported it; a module's line comes after those it imported)."""
    r = subprocess.run([sys.executable, "-X", "importtime", *_entry(), *argv], capture_output=True, text=True, timeout=60)
    rows = [line.split("|") for line in r.stderr.splitlines() if line.startswith("import time:")]
    tree = [row[-1].rstrip() for row in rows if len(row) == 3 and row[1].strip().isdigit()]  # the header row left out
    assert "cockpit.cli.main" in {t.strip() for t in tree}, f"no import list read from stderr:\n{r.stderr[-2000:]}"
    return r, tree


def heavy(tree: list[str], packages: tuple[str, ...] = HEAVY) -> list[str]:
    """Each of ``packages`` imported, with the chain of modules that imported it (outermost first)."""
    out = []
    for i, line in enumerate(tree):
        name, depth = line.strip(), len(line) - len(line.lstrip())
        if name in packages:
            chain = [name]
            for up in tree[i + 1:]:  # the importer: the next line one level out
                if len(up) - len(up.lstrip()) < depth:
                    depth = len(up) - len(up.lstrip())
                    chain.insert(0, up.strip())
            out.append(" > ".join(chain))
    return out


@pytest.fixture
def config(tmp_path: Path) -> Path:
    p = tmp_path / "c.toml"
    p.write_text('[target]\nhost = "127.0.0.1"\nport = 1\n')
    return p


@pytest.mark.parametrize("argv", [("--help",), ("init", "--help")], ids=" ".join)
def test_help_imports_no_ssh_ui_or_event_loop(argv: tuple[str, ...]) -> None:
    r, tree = run(*argv)
    assert r.returncode == 0 and "usage: cockpit" in r.stdout, r.stderr[-2000:]
    assert not heavy(tree, IDLE), f"cockpit {' '.join(argv)} imported {heavy(tree, IDLE)}"


def test_history_reads_the_journal_without_ssh_or_ui(config: Path) -> None:
    r, tree = run("history", "--json", "--config", str(config))
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr[-2000:]
    assert "cockpit.core.journal" in {t.strip() for t in tree}
    assert not heavy(tree), f"cockpit history imported {heavy(tree)}"
    # nor the fate follower and what it stands on (the actions, the engine, asyncio): a fate as the
    # journal keeps it is cockpit.core.fate_record's
    judges = ("cockpit.core.fate", "cockpit.core.actions", "cockpit.core.engine", "asyncio")
    assert not heavy(tree, judges), f"cockpit history imported {heavy(tree, judges)}"


def test_a_config_error_imports_no_ssh_ui_or_event_loop(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[target]\nhost = "x"\n[job]\nlauncher = "nohup"\n')
    r, tree = run("status", "--config", str(bad))
    assert r.returncode == 2 and "config error" in r.stderr and "job.launcher" in r.stderr
    assert not heavy(tree, IDLE), f"a config error imported {heavy(tree, IDLE)}"
