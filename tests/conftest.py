"""Shared fixtures.  The developer's own config and data never leak into a test run."""

from __future__ import annotations

import os

import pytest

try:
    from tests.lab.fixtures import lab  # noqa: F401  (session-scoped real sshd + emulated Proxmox host)
except ImportError:  # pragma: no cover - while the lab is being built
    pass


@pytest.fixture(autouse=True)
def _isolate(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.delenv("COCKPIT_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    yield


@pytest.fixture
def lab_config(lab, tmp_path):
    """``make(**overrides) -> Config``: a cockpit config for the lab, written to tmp_path/cockpit.toml.

    The deploy source holds one file (an attempt with nothing to deploy is a config failure);
    the lab is put back to its default state afterwards.
    """
    from cockpit.config import load_config

    (lab.dir / "src").mkdir(exist_ok=True)
    (lab.dir / "src" / "train.py").write_text("print('the code under test')\n")

    def make(**overrides):
        path = tmp_path / "cockpit.toml"
        lab.write_config(path, **overrides)
        return load_config(path)

    yield make
    lab.reset()


def pytest_report_header(config):
    return f"cockpit tests: CI={os.environ.get('CI', '')}"
