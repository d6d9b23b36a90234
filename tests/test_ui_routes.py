"""The app's key actions are delegations made once (ui/routes.py): each controller's ``action_*``,
and every engine action of the key registry through ``actions.act(id)``."""

from __future__ import annotations

import pytest

from cockpit.core.keymap import ACTIONS
from cockpit.ui import routes
from cockpit.ui.app import CockpitApp


def test_every_controller_action_is_a_method_of_the_app():
    for attr, cls in routes.CONTROLLERS.items():
        for name in vars(cls):
            if name.startswith("action_"):
                method = getattr(CockpitApp, name)
                assert method.__name__ == name and f"``{attr}.{name}``" in (method.__doc__ or ""), (attr, name)


def test_an_engine_key_without_code_of_its_own_takes_the_generic_path():
    own = {name for cls in routes.CONTROLLERS.values() for name in vars(cls) if name.startswith("action_")}
    engine_keys = [a for a in ACTIONS if a.engine is not None]
    assert {a.id for a in engine_keys} >= {"attempt", "deploy", "verify", "stop", "reboot"}
    for a in engine_keys:
        name = f"action_{a.action}"
        assert name not in own, a.id
        assert f"actions.act({a.engine!r})" in (getattr(CockpitApp, name).__doc__ or ""), a.id


def test_two_controllers_with_the_same_action_are_refused(monkeypatch):
    class Other:
        def action_zoom(self) -> None: ...

    monkeypatch.setitem(routes.CONTROLLERS, "other", Other)
    with pytest.raises(TypeError, match="action_zoom"):
        routes.routes()
