"""The compile caches a job actually uses, found on the target in ONE command, measured and judged.

Where torch.compile keeps its caches is the job's environment's business, not the config's:
``TORCHINDUCTOR_CACHE_DIR`` (inductor: ``fxgraph/``, ``aotautograd/``, ``triton/`` inside; default
``/tmp/torchinductor_$USER``) and ``TRITON_CACHE_DIR`` (default ``~/.triton/cache``).  The command
reads them, in this order, from ``/proc/PID/environ`` of the running job's processes (its process
group), from the launch environment (``[job] env``), else takes the defaults; it prints each cache
that exists with its size (KiB) and file count, its parts inside, and then runs the guard
(:mod:`.cache_guard`) over the found roots, so a discovered path is judged by the same rules as a
configured one (never the workdir, a system directory, a home directory…).

Lines: ``cockpit-inv KIND SOURCE KIB FILES PATH`` (KIND ``inductor``, ``triton``, or
``inductor/fxgraph`` etc. for a part; SOURCE ``job`` | ``env`` | ``default``), then the guard's
``cockpit-cache`` lines for the roots (index 0: inductor, 1: triton).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..paths import norm_remote_path
from .cache_guard import REFUSED_EXIT, Judged, guard_script, parse_guard

if TYPE_CHECKING:  # pragma: no cover
    from .base import ActionContext

__all__ = ["FoundCache", "Inventory", "inventory_script", "parse_inventory", "discover_caches", "discover_and_judge",
           "inventory_and_guard_script", "human_size", "SOURCE_WORDS"]

_LINE = re.compile(r"^cockpit-inv (\S+) (job|env|default) (\d+|\?) (\d+|\?) (/.*)$")
PARTS = ("fxgraph", "aotautograd", "triton")
SOURCE_WORDS = {"job": "the running job's environment", "env": "[job] env", "default": "the default"}

_BODY = r"""
P=@PID@; LI=@LI@; LT=@LT@; I=; T=; IS=; TS=; H=; NL=$(printf '\nx'); NL=${NL%x};
if [ -n "$P" ] && [ -r "/proc/$P/stat" ]; then
  read -r s < "/proc/$P/stat"; s=${s##*) }; set -f; set -- $s; g=$3; c0=0; oIFS=$IFS;
  for d in "/proc/$P" /proc/[0-9]*; do
    c0=$((c0+1)); [ "$c0" -gt 1 ] && [ "$d" = "/proc/$P" ] && continue;
    read -r t 2>/dev/null < "$d/stat" || continue; t=${t##*) }; set -- $t; [ "$3" = "$g" ] || continue;
    e=$(tr '\0' '\n' < "$d/environ" 2>/dev/null) || continue;
    IFS=$NL; for kv in $e; do v=${kv#*=};
      case "$kv" in
        TORCHINDUCTOR_CACHE_DIR=*) [ -z "$I" ] && [ -n "$v" ] && I=$v && IS=job;;
        TRITON_CACHE_DIR=*) [ -z "$T" ] && [ -n "$v" ] && T=$v && TS=job;;
        HOME=*) [ -z "$H" ] && [ -n "$v" ] && H=$v;;
      esac;
    done; IFS=$oIFS;
  done; set +f;
fi;
[ -z "$I" ] && [ -n "$LI" ] && I=$LI && IS=env; [ -z "$T" ] && [ -n "$LT" ] && T=$LT && TS=env;
[ -z "$I" ] && I=/tmp/torchinductor_$(id -un 2>/dev/null || echo "${USER:-root}") && IS=default;
[ -z "$T" ] && T=${H:-${HOME:-/root}}/.triton/cache && TS=default;
m() { [ -d "$3" ] || return 0; k=$(du -sk -- "$3" 2>/dev/null | head -n 1 | cut -f1); f=$(find "$3" -type f 2>/dev/null | wc -l | tr -d ' ');
  printf 'cockpit-inv %s %s %s %s %s\n' "$1" "$2" "${k:-?}" "${f:-?}" "$3"; };
