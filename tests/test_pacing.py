"""Adaptive refresh (cockpit/ui/pacing.py): calm parts back off, never past the stale line; a slow
link is not probed back to back; an action speeds polls up; failures slow them; the log's rhythm."""

from __future__ import annotations

from types import SimpleNamespace

from cockpit.core.probes.procs.tree import Proc
from cockpit.ui.format import is_stale
from cockpit.ui.pacing import Pacer, signature


def _proc(pid: int, state: str, cpu: float, age: int) -> Proc:
    return Proc(pid=pid, ppid=1, pgid=pid, sid=pid, state=state, elapsed_s=age, cpu=cpu, rss_kb=1000, user="root",
                comm="python3", args="python3 train.py")


def _procs(*pairs: tuple[int, str], cpu: float = 0.0, young: tuple[int, ...] = ()) -> SimpleNamespace:
    """A process-table refresh as the observer makes it (real :class:`Proc` rows, so a field the
    signature reads must be one ps fills)."""
    procs = [_proc(p, s, cpu, 3600) for p, s in pairs] + [_proc(p, "R", cpu, 0) for p in young]
    return SimpleNamespace(view=SimpleNamespace(procs=procs, findings=[], error=None))


def test_a_calm_process_table_backs_off_but_never_looks_stale() -> None:
    p = Pacer(lambda: 2.0)
    waits = []
    for i in range(12):
        # CPU moves, and a short-lived command comes and goes each time (a busy host): not a change
        p.observe(signature(_procs((1, "S"), (42, "R"), cpu=float(i), young=(1000 + i,))))
        waits.append(p.wait())
    assert waits[0] == 2.0 and max(waits) == 4.0 and waits == sorted(waits)
    assert not is_stale(max(waits), 2.0)  # the status line's stale line is three periods
    p.observe(signature(_procs((1, "S"), (42, "Z"))))  # a state changed: back to the period at once
    assert p.wait() == 2.0


def test_slow_link_busy_and_failures() -> None:
    busy = [False]
    p = Pacer(lambda: 2.0, busy=lambda: busy[0])
    assert p.wait(took_s=0.9) == 3.6  # a 0.9 s refresh: at most a quarter of the time refreshing
    busy[0] = True
    assert p.wait() == 0.5  # an action runs: four times as often
    busy[0] = False
    assert p.wait(failures=2) == 6.0 and p.wait(failures=100) == 30.0


def test_the_log_polls_fast_while_lines_flow_then_settles_to_the_period() -> None:
    p = Pacer(lambda: 2.0)
    assert p.log_wait(True) == 0.1
    quiet = [p.log_wait(False) for _ in range(12)]
    assert quiet[:10] == [0.5] * 10 and quiet[-1] == 2.0
    assert p.log_wait(True) == 0.1 and p.log_wait(False) == 0.5


def test_signature_other_parts_always_differ() -> None:
    assert signature(SimpleNamespace(view=None)) != signature(SimpleNamespace(view=None))


async def test_the_tui_log_loop_does_not_spin_without_a_log(tmp_path) -> None:
    """A regression: with no log followed, the quiet phase must sleep, not poll back to back."""
    import time

    from cockpit.ui.app import create_app
    from tests.lab.util import await_for
    from tests.test_ui_support import local_config, make_engine

    cfg = local_config(tmp_path)
    engine = make_engine(cfg)
    app = create_app(cfg, engine=engine, refresh=True)
    app.owns_engine = True
    calls: list[float] = []
    real = app.driver.log

    async def counted(*a, **kw):
        calls.append(time.monotonic())
        return await real(*a, **kw)

    app.driver.log = counted  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)):
        await await_for(lambda: len(calls) >= 14, 30, "fourteen log polls")
    gaps = [b - a for a, b in zip(calls, calls[1:], strict=False)]
    # 0.5 s apart for ten quiet polls, then the period (1 s): a spinning loop polls back to back
    assert min(gaps[:10]) >= 0.45 and min(gaps[10:13]) >= 0.9, [round(g, 2) for g in gaps]


async def test_an_idle_screen_repaints_nothing_until_data_turns_stale(tmp_path) -> None:
    """Fresh data says ● and `live`, which do not tick: the status line and the panes' subtitles are
    repainted only when what they say changes (each repaint was most of an idle cockpit's CPU)."""
    from cockpit.ui.app import create_app
    from cockpit.ui.panes import ProcsPane, StatusLine
    from tests.test_ui_support import local_config, make_engine

    now = [1000.0]
    cfg = local_config(tmp_path)
    app = create_app(cfg, engine=make_engine(cfg), refresh=False, clock=lambda: now[0])
    app.owns_engine = True
    async with app.run_test(size=(80, 24)) as pilot:
        line, procs = app.query_one(StatusLine), app.query_one(ProcsPane)
        line.update_part("procs", now[0])
        procs.show(SimpleNamespace(collected_at=now[0], error=None, procs=[], findings=[], own_pids=set(), nodes=[], note="", gpu_mib={}))
        await pilot.pause()
        painted = []
        real = line.refresh
        line.refresh = lambda *a, **kw: (painted.append(1), real(*a, **kw))[1]  # type: ignore[method-assign]
        subtitle = procs.border_subtitle
        for _ in range(5):  # five seconds of ticks, data 0..2 s old (the period is 1 s: fresh up to 3 s)
            now[0] += 0.4
            line._tick()
            procs.tick()
        assert not painted and procs.border_subtitle is subtitle and "live" in str(subtitle)
        now[0] += 10  # stale: the age shows, and ticks
        line._tick()
        procs.tick()
        assert painted and "⚠" in line.render().plain and "⚠" in str(procs.border_subtitle)
        n = len(painted)
        now[0] += 1
        line._tick()
        assert len(painted) == n + 1


async def test_the_status_line_says_how_a_part_is_read_not_how_one_refresh_was(tmp_path) -> None:
    """A streamed GPU pane still runs its full probe every apps_interval: that refresh must not
    flip the status line to "poll gpu" (seen against the lab: it did, every ten seconds)."""
    from cockpit.core.observe import GPUView
    from cockpit.core.probes.gpu.model import GPUSnapshot
    from cockpit.ui.app import create_app
    from cockpit.ui.messages import GpuRefreshed
    from cockpit.ui.panes import StatusLine
    from tests.test_ui_support import local_config, make_engine

    cfg = local_config(tmp_path)
    app = create_app(cfg, engine=make_engine(cfg), refresh=False)
    app.owns_engine = True
    async with app.run_test(size=(80, 24)) as pilot:
        streams = app.driver.observer.streams
        streams.gpu = SimpleNamespace(ready=True, last_death=None, state="following")  # type: ignore[assignment]
        app.post_message(GpuRefreshed(GPUView(collected_at=1.0, snapshot=GPUSnapshot(), mode="poll")))
        await pilot.pause()
        line = app.query_one(StatusLine)
        assert "stream gpu" in line.render().plain
        line.update_part("procs", 1.0, "the host did not answer", "host")  # the link down: nothing streams
        assert "stream" not in line.render().plain and "host ✘" in line.render().plain, line.render().plain
        line.update_part("procs", 3.0)
        assert "stream gpu" in line.render().plain
        streams.gpu = SimpleNamespace(ready=False, last_death="nvidia-smi exit status 2", state="unsupported")  # type: ignore[assignment]
        app.post_message(GpuRefreshed(GPUView(collected_at=2.0, snapshot=GPUSnapshot(), mode="poll")))
        await pilot.pause()
        assert "poll gpu" in app.query_one(StatusLine).render().plain
        streams.gpu = None
