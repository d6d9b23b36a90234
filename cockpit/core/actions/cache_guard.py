"""clear-cache's guard on the target: resolve every path there, judge the resolved paths, and only
then remove them, all in one shell command.

Text cannot tell that ``/x/real/proj`` is the workdir ``/x/wslink/proj`` when ``wslink → /x/real``,
nor that ``/tmp/c`` is ``/var/lib/dpkg`` through a symlinked parent.  So the script below, run on
the target (container, host, or each Slurm node), resolves each cache path (``realpath -e``), the
workdir and deploy dest, ``/root``, ``/home/*`` and ``$HOME`` (``realpath -m``, falling back to
``readlink -f``) and applies the rules of :mod:`cockpit.core.paths` to what they resolve to.  A path
that breaks a rule is refused and *nothing* is removed (one bad entry is a config to fix, not a
partial clear); otherwise it runs ``rm -rf --`` on the resolved paths, in the same command, so
nothing the check saw can be swapped out by a later round trip.  The same script, without ``rm``,
is the preview that measures (and that a confirmation can show).  A removal that finds none of
its paths there (no file, no link) says each absent at once, resolving nothing: nothing is removed,
so nothing needs judging, and the common case of a clear after a clear costs no forks.

A cache path that is itself a symlink is refused (rule: no symlinks), naming what it points to:
removing a link's target through the link surprises, and removing only the link clears no cache.

Each path gives one line ``cockpit-cache NODE INDEX WHAT X RESOLVED[<TAB>PROTECTED]``: WHAT is
``absent``, ``present``, ``removed``, ``left`` or ``refused``; X is the size in KiB (``?`` when
``du`` cannot tell, ``-`` when not measured) or, when refused, the rule's key (see
:data:`~cockpit.core.paths.RULE_TEXT`); PROTECTED is the resolved path that refused it.  A path
holding a newline or a tab is printed ``hex:…`` so each line stays one path.  Exit 3: refused
(nothing removed; only the refused paths get a line); 1: a path is still there after ``rm``.
Paths are kept in numbered shell variables between the judging and the removal (``eval`` of a
variable *name* only), so any byte in a path survives.  When the target has neither
``realpath`` nor ``readlink -f`` a present path is refused (rule key ``unresolved``): unjudged
is never removed.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..paths import RULE_TEXT, SYSTEM_DIRS, SYSTEM_TREES, TREE_EXCEPTIONS, norm_remote_path

if TYPE_CHECKING:  # pragma: no cover
    from .base import ActionContext

__all__ = ["Judged", "guard_script", "parse_guard", "refusal", "resolve_cache_paths", "REFUSED_EXIT"]

REFUSED_EXIT = 3
_LINE = re.compile(r"^cockpit-cache (\S+) (\d+) (absent|present|removed|left|refused) (\S+) (/[^\t]*|hex:[0-9a-f]*)(?:\t(.*))?$")


@dataclass(frozen=True)
class Judged:
    """One configured cache path as the target saw it."""

    index: int
    configured: str
    what: str  # absent | present | removed | left | refused
    resolved: str
    kib: int | None = None  # measured size (present, removed, left)
    rule: str = ""  # refused: the rule's key
    protected: str = ""  # refused: the resolved path it would have hit
    node: str = ""


def _case(words: tuple[str, ...]) -> str:
    return "|".join(shlex.quote(w) for w in words)


_TREES = tuple(t for t in SYSTEM_TREES if "*" not in t)
_EXCEPT = "|".join(TREE_EXCEPTIONS)  # shell patterns already (constants: nothing to quote)

#: the guard itself; its inputs are set before it (MODE, MEASURE, WD, DE, and the paths as "$@")
_BODY = r"""
T=$(printf '\t'); NL=$(printf '\nx'); NL=${NL%x}; n=${SLURMD_NODENAME:-$(hostname 2>/dev/null)}; n=${n:-target};
rs() { __r=$(realpath -m -- "$1" 2>/dev/null) || __r=$(readlink -f -- "$1" 2>/dev/null) || __r=; [ -n "$__r" ] || __r=$1; };
exv() { [ -e "$1" ] || return 1; __r=$(realpath -e -- "$1" 2>/dev/null) || __r=$(readlink -f -- "$1" 2>/dev/null) || return 2; [ -n "$__r" ] || return 2; };
ex() { exv "$1" || return $?; printf '%s\n' "$__r"; };
under() { [ "$2" = / ] && return 0; case "$1" in "$2"|"$2"/*) return 0;; esac; return 1; };
enc() { case "$1" in *"$NL"*|*"$T"*) printf 'hex:'; printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n';; *) printf '%s' "$1";; esac; };
if [ "$MODE" = remove ]; then e=0; for p in "$@"; do if [ -e "$p" ] || [ -L "$p" ]; then e=1; fi; done;
  if [ "$e" = 0 ]; then i=0; for p in "$@"; do printf 'cockpit-cache %s %s absent - %s\n' "$n" "$i" "$(enc "$p")"; i=$((i+1)); done; exit 0; fi; fi;
W=; [ -n "$WD" ] && rs "$WD" && W=$__r; D=; [ -n "$DE" ] && rs "$DE" && D=$__r;
hn=0; addh() { rs "$1"; r=$__r; [ "$r" = / ] && return; eval "H_$hn=\$r"; hn=$((hn+1)); };
addh /root; [ -n "${HOME:-}" ] && addh "$HOME"; rs /home; HB=$__r; for h in /home/*; do [ -L "$h" ] && addh "$h"; done;
set -f;
TS=; X=; for t in @TREES@; do TS="$TS$t$NL"; [ -e "$t" ] && X="$X$t$NL"; done;
if [ -n "$X" ] && RR=$(IFS=$NL; realpath -e -- $X 2>/dev/null) && [ -n "$RR" ]; then TS="$TS$RR$NL";
else IFS=$NL; for t in $X; do exv "$t" && r=$__r && [ "$r" != "$t" ] && TS="$TS$r$NL"; done; IFS=' '; fi;
if exv /dev/shm; then S=$__r; else S=/dev/shm; fi;
no() { what=refused; rule=$1; prot=$2; };
judge() {
  what=present; rule=; prot=; R=$1;
  if [ -L "$1" ]; then no symlink "$(ex "$1" || readlink -- "$1")"; return; fi;
  exv "$1"; c=$?; R=$__r; if [ "$c" = 1 ]; then R=$1; what=absent; return; elif [ "$c" != 0 ]; then R=$1; no unresolved ""; return; fi;
  if [ -n "$W" ] && under "$W" "$R"; then no workdir "$W"; return; fi;
  if [ -n "$D" ] && under "$D" "$R"; then no dest "$D"; return; fi;
  if [ "$R" = / ]; then no root /; return; fi;
  case "$R" in @SYSTEM@) no system "$R"; return;; esac;
  k=0; while [ "$k" -lt "$hn" ]; do eval "h=\$H_$k"; k=$((k+1));
    if under "$h" "$R"; then no home "$h"; return; fi;
    case "$R" in "$h"/*) case "${R#"$h"/}" in */*) ;; *) no home-entry "$h"; return;; esac;; esac;
  done;
  if under "$HB" "$R"; then no home "$HB"; return; fi;
  case "$R" in "$HB"/*) x=${R#"$HB"/}; case "$x" in */*/*) ;; */*) no home-entry "$HB/${x%%/*}"; return;; *) no home "$R"; return;; esac;; esac;
  case "$R" in @EXCEPT@|"$S"/?*) return;; /lib*) no tree '/lib*'; return;; esac;
  IFS=$NL; for t in $TS; do
    if under "$R" "$t" || under "$t" "$R"; then IFS=' '; no tree "$t"; return; fi;
  done; IFS=' ';
};
i=0; bad=0;
for p in "$@"; do
  judge "$p";
  if [ "$what" = refused ]; then bad=1; printf 'cockpit-cache %s %s refused %s %s%s%s\n' "$n" "$i" "$rule" "$(enc "$R")" "$T" "$(enc "$prot")"; fi;
  eval "R_$i=\$R; A_$i=\$what"; i=$((i+1));
