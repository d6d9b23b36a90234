"""The snapshot store's garbage collection: only objects no manifest names, only old ones, at most
once a day; a manifest that cannot be read removes nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path

from cockpit.core.changes.gc import collect, maybe_collect
from cockpit.core.changes.store import object_path, snapshot


def _stray(jd: Path, name: str, age_s: float) -> Path:
    p = object_path(jd, name)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"x" * 100)
    t = time.time() - age_s
    os.utime(p, (t, t))
    return p


def test_unreferenced_old_objects_go_the_rest_stay(tmp_path: Path) -> None:
    src, jd = tmp_path / "src", tmp_path / "j"
    src.mkdir()
    (src / "train.py").write_text("print(1)\n")
    m1 = snapshot(jd, 1, src)
    (src / "train.py").write_text("print(2)\n")
    m2 = snapshot(jd, 2, src)
    kept = [object_path(jd, m["files"]["train.py"]["sha256"]) for m in (m1, m2)]
    for p in kept:  # referenced objects stay however old they are
        os.utime(p, (0, 0))
    old, new = _stray(jd, "a" * 64, 3 * 86400), _stray(jd, "b" * 64, 60)
    assert collect(jd) == (1, 100)
    assert not old.exists() and new.exists() and all(p.exists() for p in kept)


def test_an_unreadable_manifest_removes_nothing_and_the_stamp_limits_runs(tmp_path: Path) -> None:
    jd = tmp_path / "j"
    old = _stray(jd, "c" * 64, 3 * 86400)
    (jd / "manifests").mkdir()
    (jd / "manifests" / "attempt-1.json").write_text("{not json")
    assert collect(jd) == (0, 0) and old.exists()
    (jd / "manifests" / "attempt-1.json").unlink()
    assert maybe_collect(jd) == (1, 100) and not old.exists()
    _stray(jd, "d" * 64, 3 * 86400)
    assert maybe_collect(jd) is None  # ran less than a day ago


def test_the_stamp_is_private_like_the_store(tmp_path: Path) -> None:
    jd = tmp_path / "j"
    _stray(jd, "e" * 64, 60)
    maybe_collect(jd)
    assert (jd / "objects" / ".gc-stamp").stat().st_mode & 0o777 == 0o600
