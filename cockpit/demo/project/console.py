"""Printing from several threads: every message, and every traceback, comes out in one piece."""

from __future__ import annotations

import os
import sys
import threading
from typing import Callable

_lock = threading.RLock()


def say(message: str) -> None:
    with _lock:
        sys.stdout.write(message + "\n")
        sys.stdout.flush()


def install_thread_excepthook(on_death: Callable[[threading.Thread | None], None]) -> None:
    """Keep Python's own report (``Exception in thread NAME:`` + traceback), unbroken, then tell us."""
    default = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        with _lock:
            sys.stdout.flush()
            default(args)
            sys.stderr.flush()
        on_death(args.thread)

    threading.excepthook = hook


def exit_now(code: int) -> None:
    """Leave at once, with everything printed so far on disk and nothing half printed."""
    with _lock:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
