"""Helpers for lab tests that run one of the job scripts in ``tests/lab/jobs/`` and read its fate.

One copy of what several test files needed alike: the script copied where the container sees it
(its workspace; a container's ``/tmp`` is its own), an attempt's latest fate from the journal, and
the pct-or-docker target a test is parametrized over.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cockpit.core.fate import latest_fate
from cockpit.core.journal import Journal
from tests.lab.util import await_for

__all__ = ["JOBS", "script_command", "fate_of", "final_fate", "fresh_fate", "pct_or_docker"]

JOBS = Path(__file__).parent / "jobs"


def script_command(lab: Any, script: str, *args: object, ctid: int = 200) -> str:
    """The command running ``tests/lab/jobs/<script>`` from the container's workspace."""
    dest = Path(lab.workspace(ctid)) / script
    shutil.copy(JOBS / script, dest)
    return shlex.join([lab.jobsim_argv()[0], str(dest), *map(str, args)])


@contextlib.contextmanager
def held_gate(lab: Any, name: str, ctid: int = 200) -> Iterator[Path]:
    """A gate file a lab job waits on (``tests/lab/jobs``: it goes on, crashes or ends once the
    file exists), in the container's workspace: removed before, with the files the job writes beside
    it (``NAME.pid``, ``NAME.progress``…), and touched after whatever the test did, so the job ends."""
    gate = Path(lab.workspace(ctid)) / name
    for p in (gate, *gate.parent.glob(f"{name}.*")):
        p.unlink(missing_ok=True)
    try:
        yield gate
    finally:
        gate.touch()


def fate_of(cfg: Any, attempt: int) -> Any:
    """The attempt's latest fate as the journal holds it (None before any)."""
    rec = Journal(cfg.journal_path).get(attempt)
    return latest_fate(rec) if rec is not None else None


async def final_fate(cfg: Any, attempt: int, timeout: float = 20) -> Any:
    """The attempt's fate once the journal holds a final one (waited for up to ``timeout`` s)."""
    await await_for(lambda: (f := fate_of(cfg, attempt)) is not None and f.final, timeout, "the final fate")
    return fate_of(cfg, attempt)


async def fresh_fate(cfg: Any) -> Any:
    """The job's fate as a cockpit started now reads it (``cockpit status``, a new TUI): a fresh
    Engine's reconciling read, the engine closed after."""
    from cockpit.core.engine import Engine

    fresh = Engine(cfg)
    try:
        return await fresh.reconcile()
    finally:
        await fresh.close()


def pct_or_docker(kind: str, lab: Any, lab_config: Callable[..., Any], name: str, ctid: int) -> Iterator[tuple[Callable[..., Any], int]]:
    """For a fixture parametrized over ``["pct", "docker"]``: yields ``(make_cfg, ctid)`` for the pct
    container 200, or for a docker container ``name`` the engine emulator answers for (removed after)."""
    if kind == "pct":
        yield lab_config, 200
        return
    lab.add_engine_container("docker", name, ctid)

    def make(**overrides: Any) -> Any:
        target = {"runtime": "docker", "container": name, "ctid": ctid, "docker": str(lab.bin_dir / "docker")}
        return lab_config(target=target, **overrides)

    yield make, ctid
    lab.set_docker_daemon(None)
    lab.remove_container(ctid)
