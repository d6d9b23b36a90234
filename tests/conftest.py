"""Shared fixtures.  The developer's own config and data never leak into a test run."""

from __future__ import annotations

import os
import site
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from cockpit.core.config import Config
    from tests.lab import Lab

try:
    from tests.lab.fixtures import fresh_lab, lab  # noqa: F401  (the real sshd + emulated Proxmox host: session-scoped, and a fresh one)
except ImportError:  # pragma: no cover - while the lab is being built
    pass


#: the XDG base directories, each pointed at a folder of the test's tmp_path
XDG_DIRS = {"XDG_CONFIG_HOME": "xdg-config", "XDG_CACHE_HOME": "xdg-cache", "XDG_DATA_HOME": "xdg-data",
            "XDG_STATE_HOME": "xdg-state"}


@pytest.fixture(autouse=True)
def _isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Keep the developer's machine out of every test.

    HOME is ``tmp_path/home`` and the XDG base directories are folders of ``tmp_path`` (so the
    demo, user themes and config live there and each test gets a fresh demo); COCKPIT_CONFIG and
    SSH_AUTH_SOCK are unset and the test runs in ``tmp_path``.  Subprocesses (``python -m
    cockpit``, tmux and what it runs) inherit all of it.  PYTHONUSERBASE keeps the real user
    site-packages, so a subprocess imports what this interpreter imports.  The OpenSSH client
    ignores HOME (it reads the passwd entry): the lab config and ``Lab.ssh_argv`` name the lab's
    own ssh_config, so ``~/.ssh/config`` is never read.
    """
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("PYTHONUSERBASE", site.getuserbase())  # before HOME changes: it derives from HOME
    monkeypatch.setenv("HOME", str(home))
    for var, name in XDG_DIRS.items():
        monkeypatch.setenv(var, str(tmp_path / name))
    monkeypatch.delenv("COCKPIT_CONFIG", raising=False)
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.chdir(tmp_path)
    yield


@pytest.fixture
def lab_config(lab: Lab, tmp_path: Path) -> Iterator[Callable[..., Config]]:
    """``make(**overrides) -> Config``: a cockpit config for the lab, written to tmp_path/cockpit.toml.

    The deploy source holds one file (an attempt with nothing to deploy is a config failure);
    the lab is put back to its default state afterwards.
    """
    from cockpit.core.config import load_config

    (lab.dir / "src").mkdir(exist_ok=True)
    (lab.dir / "src" / "train.py").write_text("print('the code under test')\n")
    lab.kill_jobs()  # a job an earlier test left running is no stray of this test's job

    def make(**overrides: Any) -> Config:
        path = tmp_path / "cockpit.toml"
        lab.write_config(path, **overrides)
        return load_config(path)

    yield make
    lab.reset()


def pytest_report_header(config: pytest.Config) -> str:
    return f"cockpit tests: CI={os.environ.get('CI', '')}"


@pytest.fixture
async def engines():
    """``make(cfg) -> Engine``; every engine made is stopped (its job) and closed afterwards."""
    from cockpit.core.engine import Engine

    made: list = []

    def make(cfg):
        e = Engine(cfg)
        made.append(e)
        return e

    yield make
    for e in made:
        try:
            if e.job is not None:
                await e.run_action("stop")
        finally:
            await e.close()


#: fixtures that start a lab (a real sshd, containers, a Slurm cluster): their tests are ``lab``
LAB_FIXTURES = frozenset({"lab", "fresh_lab", "lab_config"})
#: whole files that drive a real terminal, browser or container engine: ``e2e``
E2E_FILES = frozenset({"test_front_door.py", "test_ui_tmux.py", "test_serve_browser.py", "test_runtime_podman_real.py",
                       "test_runtime_docker_real.py"})


def pytest_configure(config: pytest.Config) -> None:
    # xdist's --dist loadfile hands out the files in the order collection left them (below), not
    # re-sorted by their number of tests
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    _LEFT_OUT.clear()
    _LEFT_OUT.update(left_out(config.getoption("markexpr", "") or ""))
    # the quick tier's property tests draw fewer examples (tests/examples.py); set before the
    # test modules are imported, as their @settings are read then
    from tests import examples

    examples.QUICK = examples.quick_tier("lab" in _LEFT_OUT)


#: the markers this run's ``-m`` leaves out whole (set in pytest_configure)
_LEFT_OUT: set[str] = set()


def left_out(markexpr: str) -> set[str]:
    """The markers ``-m markexpr`` leaves out whatever else a test has: each ``not X`` of an
    expression that is only ``and``-ed terms (``not lab and not e2e`` → {lab, e2e})."""
    expr = " ".join(markexpr.split())
    if not expr or " or " in f" {expr} " or "(" in expr:
        return set()
    terms = expr.split(" and ")
    return {t.removeprefix("not ") for t in terms if t.startswith("not ") and " " not in t.removeprefix("not ")}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A run that leaves out ``lab`` (or ``e2e``) does not import the files whose tests are all
    ``lab`` (``*_lab.py``) or ``e2e``: the quick tier's workers each saved ~1 s of CPU importing
    files whose every test would be deselected."""
    name = collection_path.name
    if ("lab" in _LEFT_OUT and name.endswith("_lab.py")) or ("e2e" in _LEFT_OUT and name in E2E_FILES):
        return True
    return None


#: files with a few long tests (CI's slowest: real PyTorch compiles, the fate table's lab, the
#: benchmarks, a browser), handed out before the others whatever their number of tests: started
#: last, one of them kept its worker busy alone at the end of the run
HEAVY_FIRST = ("test_compile_torch_cache_lab.py", "test_compile_torch_lab.py", "test_fate_table_lab.py", "test_bench_lab.py",
               "test_serve_browser.py", "test_compile_trace.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tiers so ``./scripts/test --quick`` (``-m "not lab and not e2e"``) keeps only
    the tests that need no lab and no real terminal: ``lab`` for a test that uses a lab fixture or
    lives in a ``*_lab.py`` file, ``e2e`` for the terminal, browser and engine files.

    Then order the files for the workers of ``--dist loadfile``: the files with a slow test
    (``lab`` or ``e2e``) first, the quick tier's after them, each group's :data:`HEAVY_FIRST` files
    first, then biggest file first (a file's tests keep their order).  A worker takes the next file when it is nearly done, so the
    run ends on the many small quick files and the workers finish together, instead of one
    running a lab file with a few long tests (a Slurm cluster, a browser) while the other waits.
    """
    slow: dict[Path, bool] = {}
    count: dict[Path, int] = {}
    for item in items:
        name = item.path.name
        if name.endswith("_lab.py") or LAB_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.lab)
        if name in E2E_FILES:
            item.add_marker(pytest.mark.e2e)
        is_slow = item.get_closest_marker("lab") is not None or item.get_closest_marker("e2e") is not None
        slow[item.path] = slow.get(item.path, False) or is_slow
        count[item.path] = count.get(item.path, 0) + 1
    first = {path: i for i, path in enumerate(dict.fromkeys(item.path for item in items))}
    heavy = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: (not slow[item.path], heavy.get(item.path.name, len(heavy)), -count[item.path], first[item.path]))


@pytest.fixture
def job_proc() -> Iterator[subprocess.Popen[bytes]]:
    """A real process standing in for a job (its own session, like a launched one); killed after."""
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()
