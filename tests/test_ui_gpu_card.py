"""A GPU card whose mount is handled after its children went (the app closing while a refresh
mounted it, the card removed) draws nothing and raises nothing; a whole card draws its GPU."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from cockpit.core.probes.gpu.model import GPU
from cockpit.ui.panes.gpu import GpuCard

H100 = GPU(index=0, name="NVIDIA H100 80GB HBM3", temperature_c=34, utilization_pct=87, memory_utilization_pct=40,
           memory_used_mib=40000, memory_total_mib=81559, power_draw_w=469.8, power_limit_w=700.0, pstate="P0")


class _Cards(App[None]):
    def compose(self) -> ComposeResult:
        yield Vertical(id="cards")


async def test_a_card_draws_its_gpu_and_a_card_without_its_children_draws_nothing() -> None:
    app = _Cards()
    async with app.run_test(size=(80, 24)) as pilot:
        card = GpuCard("0")
        card.sample(H100)
        await app.query_one("#cards").mount(card)
        await pilot.pause()
        head = card.query_one(".gpu-head", Static)
        assert "H100 80GB HBM3" in str(head.render()) and "util  87%" in str(card.query_one(".gpu-util", Static).render())
        await card.remove_children()  # what a closing app or a removal leaves when the mount is handled late
        card.on_mount()  # no NoMatches out of a Textual handler: that ended the app with a traceback
        card.sample(H100)
        card.refresh_view()
