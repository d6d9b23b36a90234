"""The one shell script discovery runs on the host: what it asks, in POSIX ``sh``.

It runs as ONE ``run_host`` call (one SSH channel, one round trip) and prints line records the
parser (:mod:`.parse`) reads back:

``@@ SECTION [ARG]``
    a section: ``host`` (the host's facts and tools), ``pct-list`` (``pct list``),
    ``pct-conf CTID`` (the container's config: ``/etc/pve/lxc/CTID.conf``, else ``pct config
    CTID``), ``engine-ps docker|podman`` (``ps -a`` as ``ID|NAME|IMAGE|STATUS``), ``squeue``
    (``squeue --me`` when ``sbatch`` exists), ``target RUNTIME ID`` (the process scan of one
    running target: ``host -`` for the host itself) and ``rc N`` (the exit status of the command
    before it).

Inside a ``target`` section the scan (:data:`SCAN`) prints tab-separated records:
``K key value`` (facts), ``J …`` (a training job candidate, see :data:`JOB_FIELDS`), ``Z pid
ppid comm`` (a zombie) and ``E what message`` (something that could not be read).  Lists inside
a field are separated by ``\\x1f`` (argv, open logs, environment), newlines in argv by ``\\x1e``.

The scan is sh, not Python, because a container need not have Python; every command's errors
are kept out of the records (``2>/dev/null``) and an unreadable file becomes an ``E`` record or
``?``, never a failure of the whole script.  The only values from the user (the container to
look at) are shlex-quoted into the script's first line.
"""

from __future__ import annotations

import shlex

__all__ = ["MARKER", "SCAN", "JOB_FIELDS", "ENV_KEYS", "ARGV_WORDS", "build_script"]

#: in every command line the script starts, so its own processes are never taken for jobs
MARKER = "cockpit-discover"

#: the environment variables of a job that matter to a config or a diagnosis
ENV_KEYS = ("CUDA_VISIBLE_DEVICES", "TORCHINDUCTOR_CACHE_DIR", "TORCH_TRACE", "RANK", "LOCAL_RANK", "WORLD_SIZE",
            "MASTER_ADDR", "MASTER_PORT")

#: argv words that make a Python process a training job even without libtorch mapped
ARGV_WORDS = ("train", "torchrun", "accelerate", "deepspeed")

#: the fields of a ``J`` record, in order (after the ``J``)
JOB_FIELDS = ("pid", "ppid", "state", "start", "user", "torch", "argv_match", "cwd", "fd1", "fd2", "fd_logs",
              "cwd_log", "env", "argv")

_ENV_RE = "|".join(ENV_KEYS)
_ARGV_CASE = "|".join(f"*{w}*" for w in ARGV_WORDS)

#: the process scan of one target (the host, or run inside a container): sh, stdlib tools only
SCAN = rf"""# {MARKER} scan
LC_ALL=C; export LC_ALL
T=$(printf '\t'); U=$(printf '\037')
tk=$(getconf CLK_TCK 2>/dev/null || echo 100)
bt=$(awk '/^btime/{{print $2}}' /proc/stat 2>/dev/null)
me=$$
myns=$(readlink /proc/self/ns/pid 2>/dev/null)
printf 'K\tuser\t%s\n' "$(id -un 2>/dev/null || id -u)"
printf 'K\thostname\t%s\n' "$(cat /proc/sys/kernel/hostname 2>/dev/null)"
printf 'K\tbtime\t%s\n' "$bt"
command -v python3 >/dev/null 2>&1 && printf 'K\tpython3\t%s\n' "$(command -v python3)"
others=0; denied=0
for d in /proc/[0-9]*; do
  p=${{d#/proc/}}
  [ "$p" = "$me" ] && continue
  {{ read -r s < "$d/stat"; }} 2>/dev/null || continue  # read: no fork per process
  [ -n "$s" ] || continue
  comm=${{s#*\(}}; comm=${{comm%\)*}}
  rest=${{s##*\) }}
  set -- $rest
  state=$1; ppid=$2
  if [ "$state" = Z ]; then
    ns=$(readlink "/proc/$ppid/ns/pid" 2>/dev/null)  # a zombie has no namespaces left: its parent's
    [ -n "$myns" ] && [ -n "$ns" ] && [ "$ns" != "$myns" ] && continue
    printf 'Z\t%s\t%s\t%s\n' "$p" "$ppid" "$comm"; continue
  fi
  case $comm in python*|pt_*|torchrun*|accelerate*|deepspeed*|train*) ;; *) continue;; esac
  st=${{20}}
  a=$(tr '\000\n\t' '\037\036 ' < "$d/cmdline" 2>/dev/null)
  case $a in *{MARKER}*) continue;; esac
  match=0
  case $a in {_ARGV_CASE}) match=1;; esac
  grep -q libtorch "$d/maps" 2>/dev/null; g=$?
  if [ $g = 0 ]; then torch=1; elif [ $g = 1 ]; then torch=0; else torch='?'; fi
  [ $match = 0 ] && [ "$torch" != 1 ] && continue
  ns=$(readlink "$d/ns/pid" 2>/dev/null)
  if [ -n "$myns" ] && [ -n "$ns" ] && [ "$ns" != "$myns" ]; then others=$((others+1)); continue; fi
  cwd=$(readlink "$d/cwd" 2>/dev/null) || cwd='?'
  o1=$(readlink "$d/fd/1" 2>/dev/null) || o1='?'
  o2=$(readlink "$d/fd/2" 2>/dev/null) || o2='?'
  [ "$cwd$o1" = '??' ] && denied=$((denied+1))
  logs=$(ls -l "$d/fd" 2>/dev/null | sed -n 's/.* -> \(.*\.log\)$/\1/p' | sort -u | tr '\n' "$U")
  cl=''
  [ "$cwd" != '?' ] && cl=$(ls -t "$cwd"/*.log 2>/dev/null | head -n 1)
  if e=$(tr '\000' '\n' < "$d/environ" 2>/dev/null); then
    env=$(printf '%s\n' "$e" | grep -E '^({_ENV_RE})=' | tr '\n\t' "$U ")
  else env='?'; fi
  u=$(stat -c %U "$d" 2>/dev/null) || u='?'
  start='?'
  case $st in ''|*[!0-9]*) ;; *) [ -n "$bt" ] && start=$((bt + st / tk));; esac
  printf 'J\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$p" "$ppid" "$state" "$start" "$u" "$torch" \
    "$match" "$cwd" "$o1" "$o2" "$logs" "$cl" "$env" "$a"
done
[ $others -gt 0 ] && printf 'K\tother_namespaces\t%s\n' "$others"
[ $denied -gt 0 ] && printf 'E\tprocess\t%s job processes could not be read (cwd, fds): not root?\n' "$denied"
exit 0
"""


