"""Deploy: symlinks followed inside the source, refused outside it (unless asked), loops caught;
any file name deployed and verified by a NUL-separated remote manifest.  Against the lab over real
SSH where it matters (the container sees the same file system, so what arrived is read directly)."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from cockpit.core.actions.base import ActionContext
from cockpit.core.actions.deploy import (
    NO_ZERO,
    _pack,
    checksum_command,
    collect_tree,
    portable_checksum_command,
    printf_literal,
    remote_checksums,
)
from cockpit.core.hashing import file_sha256
from cockpit.core.layers import Layer, Status

#: names a file system allows and a shell or sha256sum's escaping would trip over
HOSTILE_NAMES = [
    "back\\slash.py",
    "sp ace.py",
    "new\nline.py",
    "quo'te\".py",
    "-leading-dash.py",
    "--help",
    "$(touch MARK).py",
    "`touch MARK`.py",
    "semi;colon.py",
    "tab\there.py",
    "uni\u00e9\u4e2d.py",
    os.fsdecode(b"latin1-\xe9.py"),  # not UTF-8: kept as bytes
    "*star?.py",
]


def _write(p: Path, data: str | bytes) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data if isinstance(data, bytes) else os.fsencode(data))
    return p


def make_tree(root: Path) -> Path:
    """A source with every hostile name, in the root and in a subdirectory, and links inside it."""
    _rm(root)
    for n in HOSTILE_NAMES:
        _write(root / n, b"content of " + os.fsencode(n))
        _write(root / "pkg" / n, b"nested " + os.fsencode(n))
    _write(root / "lib" / "real.py", "REAL = 1\n")
    os.symlink("lib/real.py", root / "alias.py")  # relative link to a file inside
    os.symlink(str(root / "lib"), root / "lib-abs")  # absolute link to a directory inside
    os.symlink("../lib", root / "pkg" / "lib-rel")  # relative link to a sibling directory
    return root


# -- the walk, locally --------------------------------------------------------------------------------


def test_links_inside_are_followed_and_names_kept(tmp_path: Path) -> None:
    tree = collect_tree(make_tree(tmp_path / "src"), [])
    assert tree.problems == []
    for n in HOSTILE_NAMES:
        assert n in tree.files and f"pkg/{n}" in tree.files
    for rel in ("alias.py", "lib-abs/real.py", "pkg/lib-rel/real.py", "lib/real.py"):
        assert tree.files[rel].read_text() == "REAL = 1\n"
    # the tar holds regular files only: a link would point at this machine's paths
    with tarfile.open(fileobj=io.BytesIO(_pack(tree.files))) as tar:
        members = tar.getmembers()
    assert all(m.isfile() for m in members) and len(members) == len(tree.files)
    assert os.fsdecode(b"latin1-\xe9.py") in {m.name for m in members}


def test_outside_links_are_refused_unless_asked(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src / "train.py", "x = 1\n")
    _write(tmp_path / "shared" / "util.py", "U = 2\n")
    os.symlink(str(tmp_path / "shared" / "util.py"), src / "util.py")
    os.symlink("../shared", src / "shared")
    tree = collect_tree(src, [])
    assert sorted((p.rel, p.kind) for p in tree.refused) == [("shared", "outside"), ("util.py", "outside")]
    assert "util.py" not in tree.files
    tree = collect_tree(src, [], follow_symlinks=True)
    assert tree.problems == [] and tree.files["util.py"].read_text() == "U = 2\n" and "shared/util.py" in tree.files


def test_loops_are_caught_even_when_following(tmp_path: Path) -> None:
    src = tmp_path / "box" / "src"
    _write(src / "a" / "f.py", "1\n")
    os.symlink(".", src / "self")  # the directory that holds it
    os.symlink("..", src / "a" / "up")  # an ancestor
    os.symlink("cyc2", src / "cyc1")  # a cycle of links: ELOOP
    os.symlink("cyc1", src / "cyc2")
    os.symlink(str(tmp_path / "box"), src / "outer")  # outside, and the source's parent
    for follow in (False, True):
        tree = collect_tree(src, [], follow_symlinks=follow)
        kinds = {p.rel: p.kind for p in tree.problems}
        assert kinds["self"] == kinds["a/up"] == kinds["cyc1"] == kinds["cyc2"] == "loop"
        assert kinds["outer"] == "loop"  # following it would walk the source again, inside itself
        assert tree.files == {"a/f.py": src / "a" / "f.py"}


def test_dangling_and_excluded_links(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src / "train.py", "x\n")
    _write(src / ".venv" / "big.bin", "x" * 100)
    os.symlink("user@host.1234:99", src / ".#train.py")  # an Emacs lock file
    os.symlink(".venv", src / "venv")  # a second name for an excluded directory
    tree = collect_tree(src, [".venv"])
    assert [(p.rel, p.kind) for p in tree.problems] == [(".#train.py", "dangling")] and tree.refused == []
    assert list(tree.files) == ["train.py"]


@pytest.mark.parametrize("shell", ["dash", "bash"])
def test_printf_literal_gives_back_every_byte(shell: str) -> None:
    import shutil
    import subprocess

    if not shutil.which(shell):
        pytest.skip(f"{shell} not installed")
    data = bytes(range(256)) + b"\0-x%d%%s\\'\"" + b"".join(os.fsencode(n) + b"\0" for n in HOSTILE_NAMES)
    lit = printf_literal(b"-" + data)
    assert lit.isascii() and lit.count("'") == 2 and "%" not in lit and not lit.startswith("'-")
    r = subprocess.run([shell, "-c", f"printf {lit}"], capture_output=True, timeout=10)
    assert (r.returncode, r.stdout) == (0, b"-" + data)


# -- against the lab --------------------------------------------------------------------------------

pytestmark_lab = pytest.mark.lab


def _cfg(lab, lab_config, src: Path, dest: str, **deploy):
    return lab_config(deploy={"source": str(src), "dest": dest, "exclude": [], **deploy})


@pytestmark_lab
async def test_hostile_names_and_inside_links_deploy_and_verify(lab, lab_config, engines, tmp_path: Path, monkeypatch) -> None:
    src = make_tree(lab.dir / "deploy-hostile-src")
    dest = lab.workspace(200) / "deploy-hostile"
    try:
        eng = engines(_cfg(lab, lab_config, src, str(dest)))
        v = await eng.run_action("deploy")
        stages = {s.name: s for s in v.stages}
        assert v.failed_stage is None, [(s.name, s.status.value, s.detail) for s in v.stages]
        n = len(collect_tree(src, []).files)
        assert stages["checksums"].detail == f"all {n} files match (sha256)"
        for n_ in HOSTILE_NAMES:  # every name arrived as itself, as a regular file
            for rel in (n_, f"pkg/{n_}"):
                p = os.path.join(os.fsencode(dest), os.fsencode(rel))
                assert not os.path.islink(p) and os.path.isfile(p), rel
        for rel in ("alias.py", "lib-abs/real.py", "pkg/lib-rel/real.py"):
            assert not os.path.islink(dest / rel) and (dest / rel).read_text() == "REAL = 1\n"
            assert not os.path.islink(dest / rel.split("/")[0])
        assert not list(Path("/").glob("MARK")) and not (dest / "MARK").exists() and not (lab.workspace(200) / "MARK").exists()
        # the check is real: a changed file with a hard name is caught by name, the rest still match
        ctx = ActionContext(eng.cfg, eng.transport)
        rels = sorted(collect_tree(src, []).files)
        manifest = {r: file_sha256(src / r) for r in rels}
        (dest / "back\\slash.py").write_text("tampered")
        os.unlink(dest / "pkg" / "new\nline.py")
        want = ["back\\slash.py", "pkg/new\nline.py"]
        remote = await remote_checksums(ctx, str(dest), rels)
        assert [r for r in rels if remote.get(r) != manifest[r]] == want
        monkeypatch.setattr("cockpit.core.actions.deploy.CHUNK_CHARS", 300)  # many commands: the same answer
        remote = await remote_checksums(ctx, str(dest), rels)
        assert [r for r in rels if remote.get(r) != manifest[r]] == want
        # a target whose sha256sum has no -z (busybox): the portable path gives the same answer
        fake = lab.dir / "deploy-no-z-bin"
        fake.mkdir(exist_ok=True)
        (fake / "sha256sum").write_text('#!/bin/sh\nfor a; do [ "$a" = -z ] && { echo "sha256sum: unrecognized option: z" >&2; exit 1; }; done\n'
                                        'exec /usr/bin/sha256sum "$@"\n')
        (fake / "sha256sum").chmod(0o755)
        busybox_like = WithPath(eng.transport, fake)
        assert (await busybox_like.run(checksum_command(str(dest), rels[:2]))).exit_code == NO_ZERO
        remote = await remote_checksums(ActionContext(eng.cfg, busybox_like), str(dest), rels)  # type: ignore[arg-type]
        assert len(remote) == len(rels) - 1 and [r for r in rels if remote.get(r) != manifest[r]] == want
        res = await eng.transport.run(portable_checksum_command(str(dest), rels), timeout=60)
        digests = res.stdout.decode().split("\n")
        assert res.exit_code == 0 and digests[: len(rels)] == [
            "-" if r == "pkg/new\nline.py" else file_sha256(dest / r) for r in rels]
    finally:
        _rm(dest)


@pytestmark_lab
async def test_outside_link_is_refused_in_the_config_layer(lab, lab_config, engines) -> None:
    src = lab.dir / "deploy-out-src"
    _write(src / "train.py", "x = 1\n")
    _write(lab.dir / "deploy-out-shared" / "util.py", "U = 2\n")
    _relink(lab.dir / "deploy-out-shared" / "util.py", src / "util.py")
    dest = lab.workspace(200) / "deploy-out"
    try:
        v = await engines(_cfg(lab, lab_config, src, str(dest))).run_action("deploy")
        f = v.failed_stage
        assert f is not None and f.name == "source" and f.layer is Layer.CONFIG
        assert "'util.py'" in f.detail and "points outside the deploy source" in f.detail
        assert "follow_symlinks = true" in f.advice and "[deploy] exclude" in f.advice
        assert [s.status for s in v.stages if s.name in ("upload", "checksums")] == [Status.NOT_REACHED] * 2
        assert not dest.exists()  # nothing was sent
    finally:
        _rm(dest)


@pytestmark_lab
async def test_follow_symlinks_deploys_the_outside_target_as_a_file(lab, lab_config, engines) -> None:
    src = lab.dir / "deploy-follow-src"
    _write(src / "train.py", "x = 1\n")
    _write(lab.dir / "deploy-follow-shared" / "util.py", "U = 2\n")
    _relink(lab.dir / "deploy-follow-shared" / "util.py", src / "util.py")
    dest = lab.workspace(200) / "deploy-follow"
    try:
        v = await engines(_cfg(lab, lab_config, src, str(dest), follow_symlinks=True)).run_action("deploy")
        assert v.failed_stage is None, v.summary()
        assert not os.path.islink(dest / "util.py") and (dest / "util.py").read_text() == "U = 2\n"
        # a loop is refused whatever the setting
        _relink(Path(".."), src / "up")
        v = await engines(_cfg(lab, lab_config, src, str(dest), follow_symlinks=True)).run_action("deploy")
        assert v.failed_stage is not None and v.failed_stage.layer is Layer.CONFIG and "'up' -> '..' loops" in v.failed_stage.detail
    finally:
        _rm(dest)


class WithPath:
    """The real transport, with a directory of stand-ins first on the PATH of every command."""

    def __init__(self, inner, path: Path) -> None:
        self.inner, self.path = inner, path

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    async def run(self, command: str, *, timeout: float = 10.0):
        import shlex

        return await self.inner.run(f"PATH={shlex.quote(str(self.path))}:$PATH; export PATH; {command}", timeout=timeout)


def _relink(target: Path, link: Path) -> None:
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(str(target), link)


def _rm(p: Path) -> None:
    import shutil

    shutil.rmtree(os.fsencode(p), ignore_errors=True)