m inductor "$IS" "$I"; for x in @PARTS@; do m "inductor/$x" "$IS" "$I/$x"; done; m triton "$TS" "$T";
"""
_SCRIPT = " ".join(x.strip() for x in _BODY.strip().splitlines())


@dataclass(frozen=True)
class FoundCache:
    kind: str  # inductor | triton | inductor/fxgraph …
    source: str  # job | env | default
    kib: int | None
    files: int | None
    path: str

    @property
    def words(self) -> str:
        """``fxgraph 412 MiB 1,203 entries``."""
        files = f"{self.files:,}" if self.files is not None else "?"
        return f"{self.kind.rsplit('/', 1)[-1]} {human_size(self.kib)} {files} {'entry' if self.files == 1 else 'entries'}"


@dataclass
class Inventory:
    found: list[FoundCache] = field(default_factory=list)
    #: the guard's judgement of the roots that exist (index 0 inductor, 1 triton)
    judged: list[Judged] = field(default_factory=list)
    exit_code: int = 0

    @property
    def roots(self) -> list[FoundCache]:
        return [f for f in self.found if "/" not in f.kind]

    def parts(self, root: FoundCache) -> list[FoundCache]:
        return [f for f in self.found if f.kind.startswith(root.kind + "/")]

    def judged_of(self, root: FoundCache) -> Judged | None:
        return next((j for j in self.judged if j.configured == norm_remote_path(root.path)), None)

    def dir_of(self, kind: str) -> tuple[str, str]:
        """(path, source) of the ``inductor`` or ``triton`` cache as found (empty when not found)."""
        f = next((f for f in self.found if f.kind == kind), None)
        return (f.path, f.source) if f else ("", "")


def human_size(kib: int | None) -> str:
    if kib is None:
        return "? KiB"
    if kib >= 1024 * 1024:
        return f"{kib / 1024 / 1024:.1f} GiB"
    if kib >= 1024:
        return f"{kib / 1024:.0f} MiB"
    return f"{kib} KiB"


def inventory_script(pid: int | None, launch_env: dict[str, str], workdir: str, dest: str) -> str:
    """The one command: discover, measure, then the guard's preview over the found roots."""
    q = shlex.quote
    body = (_SCRIPT.replace("@PID@", q(str(pid) if pid else "")).replace("@LI@", q(launch_env.get("TORCHINDUCTOR_CACHE_DIR", "")))
            .replace("@LT@", q(launch_env.get("TRITON_CACHE_DIR", ""))).replace("@PARTS@", " ".join(PARTS)))
    guard = guard_script(["/x"], workdir, dest, remove=False, measure=False).replace("set -- /x; ", 'set -- "$I" "$T"; ', 1)
    return f"{body} ( {guard} ); true"


def parse_inventory(out: str) -> Inventory:
    inv = Inventory()
    for line in out.splitlines():
        m = _LINE.match(line.rstrip("\r"))
        if m:
            kind, source, kib, files, path = m.groups()
            inv.found.append(FoundCache(kind, source, int(kib) if kib.isdigit() else None, int(files) if files.isdigit() else None, path))
    paths = [next((f.path for f in inv.found if f.kind == k), "/-") for k in ("inductor", "triton")]
    inv.judged = [j for j in parse_guard(out, paths) if paths[j.index] != "/-"]
    return inv


def inventory_and_guard_script(pid: int | None, launch_env: dict[str, str], workdir: str, dest: str, paths: list[str]) -> str:
    """The inventory, then ONE guard over the found roots and ``paths`` (``[cache] paths``, indexes
    from 2 on, measured): clear-cache's caches and measure stages in one round trip, each path judged
    once, a refused one hiding none of the others (survey)."""
    q = shlex.quote
    body = (_SCRIPT.replace("@PID@", q(str(pid) if pid else "")).replace("@LI@", q(launch_env.get("TORCHINDUCTOR_CACHE_DIR", "")))
            .replace("@LT@", q(launch_env.get("TRITON_CACHE_DIR", ""))).replace("@PARTS@", " ".join(PARTS)))
    guard = guard_script(["/x", *paths], workdir, dest, remove=False, survey=True, measure_from=2).replace("set -- /x", 'set -- "$I" "$T"', 1)
    return f"{body} ( {guard} ); echo \"cockpit-guard-exit $?\""


_EXIT = re.compile(r"^cockpit-guard-exit (\d+)$", re.M)


async def discover_and_judge(ctx: ActionContext, pid: int | None, paths: list[str]) -> tuple[Inventory, list[Judged], int]:
    """:func:`discover_caches` and the guard's preview of ``paths`` (as
    :func:`~.cache_guard.resolve_cache_paths` answers it: rows in the configured order, and the exit
    status: :data:`~.cache_guard.REFUSED_EXIT` when one of ``paths`` is refused, -1 when the guard
    gave no exit line) from one command."""
    cfg = ctx.cfg
    res = await ctx.run(inventory_and_guard_script(pid, dict(cfg.job.env), cfg.job.workdir, cfg.deploy.dest or "", paths), timeout=60)
    inv = parse_inventory(res.text)  # the roots' rows: indexes 0 and 1
    inv.exit_code = res.exit_code
    roots = [next((f.path for f in inv.found if f.kind == k), "/-") for k in ("inductor", "triton")]
    rows = sorted((replace(j, index=j.index - 2) for j in parse_guard(res.text, roots + paths) if j.index >= 2), key=lambda j: j.index)
    m = _EXIT.search(res.text)
    code = int(m.group(1)) if m else -1
    if any(j.what == "refused" for j in rows):
        code = REFUSED_EXIT
    elif code == REFUSED_EXIT:  # only a discovered root was refused: said by the caches stage
        code = 0
    return inv, rows, code


async def discover_caches(ctx: ActionContext, pid: int | None) -> Inventory:
    """The caches of the job running as ``pid`` (or of the next launch's environment): one command."""
    res = await ctx.run(inventory_script(pid, dict(ctx.cfg.job.env), ctx.cfg.job.workdir, ctx.cfg.deploy.dest or ""), timeout=60)
    inv = parse_inventory(res.text)
    inv.exit_code = res.exit_code
    return inv
