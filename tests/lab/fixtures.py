"""pytest fixtures for the lab.  In ``tests/conftest.py``::

    from tests.lab.fixtures import lab  # noqa: F401

``lab`` is session-scoped: one sshd and one running container 200 (reaping init) for the whole
session.  Tests that break something (stop sshd, change the host key, stop the container, set a GPU
failure mode) put it back with ``lab.reset()``, or use ``fresh_lab`` which does that afterwards.
When sshd or unshare cannot work here, the fixture skips with the reason, except under CI
(``CI`` set to true/1), where a missing lab is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from .sshd import DEFAULT_CT, Lab, lab_unavailable_reason


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require_lab() -> None:
    """Skip (or, under CI, fail) when the lab cannot run on this machine."""
    reason = lab_unavailable_reason()
    if reason:
        if _in_ci():
            pytest.fail(f"the SSH lab is required in CI: {reason}", pytrace=False)
        pytest.skip(f"SSH lab unavailable: {reason}")


_shared: Lab | None = None
_users = 0


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    """A running lab: real sshd on 127.0.0.1, container 200 running (reaping init).

    One Lab per process even when this fixture is registered twice (conftest and a test module
    both importing it): the instances share it, and the last one to finish closes it.
    """
    global _shared, _users
    require_lab()
    if _shared is None:
        _shared = Lab().start()
        _shared.add_container(DEFAULT_CT)
    _users += 1
    try:
        yield _shared
    finally:
        _users -= 1
        if _users == 0:
            _shared.close()
            _shared = None


@pytest.fixture
def fresh_lab(lab: Lab) -> Iterator[Lab]:
    """The session lab, put back to its default state after the test."""
    yield lab
    lab.reset()
