"""How many examples a property test draws: its full count in the whole suite, fewer in the quick tier.

``examples(n)`` is ``n`` when the run includes the lab tests (``./scripts/test``, CI), and a third
of it, at least 5 (or ``n`` itself if smaller), in the quick tier (``-m "not lab and not e2e"``:
``./scripts/test --quick``, the edit loop's tier).  The strategies stay the same, and Hypothesis's
example database (``.hypothesis/``) replays a failure either tier found in both.
``COCKPIT_EXAMPLES=full`` draws the full count in any tier, ``COCKPIT_EXAMPLES=quick`` the quick one.

``tests/conftest.py`` sets the tier in ``pytest_configure``, before any test module is imported
(a module's ``@settings`` is read when it is imported).
"""

from __future__ import annotations

import os

#: set by tests/conftest.py: the run is the quick tier
QUICK = False


def quick_tier(leaves_out_lab: bool) -> bool:
    """Whether the run is the quick tier: one whose ``-m`` leaves the lab out, unless COCKPIT_EXAMPLES says."""
    choice = os.environ.get("COCKPIT_EXAMPLES", "")
    if choice in ("full", "quick"):
        return choice == "quick"
    return leaves_out_lab


def examples(n: int) -> int:
    """A property test's ``max_examples``: ``n`` in the whole suite, a third (at least 5) in the quick tier."""
    return max(n // 3, min(n, 5)) if QUICK else n
