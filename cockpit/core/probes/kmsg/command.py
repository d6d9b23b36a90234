"""The host-side kernel-message probe: :func:`kmsg_command`.

Kernel messages are read **on the host** (a container sees none, or only its own namespace's
view): run :func:`kmsg_command` with the transport's ``run_host``.  It prints the host's boot time
and then the newest ``lines`` messages from the first source that works:

1. ``dmesg --time-format iso`` (util-linux ≥ 2.26; absolute, zone-aware timestamps),
2. plain ``dmesg`` (``[seconds since boot]``; converted with the boot time),
3. ``journalctl -k -o short-iso`` (when ``dmesg`` is restricted, ``kernel.dmesg_restrict=1``,
   and the user may read the journal).

(``dmesg -T`` is avoided: its wall-clock conversion is wrong after suspend and it has no zone.)
Each source is announced by a ``@@cockpit-kmsg SOURCE`` line (``unavailable`` when none worked).
"""

from __future__ import annotations

import shlex

__all__ = ["MARK", "kmsg_command"]

#: The first word of the probe's own lines (``@@cockpit-kmsg btime N``, ``@@cockpit-kmsg SOURCE``).
MARK = "@@cockpit-kmsg"


def kmsg_command(lines: int = 3000, timeout: float = 5, *, dmesg: str = "dmesg", journalctl: str = "journalctl") -> str:
    """The host-side command (see the module docstring); exit status 0 in every case."""
    n = max(1, int(lines))
    t = max(1, int(round(float(timeout))))
    dm = shlex.quote(dmesg)
    jc = shlex.quote(journalctl)
    return (
        "_ck_b=; while read -r _ck_k _ck_v; do [ \"$_ck_k\" = btime ] && { _ck_b=$_ck_v; break; }; "
        "done </proc/stat 2>/dev/null; "
        f"echo \"{MARK} btime $_ck_b\"; "
        f"_ck_t=; command -v timeout >/dev/null 2>&1 && _ck_t='timeout -k 1 {t}'; "
        f"if _ck_o=$($_ck_t {dm} --time-format iso 2>/dev/null) && [ -n \"$_ck_o\" ]; then "
        f"echo '{MARK} dmesg-iso'; printf '%s\\n' \"$_ck_o\" | tail -n {n}; "
        f"elif _ck_o=$($_ck_t {dm} 2>/dev/null) && [ -n \"$_ck_o\" ]; then "
        f"echo '{MARK} dmesg-raw'; printf '%s\\n' \"$_ck_o\" | tail -n {n}; "
        f"elif _ck_o=$($_ck_t {jc} -k -o short-iso --no-pager -q -n {n} 2>/dev/null) && [ -n \"$_ck_o\" ]; then "
        f"echo '{MARK} journal'; printf '%s\\n' \"$_ck_o\"; "
        f"else echo '{MARK} unavailable'; $_ck_t {dm} 2>&1 | tail -n 3; fi; true"
    )
