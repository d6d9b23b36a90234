"""The observer's long-lived streams, and the SSH channels they may take.

Each stream (:mod:`.remote.follow`) holds an SSH channel for as long as it lives, and sshd allows
only so many per connection (``MaxSessions``, 10 by default; the transport's
:class:`~.remote.channels.ChannelSlots` learn a lower limit when sshd refuses one).  Commands need
a channel now and then (uploads, host commands), so a stream starts only where the slots leave
room for them, and gives its channel back (the part is then polled) when a refusal lowers the limit
under what it needs:

=================  ==========================================  =========================
stream             what it replaces                            slots it needs (limit ≥)
=================  ==========================================  =========================
kernel log         ``dmesg`` on a new host channel each poll   3
GPUs               nvidia-smi (and a shell) every refresh      4
job log (quiet)    the log probe every 0.5 s while it is quiet 5 (only while armed)
compile trace      (the engine's, :mod:`.compile_follow`)      6 (else read once at the end)
=================  ==========================================  =========================

:meth:`Streams.modes` says, per part, ``stream`` or ``poll`` and why (the status line shows it).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from .probes.gpu.follow import GpuFollower
from .probes.kmsg.follow import KmsgFollower
from .probes.log_waker import LogWaker
from .remote.base import Transport
from .remote.follow import StreamFollower
from .remote.lines import capped_lines

__all__ = ["Streams", "NEED"]

#: stream → the slot limit it needs (see the module doc)
NEED = {"kmsg": 3, "gpu": 4, "log": 5, "compile": 6}


class Streams:
    """Starts, keeps and closes the observer's streams (one of each at most)."""

    def __init__(self, transport: Transport, *, enabled: bool = True) -> None:
        self.transport = transport
        #: False for a one-shot observer (``cockpit status``): a stream started for one refresh and
        #: closed right after costs more than the poll it replaces
        self.enabled = enabled
        self.kmsg: KmsgFollower | None = None
        self.gpu: GpuFollower | None = None
        self.log: LogWaker | None = None
        self._gpu_key: tuple[Any, ...] | None = None
        #: stream → why it is not used (gave its channel back); kept for modes()
        self.gave_way: dict[str, str] = {}
        self._watch: dict[str, asyncio.Future[None]] = {}
        self._closing: set[asyncio.Future[None]] = set()

    def _room(self, name: str) -> bool:
        if not self.enabled:
            return False
        slots = getattr(self.transport, "slots", None)
        if slots is not None and slots.limit < NEED[name]:
            return False
        self.gave_way.pop(name, None)  # room again (a limit learned too low grows back)
        return True

    def _watch_room(self, name: str, fol: StreamFollower) -> None:
        slots = getattr(self.transport, "slots", None)
        if slots is None:
            return

        async def give_way() -> None:
            await slots.wait_below(NEED[name])
            if getattr(self, name) is fol:
                setattr(self, name, None)  # polled from now on (not started again while the limit stays low)
                self.gave_way[name] = f"sshd allows {slots.limit} channels beside the session: the stream gave its channel back"
            await fol.close()

        old = self._watch.pop(name, None)
        if old is not None:
            old.cancel()
        self._watch[name] = asyncio.ensure_future(give_way())

    # -- the kernel log (the host's `dmesg --follow`) --------------------------------------------
    def kmsg_follower(self) -> KmsgFollower | None:
        """The host's ``dmesg --follow``, started on the first call where there is room."""
        if self.kmsg is None and self._room("kmsg"):
            self.kmsg = fol = KmsgFollower(lambda cmd: capped_lines(self.transport.stream_host(cmd)))
            fol.start()
            self._watch_room("kmsg", fol)
        return self.kmsg

    # -- the GPUs (`nvidia-smi -lms`) ------------------------------------------------------------
    def gpu_follower(self, nvidia_smi: str, fields: tuple[Any, ...], every_s: float, *, on_host: bool, gpus: int) -> GpuFollower | None:
        """The GPU stream for these fields and period (restarted when they change), where there is room."""
        key = (nvidia_smi, fields, every_s, on_host)
        if self.gpu is not None and self._gpu_key != key:
            old, self.gpu = self.gpu, None
            closing = asyncio.ensure_future(old.close())  # kept until done (close() awaits any left)
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)
        if self.gpu is None and self._room("gpu"):
            opener: Callable[[str], AsyncIterator[bytes]] = self.transport.stream_host if on_host else self.transport.stream
            self.gpu = fol = GpuFollower(lambda cmd: capped_lines(opener(cmd)), nvidia_smi, fields, every_s, gpus=gpus)
            self._gpu_key = key
            fol.start()
            self._watch_room("gpu", fol)
        if self.gpu is not None:
            self.gpu.gpus = gpus
        return self.gpu

    # -- the job's log while it is quiet (`tail -F`, armed until it changes) ----------------------
    def log_waker(self) -> LogWaker | None:
        """The log waker where there is room for its channel (None: poll the quiet log)."""
        if not self._room("log"):
            return None
        if self.log is None:
            self.log = LogWaker(self.transport.stream)
        return self.log if self.log.usable else None

    def modes(self) -> dict[str, tuple[str, str]]:
        """part (named as everywhere else: ``kernel``, ``gpu``, ``log``) → (``stream`` | ``poll``,
        why it is polled: "" when streamed)."""
        out: dict[str, tuple[str, str]] = {}
        for name, part in (("kmsg", "kernel"), ("gpu", "gpu")):
            fol: StreamFollower | None = getattr(self, name)
            if fol is not None and fol.ready:
                out[part] = ("stream", "")
            elif fol is not None:
                out[part] = ("poll", fol.last_death or fol.state)
            elif name in self.gave_way:
                out[part] = ("poll", self.gave_way[name])
        if self.log is not None:
            out["log"] = ("stream", "") if self.log.usable else ("poll", self.log.last_error or "tail -F unsupported")
        return out

    async def close(self) -> None:
        for task in self._watch.values():
            task.cancel()
        await asyncio.gather(*self._watch.values(), return_exceptions=True)
        self._watch.clear()
        fols = [f for f in (self.kmsg, self.gpu) if f is not None]
        self.kmsg = self.gpu = None
        for f in fols:
            await f.close()
        await asyncio.gather(*self._closing, return_exceptions=True)
