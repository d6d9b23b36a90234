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


def pytest_report_header(config):
    return f"cockpit tests: CI={os.environ.get('CI', '')}"
