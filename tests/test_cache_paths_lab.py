"""clear-cache judges paths as the target sees them, against the lab (real sshd, real sh, realpath
and rm inside the pct emulator's container).

Text cannot see a symlinked parent: each case here passes the config's text checks and is refused
only because the target resolves the path into the workdir, its parent, or a system tree, in the
very command that removes.  Refused paths are asserted to survive.  The system-tree cases run on
the target aim at directories this test creates inside the trees, so a broken guard could only
ever remove those; the real ``/usr/lib/x86_64-linux-gnu``, ``/lib/modules`` and ``/var/lib/dpkg``
are refused by the config's text checks and never reach the target.
"""

from __future__ import annotations

import shlex
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cockpit.core.actions.cache_guard import resolve_cache_paths
from cockpit.core.config import ConfigError
from cockpit.core.events import StageProgress
from cockpit.core.layers import Layer, Status

pytestmark = pytest.mark.lab


@pytest.fixture
def base(lab) -> Iterator[Path]:
    """A fresh directory in the container's persistent workspace (the same path inside and out), with ``wd``."""
    d = lab.workspace() / f"cache-paths-{uuid.uuid4().hex[:8]}"
    (d / "wd").mkdir(parents=True)  # a workdir of its own for the cases that need one elsewhere
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _keep(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "keep").write_text("precious")
    return d / "keep"


def _refused(v, *words: str) -> str:
    fs = v.failed_stage
    assert fs is not None and fs.layer is Layer.CONFIG and fs.name.endswith("measure"), v.summary()
    assert all(w in fs.detail for w in words), fs.detail
    assert "fix [cache] paths" in fs.advice, fs.advice
    return fs.detail


async def test_a_workdir_under_a_symlinked_parent_survives_a_cache_naming_its_real_path(lab, lab_config, engines, base):
    (base / "wslink").symlink_to(base / "real")
    keep = _keep(base / "real" / "proj")
    workdir = f"{base}/wslink/proj"
    cfg = lab_config(job={"workdir": workdir}, cache={"paths": [f"{base}/real/proj"]})  # the text checks cannot tell
    v = await engines(cfg).run_action("clear-cache")
    _refused(v, f"refusing to clear {base}/real/proj (configured as {base}/real/proj): it is the workdir {workdir} "
                f"(resolved {base}/real/proj)", "rule: what the job needs")
    assert keep.read_text() == "precious"


async def test_a_cache_under_a_symlinked_parent_resolving_to_the_workdir_is_refused(lab, lab_config, engines, base):
    keep = _keep(base / "proj")
    (base / "alias").symlink_to(base)
    cfg = lab_config(job={"workdir": f"{base}/proj"}, cache={"paths": [f"{base}/alias/proj"]})
    v = await engines(cfg).run_action("clear-cache")
    _refused(v, f"refusing to clear {base}/proj (configured as {base}/alias/proj): it is the workdir {base}/proj")
    assert keep.read_text() == "precious"
    # a cache inside the workdir, through the same link, is a cache: cleared, the workdir kept
    _keep(base / "proj" / ".inductor")
    cfg = lab_config(job={"workdir": f"{base}/proj"}, cache={"paths": [f"{base}/alias/proj/.inductor"]})
    v = await engines(cfg).run_action("clear-cache")
    assert v.ok, v.summary()
    assert not (base / "proj" / ".inductor").exists() and keep.read_text() == "precious"


async def test_a_cache_holding_the_workdir_is_refused_by_text_and_through_a_link(lab, lab_config, engines, base):
    with pytest.raises(ConfigError, match=r"cache\.paths\[0\].*contains .*what the job needs"):
        lab_config(job={"workdir": f"{base}/real/proj"}, cache={"paths": [f"{base}/real"]})
    keep = _keep(base / "real" / "proj")
    (base / "wslink").symlink_to(base / "real")
    cfg = lab_config(job={"workdir": f"{base}/wslink/proj"}, cache={"paths": [f"{base}/real"]})  # its parent, seen through a link
    v = await engines(cfg).run_action("clear-cache")
    _refused(v, f"it contains the workdir {base}/wslink/proj (resolved {base}/real/proj)")
    assert keep.read_text() == "precious"


