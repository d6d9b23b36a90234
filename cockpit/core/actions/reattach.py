"""Reading the job across a lost connection: say so at once, reconnect with backoff, read again.

Verify reads the job many times; a network cut, a restarted sshd or a killed connection must not
turn a running job into a verdict about the code.  :func:`read_job` is one reading that survives
them:

* the connection lost (``ssh`` layer): the running stage says so at once, in the ``ssh`` layer
  (a dead link is noticed by the keepalive, ``[ssh] keepalive_interval`` × 3; a reset one at once),
  then cockpit reconnects, at once and then after 0.5, 1, 2, 4, 8, 8 … seconds, and reads the job
  again from where it was (the reader's log offset survives).  Past ``[ssh] reconnect_for`` it
  gives up with :class:`TargetLost`: verify then fails its stage in the ``ssh`` layer, marked
  ``lost``, and the attempt ends ``interrupted``, not ``failed``: the job was never judged, and it
  is still running (nothing is launched again; ``cockpit status`` re-attaches later);
* the connection lost and rebuilt by another reading between two of verify's (the GPUs read beside
  the settle window, the observer's probes on the same link): the running stage says so too, and
  the note, when the reading finds the transport's connection count grown (:attr:`JobReader.connects`);
* the target's shell died under a reading (a container restarted, the shell killed): one more
  reading on a new shell says what is true now (the container is back and the job vanished, or
  the container is not running: the ``host`` layer).

Readings are idempotent (they only look), so reading again is always safe.
"""

from __future__ import annotations

import asyncio
import time

from ..layers import Layer
from ..remote.base import RemoteError
from .base import ActionContext, VerdictBuilder
from .jobstate import JobReader, JobState

__all__ = ["read_job", "TargetLost", "RETRY_S"]

#: seconds before each reconnect try (the last one repeats)
RETRY_S = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)


class TargetLost(RemoteError):
    """The connection stayed lost for ``[ssh] reconnect_for``: nothing was judged."""


async def read_job(ctx: ActionContext, reader: JobReader, vb: VerdictBuilder, notes: list[str], stage: str = "alive") -> JobState:
    """One reading of the job that survives a lost connection or a dead shell (see the module doc);
    ``notes`` gets one line per fault survived.  Raises :class:`RemoteError` when it cannot."""
    try:
        st = await reader.read()
    except RemoteError as e:
        first = e
    else:
        _rebuilt_beside(ctx, reader, vb, notes, stage)
        return _read(ctx, reader, st)
    if first.layer is not Layer.SSH:
        vb.running(stage, f"the target's shell died ({first.message}); reading again on a new one", layer=first.layer)
        st = await reader.read()
        notes.append(f"the target's shell died once ({first.message}) and was rebuilt")
        reader.read_at = time.monotonic()  # its connection count left as it was: a link rebuilt meanwhile is still said
        return st
    t0 = time.monotonic()
    budget = ctx.cfg.ssh.reconnect_for
    err = first
    for n in range(10**6):
        delay = RETRY_S[min(n, len(RETRY_S) - 1)]
        left = t0 + budget - time.monotonic()
        if left <= 0:
            break
        vb.running(stage, f"lost the connection: {err.message}; reconnecting" + (f" in {min(delay, left):.1f}s" if delay else "")
                   + f" (try {n + 1}; giving up in {left:.0f}s)", layer=Layer.SSH)
        if delay:
            await asyncio.sleep(min(delay, left))
        try:
            await ctx.transport.connect(force=True)
            st = await reader.read()
        except RemoteError as e:
            if e.layer is not Layer.SSH:
                raise
            err = e
            continue
        took = time.monotonic() - t0
        notes.append(f"lost the connection ({first.message}) and re-attached after {took:.1f}s")
        vb.running(stage, f"re-attached after {took:.1f}s without a connection", layer=Layer.SSH)
        return _read(ctx, reader, st)
    raise TargetLost(Layer.SSH, f"lost the connection while verifying and could not reconnect within {budget:g}s: {err.message}",
                     hint="the job was not judged and is not stopped: `cockpit status` or `cockpit verify` re-attaches once the host "
                          "answers; [ssh] reconnect_for sets how long verify waits", output=err.output)


def _read(ctx: ActionContext, reader: JobReader, st: JobState) -> JobState:
    """A reading done: when, and (where the caller keeps it) the connection it was made on."""
    reader.read_at = time.monotonic()
    if reader.connects is not None:
        reader.connects = ctx.transport.connects
    return st


def _rebuilt_beside(ctx: ActionContext, reader: JobReader, vb: VerdictBuilder, notes: list[str], stage: str) -> None:
    """The link was lost and rebuilt since the last reading, by another reading on it: said as a
    loss this reading met would be (the verdict never reads as if the connection had held)."""
    if reader.connects is None or ctx.transport.connects == reader.connects:
        return
    took = time.monotonic() - (reader.read_at or time.monotonic())
    why = "another reading on the link found it cut and reconnected"
    vb.running(stage, f"lost the connection ({why}); re-attached after {took:.1f}s at most", layer=Layer.SSH)
    notes.append(f"lost the connection ({why}) and re-attached after {took:.1f}s at most")
