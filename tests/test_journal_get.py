"""Journal.get folds the one attempt's events (indexed as they are read), not the whole journal's,
and answers exactly what the full fold does: written, torn-tail and queued events alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.core.journal import Journal
from cockpit.core.journal import records as records_mod
from cockpit.core.layers import Layer, Outcome, Stage, Status


def _fill(j: Journal, n: int) -> list[int]:
    ids = []
    for k in range(n):
        a = j.start_attempt(f"a{k}", "t")
        for i in range(5):
            j.record_stage(a, "attempt", Stage(f"s{i}", Status.OK, Layer.SSH, "d"))
        if k % 2:
            j.finish_attempt(a, Outcome.PASSED)
        ids.append(a)
    return ids


def test_get_is_the_full_folds_record(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    ids = _fill(Journal(path), 6)
    line = next(ln for ln in path.read_text().splitlines() if '"attempt":3,' in ln and '"s4"' in ln)
    with open(path, "a") as f:  # another writer's last line, its newline not written yet, for attempt 3
        f.write(line.replace('"s4"', '"torn"'))
    fresh = Journal(path)
    full = {r.attempt: r for r in fresh.attempts()}
    for a in ids + [99]:
        got = fresh.get(a)
        assert (got.to_dict() if got else None) == (full[a].to_dict() if a in full else None)
    assert [s.stage.name for s in fresh.get(3).stages][-1] == "torn"


def test_get_applies_only_its_attempts_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = Journal(tmp_path / "j.jsonl")
    ids = _fill(j, 20)
    applied: list[int] = []
    real = records_mod.AttemptRecord.apply

    def counting(self, ev):  # type: ignore[no-untyped-def]
        applied.append(self.attempt)
        return real(self, ev)

    monkeypatch.setattr(records_mod.AttemptRecord, "apply", counting)
    rec = j.get(ids[4])
    assert rec is not None and rec.attempt == ids[4] and len(rec.stages) == 5
    assert set(applied) == {ids[4]} and len(applied) == 6  # its start and five stages: nothing of the 19 others
