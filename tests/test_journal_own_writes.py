"""A journal's own writes join its view as they are written (no read parses them back): the view
must stay exactly what a fresh reader of the file sees, with another writer on the same file, a
torn last line, odd text (escapes, long lines, secrets, lone surrogates) and a replaced file."""

from __future__ import annotations

import os
from pathlib import Path

from cockpit.core.journal import Journal
from cockpit.core.layers import Evidence, Layer, Outcome, Stage, Status

ODD = ["plain", "\x1b[31mred\x1b[0m and a bell \x07", "x" * 5000, "hf_" + "a" * 30, "lone \ud800 surrogate",
       "line one\nline two\r\nprogress 10%\rprogress 100%", "tab\tand ünïcode 日本", "token: abcdefghijkl"]


def _stage(i: int) -> Stage:
    text = ODD[i % len(ODD)]
    return Stage(f"stage {i} {text[:20]}", Status.OK if i % 3 else Status.FAIL, Layer.APP, text,
                 Evidence(f"cmd {text[:30]}", i, text), data={"i": i, "text": text, "nested": {"k": [text, 1.5, None]}})


def _same_as_a_fresh_reader(j: Journal) -> None:
    fresh = Journal(j.path)
    assert list(j.events()) == list(fresh.events())
    assert [r.to_dict() for r in j.attempts()] == [r.to_dict() for r in fresh.attempts()]
    assert j.bad_lines == fresh.bad_lines
    for r in fresh.attempts():
        assert j.get(r.id) == fresh.get(r.id)


def test_own_writes_and_another_writers_agree_with_a_fresh_read(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    a, b = Journal(path), Journal(path)
    ids = []
    for k in range(4):
        w = a if k % 2 == 0 else b
        n = w.start_attempt(f"attempt {k} {ODD[k]}", "lab", code_version={"sha": "abc", "files": [ODD[k]]})
        ids.append(n)
        for i in range(len(ODD)):
            (a if i % 2 else b).record_stage(n, "verify", _stage(i))  # the two writers interleave
        w.record_job(n, {"pid": 100 + k, "log_path": f"/tmp/{k}.log", "cmd": ODD[k]})
        w.finish_attempt(n, Outcome.PASSED if k % 2 else Outcome.FAILED, layer=Layer.APP, summary=ODD[k])
    assert ids == [1, 2, 3, 4]
    _same_as_a_fresh_reader(a)
    _same_as_a_fresh_reader(b)
    assert len(list(a.events())) == 4 * (3 + len(ODD))  # each event once: none missed, none read twice


def test_after_a_torn_line_and_a_replaced_file_the_view_still_matches(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    j = Journal(path)
    n = j.start_attempt("before the tear", "lab")
    j.record_stage(n, "deploy", _stage(1))
    with open(path, "ab") as f:
        f.write(b'{"v": 1, "event": "stage", "attem')  # a writer died mid-line
    j.record_stage(n, "deploy", _stage(2))  # the torn fragment becomes a line of its own
    j.record_stage(n, "deploy", _stage(3))
    _same_as_a_fresh_reader(j)
    assert j.bad_lines == 1
    os.replace(path, tmp_path / "old.jsonl")  # rotated away: a new file under the same name
    m = j.start_attempt("after the rotation", "lab")
    j.record_stage(m, "deploy", _stage(4))
    _same_as_a_fresh_reader(j)
    assert [r.note for r in j.attempts()] == ["after the rotation"]