def build_script(container: str | None = None) -> str:
    """The host script; ``container``: look only at that container (its id or name), else all.

    Each container's part (its config and its scan) runs in the background into a file of its
    own, printed in order at the end: the slow runtime tools (``pct`` is Perl, each call a few
    hundred ms on Proxmox) overlap instead of adding up.  Without a writable temporary
    directory the parts run one after the other."""
    only = shlex.quote(container or "")
    return f"""# {MARKER}
ONLY={only}
SCAN={shlex.quote(SCAN)}
D=$(mktemp -d 2>/dev/null) || D=''
part() {{  # part FILE FUNCTION ARGS...: in the background into $D/FILE, or now
  f=$1; shift
  if [ -n "$D" ]; then "$@" > "$D/$f" 2>&1 & else "$@"; fi
}}
host_scan() {{ printf '@@ target none -\\n'; sh -c "$SCAN" {MARKER} 2>/dev/null; }}
pct_one() {{
  printf '@@ pct-conf %s\\n' "$1"
  cat "/etc/pve/lxc/$1.conf" 2>/dev/null || pct config "$1" 2>&1 </dev/null
  if [ "$2" = running ]; then
    printf '@@ target pct %s\\n' "$1"
    pct exec "$1" -- /bin/sh -c "$SCAN" {MARKER} </dev/null 2>&1
    printf '@@ rc %s\\n' "$?"
  fi
}}
engine_one() {{
  printf '@@ target %s %s\\n' "$1" "$2"
  "$1" exec -i "$2" /bin/sh -c "$SCAN" {MARKER} </dev/null 2>&1
  printf '@@ rc %s\\n' "$?"
}}
printf '@@ host\\n'
for t in pct docker podman sbatch squeue python3 nvidia-smi; do
  command -v "$t" >/dev/null 2>&1 && printf 'K\\ttool\\t%s\\n' "$t"
done
[ "$(id -u)" = 0 ] || printf 'E\\thost\\tnot root: other users'"'"' processes and container configs may be unreadable\\n'
part 0-host host_scan
if command -v pct >/dev/null 2>&1; then
  printf '@@ pct-list\\n'
  L=$(pct list 2>&1 </dev/null); r=$?
  printf '%s\\n@@ rc %s\\n' "$L" "$r"
  printf '%s\\n' "$L" | awk 'NR>1 && $1 ~ /^[0-9]+$/ {{print $1, $2}}' | {{
    n=0
    while read -r id st; do
      [ -n "$ONLY" ] && [ "$ONLY" != "$id" ] && continue
      n=$((n+1)); part "1-$(printf %06d $n)" pct_one "$id" "$st"
    done
    wait
  }}
fi
for eng in docker podman; do
  command -v "$eng" >/dev/null 2>&1 || continue
  printf '@@ engine-ps %s\\n' "$eng"
  L=$("$eng" ps -a --format '{{{{.ID}}}}|{{{{.Names}}}}|{{{{.Image}}}}|{{{{.Status}}}}' 2>&1 </dev/null); r=$?
  printf '%s\\n@@ rc %s\\n' "$L" "$r"
  [ "$r" = 0 ] || continue
  printf '%s\\n' "$L" | {{
    n=0
    while IFS='|' read -r cid name image status; do
      case $status in Up*|running*) ;; *) continue;; esac
      [ -n "$ONLY" ] && [ "$ONLY" != "$name" ] && [ "$ONLY" != "$cid" ] && continue
      n=$((n+1)); part "2-$eng-$(printf %06d $n)" engine_one "$eng" "$name"
    done
    wait
  }}
done
if command -v sbatch >/dev/null 2>&1; then
  printf '@@ squeue\\n'
  squeue --me -h -o '%i|%j|%T|%M|%N' 2>&1 </dev/null
  printf '@@ rc %s\\n' "$?"
fi
wait
if [ -n "$D" ]; then
  for f in "$D"/*; do [ -f "$f" ] && cat "$f"; done
  rm -rf "$D"
fi
exit 0
"""
