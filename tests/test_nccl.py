"""The NCCL watchdog parser names the rank that fell behind."""

from __future__ import annotations

from cockpit.core.probes.nccl import NcclWatch


def line(rank: int, seq: int, enq: int, done: int, *, old: bool = False) -> str:
    if old:
        return f"[rank{rank}]:[E ProcessGroupNCCL.cpp:563] [Rank {rank}] Timeout at NCCL work: {seq}, last enqueued NCCL work: {enq}, last completed NCCL work: {done}."
    return (f"[rank{rank}]:[E1202 01:21:07.154002 91451 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
            f"Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {enq}, "
            f"last completed NCCL work: {done}.")


def test_the_rank_with_the_lowest_enqueued_work_fell_behind():
    w = NcclWatch()
    for r in (0, 1, 3):
        w.feed(line(r, 1532, 1532, 1531))
    w.feed(line(2, 1531, 1531, 1530, old=True))
    assert w.behind().startswith("rank 2 fell behind: its last enqueued NCCL work is 1531, ranks 0, 1, 3 wait in work 1532")


def test_one_rank_alone_cannot_name_the_culprit_and_says_so():
    w = NcclWatch()
    w.feed(line(0, 1001, 1001, 1000))
    w.feed("step 12 loss 1.0")
    assert "rank 0 timed out waiting in NCCL work 1001" in w.behind() and "no watchdog line" in w.behind()


def test_unrelated_and_malformed_lines_are_ignored():
    w = NcclWatch()
    for text in ("", "last completed NCCL work", "[Rank x] Timeout at NCCL work: a, last enqueued NCCL work: b, last completed NCCL work: c."):
        w.feed(text)
    assert w.behind() == "" and not w.ranks


def test_a_rank_that_logged_no_watchdog_line_is_named_with_its_last_line():
    w = NcclWatch()
    for text in ("[rank0]:step 40 loss 1.0", "[rank1]:step 40 loss 1.1", "[rank1]:loading next shard from /mnt/nfs/shard-0041"):
        w.saw(text)
    w.feed(line(0, 1001, 1001, 1000))
    w.saw(line(0, 1001, 1001, 1000))
    assert w.behind() == ("rank 0 timed out waiting in NCCL work 1001 (last completed 1000): rank 1 logged no watchdog line: "
                          "fell behind (rank 1's last line: loading next shard from /mnt/nfs/shard-0041)")
