"""clear-cache's one command (cockpit.core.actions.cache_inventory.discover_and_judge): the
inventory and ONE guard run over the found roots and ``[cache] paths``, on a real shell; no target
needed.  A refused discovered root hides none of the configured paths, a refused configured path
is said with the guard's exit status, and the roots are not measured twice."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from cockpit.core.actions.cache_guard import REFUSED_EXIT
from cockpit.core.actions.cache_inventory import discover_and_judge, inventory_and_guard_script
from cockpit.core.remote.base import CommandResult


class ShellCtx:
    """What discover_and_judge needs of an ActionContext: the config's few keys and ``run`` (a local sh)."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.cfg = SimpleNamespace(job=SimpleNamespace(env=env, workdir=str(workdir)), deploy=SimpleNamespace(dest=""))
        self.commands: list[str] = []

    async def run(self, command: str, *, timeout: float = 10.0) -> CommandResult:
        self.commands.append(command)
        r = subprocess.run(["sh", "-c", command], capture_output=True, timeout=timeout)
        return CommandResult(command, r.returncode, r.stdout, r.stderr)


def judge(ctx: ShellCtx, paths: list[str]) -> Any:
    return asyncio.run(discover_and_judge(ctx, None, paths))  # type: ignore[arg-type]


def test_one_command_judges_roots_and_configured_paths(tmp_path: Path) -> None:
    ind, cache = tmp_path / "ind", tmp_path / "cache"
    (ind / "fxgraph").mkdir(parents=True)
    (ind / "fxgraph" / "a").write_bytes(b"x" * 5000)
    cache.mkdir()
    (cache / "b").write_bytes(b"y" * 9000)
    ctx = ShellCtx(tmp_path / "wd", {"TORCHINDUCTOR_CACHE_DIR": str(ind)})
    inv, rows, code = judge(ctx, [str(cache), str(tmp_path / "none")])
    assert len(ctx.commands) == 1 and ctx.commands[0].count("du -sk") == 2  # the inventory's m() and the guard's, once each
    assert code == 0 and [(j.index, j.what) for j in rows] == [(0, "present"), (1, "absent")]
    assert rows[0].kib is not None and rows[0].kib >= 8
    root = next(f for f in inv.roots if f.kind == "inductor")
    j = inv.judged_of(root)
    assert j is not None and j.what == "present" and j.kib is None  # judged, not measured again (the inventory did)


def test_a_refused_root_hides_no_configured_path(tmp_path: Path) -> None:
    wd, cache = tmp_path / "wd", tmp_path / "cache"
    wd.mkdir()
    cache.mkdir()
    ctx = ShellCtx(wd, {"TORCHINDUCTOR_CACHE_DIR": str(wd)})  # the job's inductor cache IS the workdir
    inv, rows, code = judge(ctx, [str(cache)])
    root = next(f for f in inv.roots if f.kind == "inductor")
    j = inv.judged_of(root)
    assert j is not None and j.what == "refused" and j.rule == "workdir"
    assert code == 0 and [(j.configured, j.what) for j in rows] == [(str(cache), "present")]


def test_a_refused_configured_path_is_said_and_others_still_judged(tmp_path: Path) -> None:
    wd, cache = tmp_path / "wd", tmp_path / "cache"
    wd.mkdir()
    cache.mkdir()
    (tmp_path / "link").symlink_to(tmp_path)
    ctx = ShellCtx(wd, {})
    _, rows, code = judge(ctx, [str(tmp_path / "link" / "wd"), str(cache)])  # the workdir through a symlinked parent
    assert code == REFUSED_EXIT
    assert [(j.index, j.what, j.rule) for j in rows] == [(0, "refused", "workdir"), (1, "present", "")]


def test_without_configured_paths_only_the_roots_are_judged(tmp_path: Path) -> None:
    script = inventory_and_guard_script(None, {}, str(tmp_path), "", [])
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30).stdout
    assert [ln.split()[2] for ln in out.splitlines() if ln.startswith("cockpit-cache ")] == ["0", "1"]
    assert "cockpit-guard-exit 0" in out


def _guard(paths: list[str], workdir: Path, *, path_env: str | None = None) -> subprocess.CompletedProcess[str]:
    from cockpit.core.actions.cache_guard import guard_script
    env = None if path_env is None else {"PATH": path_env}
    return subprocess.run(["/bin/sh", "-c", guard_script(paths, str(workdir), "", remove=True, measure=False)],
                          capture_output=True, text=True, env=env, timeout=30)


def test_a_removal_with_nothing_there_resolves_nothing_and_one_with_something_judges_all(tmp_path: Path) -> None:
    from cockpit.core.actions.cache_guard import parse_guard
    a, b = str(tmp_path / "a"), str(tmp_path / "b\tc")
    # realpath and readlink on PATH count their calls: the fast path resolves nothing
    bare, calls = tmp_path / "bin", tmp_path / "calls"
    bare.mkdir()
    for tool in ("realpath", "readlink"):
        real = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        (bare / tool).write_text(f"#!/bin/sh\necho {tool} >> {calls}\nexec {real} \"$@\"\n")
        (bare / tool).chmod(0o755)
    path = f"{bare}:/usr/bin:/bin"
    r = _guard([a, b], tmp_path / "wd", path_env=path)
    assert r.returncode == 0, r.stderr
    assert [(j.index, j.what, j.resolved) for j in parse_guard(r.stdout, [a, b])] == [(0, "absent", a), (1, "absent", b)]
    assert not calls.exists(), calls.read_text()
    (tmp_path / "b\tc").mkdir()  # one there: every path is judged again, and the one there removed
    r = _guard([a, b], tmp_path / "wd", path_env=path)
    assert r.returncode == 0, r.stderr
    assert [(j.index, j.what) for j in parse_guard(r.stdout, [a, b])] == [(0, "absent"), (1, "removed")]
    assert calls.exists()  # judged: resolved on the target
    assert not (tmp_path / "b\tc").exists()
    (tmp_path / "a").symlink_to(tmp_path / "wd")  # a link is there too: judged (and refused), never removed
    r = _guard([a], tmp_path / "wd")
    assert r.returncode == 3 and [j.what for j in parse_guard(r.stdout, [a])] == ["refused"], (r.returncode, r.stdout)
    assert (tmp_path / "a").is_symlink()
