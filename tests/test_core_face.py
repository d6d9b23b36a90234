"""The core's public face: ``EngineFace`` is exactly what the front ends use of the engine, the engine
has all of it, and ``cockpit.core`` loads its public names lazily."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import cockpit.core as core
from cockpit.core.face import EngineFace
from tests.test_ui_support import local_config, make_engine

ROOT = Path(__file__).resolve().parents[1]


def face_members() -> set[str]:
    names = set(EngineFace.__annotations__) | {n for n in vars(EngineFace) if not n.startswith("_")}
    return names


def test_the_engine_has_every_member_of_its_face(tmp_path):
    eng = make_engine(local_config(tmp_path))
    missing = sorted(n for n in face_members() if not hasattr(eng, n))
    assert missing == []


def test_the_face_is_exactly_what_the_front_ends_use_of_the_engine():
    used: set[str] = set()
    for sub in ("ui", "cli"):
        for p in (ROOT / "cockpit" / sub).rglob("*.py"):
            used |= set(re.findall(r"\b(?:engine|eng)\.([a-z_]+)\b", p.read_text()))
    used -= {"py", "Engine"}  # ``cockpit.core.engine.Engine`` in a docstring, the module's own name
    assert sorted(used - face_members()) == []  # nothing beyond the face
    assert sorted(face_members() - used) == []  # and nothing in it that no front end uses


def test_public_names_resolve_and_load_lazily():
    for name in core.__all__:
        assert getattr(core, name) is not None, name
    code = "import sys, cockpit.core; print(sorted(m for m in sys.modules if m.startswith('cockpit.core.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"
    code = "import sys; from cockpit.core import Outcome; print('cockpit.core.engine' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "False"  # one name imports its own module, not the engine