@pytest.mark.parametrize("path, tree", [("/usr/lib/x86_64-linux-gnu", "/usr"), ("/lib/modules", "/lib*"),
                                        ("/var/lib/dpkg", "/var/lib")])
def test_system_trees_are_refused_when_the_config_loads(lab, lab_config, path, tree):
    with pytest.raises(ConfigError) as e:
        lab_config(cache={"paths": ["/tmp/torchinductor_root", path]})
    msg = str(e.value)
    assert "cache.paths[1]" in msg and f"is inside {tree}" in msg and "rule: kernel, device and system trees" in msg, msg


async def test_system_trees_and_homes_are_refused_on_the_target_after_the_link_is_resolved(lab, lab_config, engines, base):
    """Each configured path is a link's child, so its text is fine; the target resolves it into a
    system tree or a home.  The preview names the rule and the resolved path; the action removes
    nothing.  The paths resolve to directories made here, all that a broken guard could reach."""
    tag = base.name
    victims = [Path(f"/var/lib/{tag}"), Path(f"/usr/lib/{tag}"), Path(f"/root/{tag}")]
    try:
        keeps = [_keep(d) for d in victims]
        (base / "varlib").symlink_to("/var/lib")
        (base / "lib").symlink_to("/lib")  # /lib → usr/lib on merged-/usr systems: resolved all the way
        (base / "roothome").symlink_to("/root")
        paths = [f"{base}/varlib/{tag}", f"{base}/lib/{tag}", f"{base}/roothome/{tag}"]
        cfg = lab_config(job={"workdir": f"{base}/wd"}, cache={"paths": paths})
        eng = engines(cfg)
        rows, code = await resolve_cache_paths(eng.context())
        assert code == 3, rows
        lib = "/usr" if Path("/lib").resolve() == Path("/usr/lib") else "/lib*"
        got = {(j.configured, j.resolved, j.rule, j.protected) for j in rows}
        assert got == {(paths[0], f"/var/lib/{tag}", "tree", "/var/lib"),
                       (paths[1], str(Path(f"/lib/{tag}").resolve()), "tree", lib),
                       (paths[2], f"/root/{tag}", "home-entry", "/root")}, got
        v = await eng.run_action("clear-cache")
        detail = _refused(v, f"refusing to clear /var/lib/{tag} (configured as {paths[0]}): it lies in the system tree /var/lib",
                          "rule: kernel, device and system trees", "(and 2 more)")
        assert [r["rule"] for r in v.failed_stage.data["refused"]] == ["tree", "tree", "home-entry"], detail
        assert all(k.read_text() == "precious" for k in keeps)
    finally:
        for d in victims:
            shutil.rmtree(d, ignore_errors=True)


async def test_dev_shm_and_tmp_caches_are_cleared_and_a_linked_parent_is_named(lab, lab_config, engines, base):
    shm, tmp = f"/dev/shm/cache-{base.name}", "/tmp/torchinductor_root"
    lab.exec_in(200, f"mkdir -p {shm}/k {tmp}/k && echo x > {shm}/k/f && echo x > {tmp}/k/f")
    _keep(base / "real-cache" / "inductor")
    (base / "clink").symlink_to(base / "real-cache")
    cfg = lab_config(job={"workdir": f"{base}/wd"}, cache={"paths": [shm, tmp, f"{base}/clink/inductor"]})
    try:
        v = await engines(cfg).run_action("clear-cache")
        assert v.ok, v.summary()
        measure = next(s for s in v.stages if s.name.endswith("measure"))
        assert f"{base}/clink/inductor → {base}/real-cache/inductor" in measure.detail, measure.detail
        assert measure.data["resolved"][f"{base}/clink/inductor"] == f"{base}/real-cache/inductor"
        left = lab.exec_in(200, f"ls -d {shm} {tmp} {base}/real-cache/inductor 2>/dev/null; true").stdout
        assert left.strip() == "", left
        assert (base / "clink").is_symlink() and (base / "real-cache").is_dir()  # the link and its directory stay
    finally:
        lab.exec_in(200, f"rm -rf {shm}")