done;
[ "$bad" = 0 ] || [ "$MODE" = survey ] || exit @REFUSED@;
left=0; k=0;
while [ "$k" -lt "$i" ]; do
  eval "R=\$R_$k; what=\$A_$k"; s=-;
  if [ "$what" = refused ]; then k=$((k+1)); continue; fi;
  if [ "$what" = present ]; then
    if [ "$MEASURE" = 1 ] && [ "$k" -ge "${MFROM:-0}" ]; then s=$(du -sk -- "$R" 2>/dev/null | head -n 1 | cut -f1); s=${s:-?}; fi;
    if [ "$MODE" = remove ]; then rm -rf -- "$R"; if [ -e "$R" ] || [ -L "$R" ]; then what=left; left=1; else what=removed; fi; fi;
  fi;
  printf 'cockpit-cache %s %s %s %s %s\n' "$n" "$k" "$what" "$s" "$(enc "$R")"; k=$((k+1));
done;
[ "$bad" = 0 ] || exit @REFUSED@;
exit $left
"""
# one line (each statement ends in ';' or a keyword that takes the next): it travels in a batch
# script's single ``sh -c '…'`` line as well as through any transport
_SCRIPT = " ".join(x.strip() for x in _BODY.strip().splitlines())
_SCRIPT = (_SCRIPT.replace("@TREES@", " ".join(shlex.quote(t) for t in _TREES)).replace("@SYSTEM@", _case(SYSTEM_DIRS))
           .replace("@EXCEPT@", _EXCEPT).replace("@REFUSED@", str(REFUSED_EXIT)))


def guard_script(paths: list[str], workdir: str, dest: str, *, remove: bool, measure: bool = True, survey: bool = False,
                 measure_from: int = 0) -> str:
    """The guard (see the module doc) for these cache paths (normalised here), protecting ``workdir``
    and ``dest`` as the target resolves them; ``remove=False`` only resolves, judges and measures.
    ``survey`` (a preview): a refused path does not hide the others' lines (the exit status is still
    :data:`REFUSED_EXIT`); ``measure_from``: only paths from this index on are measured."""
    if survey and remove:
        raise ValueError("a survey never removes")
    head = (f"MODE={'remove' if remove else 'survey' if survey else 'preview'}; MEASURE={int(measure)}; MFROM={int(measure_from)}; "
            f"WD={shlex.quote(norm_remote_path(workdir) if workdir else '')}; DE={shlex.quote(norm_remote_path(dest) if dest else '')}; "
            "set -- " + " ".join(shlex.quote(norm_remote_path(p)) for p in paths) + "; ")
    return head + _SCRIPT


def _dec(s: str) -> str:
    """A path as the script printed it: ``hex:…`` when it holds a newline or a tab."""
    return bytes.fromhex(s[4:]).decode("utf-8", "surrogateescape") if s.startswith("hex:") else s


def parse_guard(out: str, paths: list[str]) -> list[Judged]:
    """The script's lines as :class:`Judged` (configured path from ``paths`` by index), in output order."""
    rows = []
    for line in out.splitlines():
        m = _LINE.match(line.rstrip("\r"))
        if not m or int(m.group(2)) >= len(paths):
            continue
        node, idx, what, x, resolved, prot = m.groups()
        refused = what == "refused"
        rows.append(Judged(int(idx), norm_remote_path(paths[int(idx)]), what, _dec(resolved), kib=int(x) if x.isdigit() else None,
                           rule=x if refused else "", protected=_dec(prot or "") if refused else "", node=node))
    return rows


