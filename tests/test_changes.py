"""What changed between attempts: snapshots in a content-addressed store and exact diffs."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from cockpit.core.changes import (
    deployed_manifest,
    diff_source,
    load_manifest,
    read_diff,
    record_attempt_changes,
    summarise,
)
from cockpit.core.journal import Journal

EXCLUDE = [".git", "__pycache__", "*.pyc", ".cockpit"]

TRAIN = "".join(f"line {i}\n" for i in range(1, 41))


@pytest.fixture
def setup(tmp_path: Path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "train.py").write_text(TRAIN)
    (src / "drafter.py").write_text("def draft():\n    return 1\n")
    (src / "pkg" / "__init__.py").write_text("")
    (src / "weights.bin").write_bytes(bytes(range(256)) * 4)
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "x.pyc").write_bytes(b"\0junk")
    j = Journal(tmp_path / "state" / "journal.jsonl")
    return src, j


def attempt(j: Journal, note: str = "h") -> int:
    return j.start_attempt(note, "t")


def body(text: str) -> list[str]:
    """The +/- lines of a unified diff, without file headers."""
    return [ln for ln in text.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++ ", "--- "))]


def objects(jdir: Path) -> set[str]:
    return {p.name for p in (jdir / "objects").rglob("*") if p.is_file() and not p.name.startswith(".")}


def test_first_snapshot_then_exact_diff_of_the_edited_lines(setup):
    src, j = setup
    jdir = j.path.parent
    a1 = attempt(j)
    d1 = record_attempt_changes(j, a1, src, EXCLUDE, max_bytes=200_000)
    assert d1["first"] and d1["base"] is None and d1["total_files"] == 4  # __pycache__ excluded
    assert summarise(d1).startswith("first snapshot (4 files)")
    assert j.get(a1).diff is None  # nothing to compare with: no diff event
    n_objects = len(objects(jdir))
    assert n_objects == 4  # train, drafter, weights and the empty __init__.py: four distinct contents

    # the edit: two lines changed in train.py, one added at the end, drafter.py untouched
    lines = TRAIN.splitlines(keepends=True)
    lines[9] = "line 10 — serialise the first compile\n"
    lines[29] = "line 30 edited\n"
    lines.append("line 41 new\n")
    (src / "train.py").write_text("".join(lines))
    a2 = attempt(j, "h (#2)")
    d2 = record_attempt_changes(j, a2, src, EXCLUDE, max_bytes=200_000)
    assert d2["base"] == a1 and d2["files"] == ["train.py"]
    assert (d2["added"], d2["removed"]) == (3, 2)
    text = read_diff(jdir, a2)
    assert body(text) == ["-line 10", "+line 10 — serialise the first compile", "-line 30", "+line 30 edited", "+line 41 new"]
    assert "--- a/train.py" in text and "+++ b/train.py" in text
    rec = j.get(a2).diff
    assert rec == {"files": ["train.py"], "added": 3, "removed": 2, "diff_path": str(jdir / "diffs" / f"attempt-{a2}.diff")}
    assert summarise(d2) == "1 file, +3 −2: train.py"
    # unchanged files cost nothing: exactly one new object (the new train.py)
    assert len(objects(jdir)) == n_objects + 1
    assert json.loads((jdir / "diffs" / f"attempt-{a2}.json").read_text())["files"] == ["train.py"]


def test_added_removed_binary_mode_and_no_newline(setup):
    src, j = setup
    a1 = attempt(j)
    record_attempt_changes(j, a1, src, EXCLUDE)
    (src / "drafter.py").unlink()
    (src / "pkg" / "new.py").write_text("x = 1\ny = 2")  # no newline at the end
    blob = bytearray((src / "weights.bin").read_bytes())
    blob[5] ^= 0xFF
    blob[700] ^= 0x01
    (src / "weights.bin").write_bytes(bytes(blob) + b"\x00\x01")
    os.chmod(src / "train.py", 0o755)
    a2 = attempt(j)
    d = record_attempt_changes(j, a2, src, EXCLUDE)
    by = {c["path"]: c for c in d["changes"]}
    assert set(by) == {"drafter.py", "pkg/new.py", "weights.bin", "train.py"}
    assert by["drafter.py"]["status"] == "removed" and by["drafter.py"]["removed"] == 2
    assert by["pkg/new.py"]["status"] == "added" and by["pkg/new.py"]["added"] == 2
    assert by["weights.bin"]["binary"] and by["weights.bin"]["detail"].startswith("binary, 4 bytes changed")
    assert by["train.py"]["status"] == "mode" and "100644 → 100755" in by["train.py"]["detail"]
    assert (d["added"], d["removed"]) == (2, 2)
    text = read_diff(j.path.parent, a2)
    assert "new file mode 100644\n--- /dev/null\n+++ b/pkg/new.py" in text
    assert "+y = 2\n\\ No newline at end of file\n" in text
    assert "deleted file mode 100644\n--- a/drafter.py\n+++ /dev/null" in text
    assert "Binary files a/weights.bin and b/weights.bin differ (binary, 4 bytes changed" in text
    assert "old mode 100644\nnew mode 100755" in text
    assert summarise(d) == "4 files, +2 −2: drafter.py, pkg/new.py, train.py, weights.bin"


def test_large_text_file_gets_counts_not_a_diff(setup):
    src, j = setup
    big = "".join(f"row {i}\n" for i in range(5000))
    (src / "big.txt").write_text(big)
    a1 = attempt(j)
    record_attempt_changes(j, a1, src, EXCLUDE, max_bytes=1000)
    (src / "big.txt").write_text(big.replace("row 42\n", "row 42 changed\n") + "row 5000\n")
    a2 = attempt(j)
    d = record_attempt_changes(j, a2, src, EXCLUDE, max_bytes=1000)
    c = d["changes"][0]
    assert c["truncated"] and "too large for a diff" in c["detail"] and (c["added"], c["removed"]) == (2, 1)
    text = read_diff(j.path.parent, a2)
    assert "row 42" not in text and "too large for a diff" in text


def test_diff_against_the_previous_attempt_that_deployed(setup):
    src, j = setup
    a1 = attempt(j)
    record_attempt_changes(j, a1, src, EXCLUDE)
    attempt(j)  # attempt 2 never deployed (untested): no snapshot
    (src / "drafter.py").write_text("def draft():\n    return 2\n")
    a3 = attempt(j)
    d = record_attempt_changes(j, a3, src, EXCLUDE)
    assert d["base"] == a1 and body(read_diff(j.path.parent, a3)) == ["-    return 1", "+    return 2"]
    # a re-run of the same source: a diff event with nothing in it
    a4 = attempt(j)
    d4 = record_attempt_changes(j, a4, src, EXCLUDE)
    assert d4["files"] == [] and d4["diff_path"] is None and summarise(d4) == f"no changes since attempt {a3}"
    assert j.get(a4).diff == {"files": [], "added": 0, "removed": 0, "diff_path": None}


def test_deployed_manifest_fast_path_and_race(setup):
    src, j = setup
    jdir = j.path.parent
    sha = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    man = {rel: sha(src / rel) for rel in ("train.py", "drafter.py", "pkg/__init__.py", "weights.bin")}
    a1 = attempt(j)
    record_attempt_changes(j, a1, src, EXCLUDE, deployed=man)
    assert deployed_manifest(jdir, a1) == man
    # drafter.py edited after deploy packed it: the deployed content was never stored → raced
    (src / "drafter.py").write_text("edited after the deploy\n")
    man2 = dict(man, **{"drafter.py": hashlib.sha256(b"what deploy saw\n").hexdigest()})
    a2 = attempt(j)
    d = record_attempt_changes(j, a2, src, EXCLUDE, deployed=man2)
    assert d["raced"] == ["drafter.py"]
    assert load_manifest(jdir, a2)["files"]["drafter.py"]["sha256"] == man2["drafter.py"]
    assert "content not captured" in d["changes"][0]["detail"]


def test_diff_source_shows_what_the_next_attempt_would_deploy(setup):
    src, j = setup
    jdir = j.path.parent
    assert diff_source(jdir, src, EXCLUDE)[0]["base"] is None
    a1 = attempt(j)
    record_attempt_changes(j, a1, src, EXCLUDE)
    (src / "drafter.py").write_text("def draft():\n    return 3\n")
    d, text = diff_source(jdir, src, EXCLUDE)
    assert d["base"] == a1 and d["files"] == ["drafter.py"] and body(text) == ["-    return 1", "+    return 3"]
    assert not (jdir / "manifests" / "attempt-None.json").exists()


def test_io_errors_never_raise(setup, tmp_path: Path):
    src, j = setup
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the journal directory should be")
    jj = Journal(blocker / "journal.jsonl")
    d = record_attempt_changes(jj, 1, src, EXCLUDE)
    assert "error" in d and summarise(d).startswith("could not record the changes")


def test_summarise_shapes():
    assert summarise(None) == "no diff"
    many = {"files": [f"f{i}.py" for i in range(6)], "added": 9, "removed": 1, "base": 1}
    assert summarise(many) == "6 files, +9 −1: f0.py, f1.py, f2.py, f3.py, … 2 more"


def test_a_damaged_object_is_reported_not_diffed(setup):
    from cockpit.core.changes import object_path

    src, j = setup
    jdir = j.path.parent
    a1 = attempt(j)
    record_attempt_changes(j, a1, src, EXCLUDE)
    sha = load_manifest(jdir, a1)["files"]["drafter.py"]["sha256"]
    object_path(jdir, sha).write_text("torn")
    (src / "drafter.py").write_text("def draft():\n    return 2\n")
    d = record_attempt_changes(j, attempt(j), src, EXCLUDE)
    assert d["files"] == ["drafter.py"] and "content not captured" in d["changes"][0]["detail"]
