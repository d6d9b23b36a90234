#!/bin/bash
# Capture what cockpit reads from a real GPU machine, into $OUT (default /tmp/gpu-capture):
# cockpit's own nvidia-smi probe (idle, then with a process holding 4 GiB), the tool's answers to
# bad input, and torch.compile's trace of a small CUDA job run twice on one inductor cache (cold,
# then warm).  Run from the repository root on a machine with a GPU and a Python that has torch:
#     OUT=/tmp/gpu-capture bash tests/lab/gpu_capture/run.sh
# The fixtures made from it: tests/fixtures/gpu/h200_580_*, tests/fixtures/torch_trace/cuda_cache_*
# (see tests/fixtures/README.md for how they were trimmed).
set -u
D=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$D/../../.." && pwd)
O=${OUT:-/tmp/gpu-capture}; mkdir -p "$O"; cd "$O" || exit 1
# the probe's own command text (stdlib only: no cockpit dependencies needed on the GPU machine)
q() { python3 -S -c "import sys; sys.path.insert(0, '$ROOT'); from cockpit.core.probes.gpu.command import gpu_query_command as g; print(g($1))"; }
run() { out=$1; shift; "$@" > "$out" 2>&1; echo "rc=$?" >> "$out"; }
# cockpit's GPU stream for 3 s (its stdin closing ends it, as cockpit's channel closing does)
stream() {
  cmd=$(python3 -S -c "import sys; sys.path.insert(0, '$ROOT'); from cockpit.core.probes.gpu.follow import stream_command as s; from cockpit.core.probes.gpu.command import GPU_FIELDS as F; print(s('nvidia-smi', F, 0.5))")
  sleep 3 | sh -c "$cmd" 2>&1 | while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done > "$1"
}
if [ "${1:-}" = stream ]; then
  stream stream_idle.txt
  rm -f held; timeout 60 python3 "$D/holder.py" "$O/held" 20 & H=$!
  for _ in $(seq 1 600); do [ -e held ] && break; sleep 0.1; done
  stream stream_busy.txt
  kill $H 2>/dev/null; wait $H 2>/dev/null; rm -f held
  exit 0
fi
{ date; uname -a; head -3 /etc/os-release; nproc; command -v nvidia-smi python3; python3 --version; } > env.txt 2>&1
run smi_version.txt nvidia-smi --version
run smi_plain.txt nvidia-smi
run smi_L.txt nvidia-smi -L
run q_default_idle.txt sh -c "$(q '')"
run q_describe_idle.txt sh -c "$(q 'describe=True, fdscan=True')"
run err_invalid_field.txt nvidia-smi --query-gpu=index,bogus.field --format=csv,noheader,nounits
run err_bad_index.txt nvidia-smi -i 7 --query-gpu=index --format=csv,noheader,nounits
run apps_idle.txt nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader,nounits
run torch.txt timeout 60 python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
grep -q True torch.txt || exit 0
rm -f held; timeout 90 python3 "$D/holder.py" "$O/held" 40 & H=$!
for _ in $(seq 1 600); do [ -e held ] && break; sleep 0.1; done
run q_default_busy.txt sh -c "$(q '')"
run q_describe_busy.txt sh -c "$(q 'describe=True, fdscan=True')"
kill $H 2>/dev/null; wait $H 2>/dev/null
export TORCHINDUCTOR_CACHE_DIR=$O/inductor-cache
for n in cold warm; do
  mkdir -p "trace_$n"
  TORCH_TRACE=$O/trace_$n run "job_$n.log" timeout 300 python3 "$D/cuda_cache.py" 5
done
rm -rf "$O/inductor-cache" held