def refusal(j: Judged, workdir: str, dest: str) -> str:
    """Why ``j`` was refused, in words: the rule, the resolved path and what it would have hit."""
    head = f"refusing to clear {j.resolved} (configured as {j.configured})"
    rule = RULE_TEXT.get(j.rule, j.rule)
    if j.rule in ("workdir", "dest"):
        name, conf = ("the workdir", workdir) if j.rule == "workdir" else ("the deploy dest", dest)
        how = "is" if j.resolved == j.protected else "contains"
        return f"{head}: it {how} {name} {conf} (resolved {j.protected}) (rule: {rule})"
    if j.rule == "symlink":
        return f"{head}: it is a symlink to {j.protected or '?'}; list the real cache directory, not a link to it (rule: {rule})"
    if j.rule == "home":
        how = "is" if j.resolved == j.protected else "contains"
        return f"{head}: it {how} the home directory {j.protected} (rule: {rule})"
    if j.rule == "home-entry":
        return (f"{head}: it is an entry directly in the home directory {j.protected}, which holds more than caches; "
                f"list the cache directory below it (rule: {rule})")
    if j.rule == "tree":
        how = "contains" if j.protected.startswith(j.resolved.rstrip("/") + "/") else "lies in"
        return (f"{head}: it {how} the system tree {j.protected}; only caches below /dev/shm and /run/user/UID "
                f"are allowed there (rule: {rule})")
    if j.rule == "unresolved":
        return f"{head}: the target could not resolve it (it needs realpath or readlink -f) (rule: {rule})"
    if j.rule in ("system", "root"):
        return f"{head}: it is {j.resolved} itself (rule: {rule})"
    return f"{head} (rule: {rule})"


async def resolve_cache_paths(ctx: ActionContext, *, measure: bool = True) -> tuple[list[Judged], int]:
    """Resolve and judge ``[cache] paths`` on the target without removing anything (a preview: the
    measure stage, a confirmation).  Returns the rows in the configured order and the exit status
    (:data:`REFUSED_EXIT` when one is refused); a path the script gave no line for is not in the rows."""
    paths = list(ctx.cfg.cache.paths)
    if not paths:
        return [], 0
    res = await ctx.run(guard_script(paths, ctx.cfg.job.workdir, ctx.cfg.deploy.dest or "", remove=False, measure=measure),
                        timeout=60)
    return sorted(parse_guard(res.text, paths), key=lambda j: j.index), res.exit_code
