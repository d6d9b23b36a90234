"""The removal of files an earlier deploy sent (:mod:`cockpit.core.actions.deploy_stale`), run by a
real ``sh`` in a real directory: each file goes only while its content is what cockpit sent, and
names a shell or a command line would trip over are removed as themselves."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from cockpit.core.actions.deploy_stale import remove_command

NAMES = ["plain.py", "with space.py", "new\nline.py", "quote'\"$(touch pwned).py", "-leading.py", "sub/dir/deep.py", "ünïcode.py"]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("shell", ["dash", "bash"])
def test_only_files_still_as_deployed_go_whatever_their_names(tmp_path: Path, shell: str) -> None:
    if not shutil.which(shell):
        pytest.skip(f"{shell} not installed")
    sent = {}
    for n in NAMES:
        p = tmp_path / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(f"content of {n!r}\n".encode())
        sent[n] = _sha(p.read_bytes())
    (tmp_path / "plain.py").write_bytes(b"edited in the target since\n")  # not cockpit's content any more
    (tmp_path / "link.py").symlink_to(tmp_path / "with space.py")
    sent["link.py"] = sent["with space.py"]  # a link is never followed to remove what it points at
    (tmp_path.parent / "outside.py").write_bytes(b"x")
    sent["../outside.py"] = _sha(b"x")  # never leaves dest, even as cockpit's own content
    sent["gone.py"] = _sha(b"already gone\n")
    r = subprocess.run([shell, "-c", remove_command(str(tmp_path), sent)], capture_output=True, timeout=30)
    removed = sorted(p.decode() for p in r.stdout.split(b"\0") if p)
    assert removed == sorted(n for n in NAMES if n != "plain.py"), removed
    assert (tmp_path / "plain.py").read_bytes() == b"edited in the target since\n" and (tmp_path / "link.py").is_symlink()
    assert (tmp_path.parent / "outside.py").exists() and not (tmp_path / "pwned").exists() and not any((tmp_path / n).exists() for n in NAMES if n != "plain.py")