async def test_the_command_that_removes_judges_again(lab, lab_config, engines, base):
    """Between the measuring preview and the removal a parent is swapped for a link that makes the
    cache path the workdir: the removal resolves it again, refuses, and the workdir survives."""
    keep = _keep(base / "proj")
    (base / "p" / "proj").mkdir(parents=True)
    cfg = lab_config(job={"workdir": f"{base}/proj"}, cache={"paths": [f"{base}/p/proj"]})
    eng = engines(cfg)

    def swap(ev) -> None:
        if isinstance(ev, StageProgress) and ev.action == "clear-cache" and ev.stage.name.endswith("measure") and ev.stage.status is Status.OK:
            shutil.rmtree(base / "p")
            (base / "p").symlink_to(base)

    eng.subscribe(swap)
    v = await eng.run_action("clear-cache")
    fs = v.failed_stage
    assert fs is not None and fs.name.endswith("remove") and fs.layer is Layer.CONFIG, v.summary()
    assert f"refusing to clear {base}/proj (configured as {base}/p/proj): it is the workdir {base}/proj" in fs.detail, fs.detail
    assert keep.read_text() == "precious"


async def test_the_confirmation_text_shows_the_resolved_paths(lab, lab_config, engines, base):
    from cockpit.ui.confirmtext import clear_cache_text

    _keep(base / "real-cache")
    (base / "clink").symlink_to(base)
    cfg = lab_config(job={"workdir": f"{base}/wd"}, cache={"paths": [f"{base}/clink/real-cache", "/tmp/nothing-here"]})
    _, before = clear_cache_text(cfg)
    assert f"rm -rf -- {base}/clink/real-cache   # resolved on the target before removal" in before, before
    rows, code = await resolve_cache_paths(engines(cfg).context())
    _, text = clear_cache_text(cfg, rows)
    assert code == 0 and f"rm -rf -- {base}/real-cache   # configured as {base}/clink/real-cache; " in text, text
    assert "# /tmp/nothing-here: absent" in text


def test_slurm_node_local_clearing_applies_the_same_rule(lab, base):
    """The node-local variant (a step on each node, and the batch script's first lines) runs the
    same guard: a cache that is the workdir through a linked parent is refused on the node, and the
    other path, though fine, is not removed either."""
    from types import SimpleNamespace

    from cockpit.core.slurm.cache import batch_clear_lines, node_cache_script, parse_node_cache

    keep, other = _keep(base / "real" / "proj"), _keep(base / "other-cache")
    (base / "wslink").symlink_to(base / "real")
    paths = [f"{base}/other-cache", f"{base}/real/proj"]
    r = lab.exec_in(200, node_cache_script(paths, f"{base}/wslink/proj", ""), timeout=20)
    rows = parse_node_cache(r.stdout, paths)
    assert r.returncode == 3 and [(w, p) for _, w, _, p in rows] == [("refused", f"{base}/real/proj")], (r.stdout, r.stderr)
    assert keep.read_text() == other.read_text() == "precious"
    # the batch script's line carries the same script, with the job's workdir
    cfg = SimpleNamespace(target=SimpleNamespace(runtime="slurm"), slurm=SimpleNamespace(node_local_cache=True, bin=""),
                          cache=SimpleNamespace(paths=paths), job=SimpleNamespace(workdir=f"{base}/wslink/proj"),
                          deploy=SimpleNamespace(dest=""))
    line = batch_clear_lines(cfg)
    assert node_cache_script(paths, f"{base}/wslink/proj", "") in shlex.split(line), line


def test_a_target_that_cannot_resolve_paths_removes_nothing(tmp_path):
    """No realpath and no readlink on the target: the guard cannot judge, so it refuses (a real
    /bin/sh with a PATH holding only the other tools the script uses)."""
    import os
    import subprocess

    from cockpit.core.actions.cache_guard import guard_script, parse_guard, refusal

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "printf", "hostname", "od", "tr", "du", "head", "cut", "rm"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, bin_dir / tool)
    keep = _keep(tmp_path / "cache")
    paths = [str(tmp_path / "cache")]
    r = subprocess.run([str(bin_dir / "sh"), "-c", guard_script(paths, "/w", "", remove=True)], capture_output=True,
                       text=True, env={"PATH": str(bin_dir)}, timeout=20)
    rows = parse_guard(r.stdout, paths)
    assert r.returncode == 3 and [j.rule for j in rows] == ["unresolved"], (r.stdout, r.stderr)
    assert "could not resolve it" in refusal(rows[0], "/w", "") and keep.read_text() == "precious"
