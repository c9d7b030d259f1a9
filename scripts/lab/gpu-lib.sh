# shellcheck shell=bash
# Shared by the scripts/lab/gpu-* scripts, which run on a machine with NVIDIA GPUs. Sourced, never executed;
# the caller has set `root` (the repository root) and made it the working directory.

# gpu_setup: sets `bin` (the gpu preset's memstress, configured and built when missing), and `gpu` and
# `driver` for naming results ("h200" and "580.159.04"; see scripts/lab/gpu-tag).
# shellcheck disable=SC2034 # bin, gpu and driver are for the caller
gpu_setup() {
  : "${root:?set root to the repository root before gpu_setup}"
  bin="$root/build/gpu/apps/memstress"
  if [[ ! -x "$bin" ]]; then
    cmake --preset gpu >&2
    cmake --build --preset gpu -j "${MEMSTRESS_JOBS:-$(nproc)}" >&2
  fi
  read -r gpu driver < <(scripts/lab/gpu-tag "$bin") || true
  if [[ -z "${gpu:-}" || -z "${driver:-}" ]]; then
    printf '%s: cannot name the GPU and driver (scripts/lab/gpu-tag %s failed)\n' "$0" "$bin" >&2
    exit 3
  fi
}

# gpu_multi_setup: gpu_setup for the scripts of several GPUs, one rank each: sets `n` (the GPUs $bin sees; exits
# 3 under 2), `mpi` (mpirun with a rank per GPU and NVLink SHARP off), `limit` (MEMSTRESS_STEP_TIMEOUT
# seconds, default 600, for gpu_step) and `status` (0). The caller defines `log`.
# shellcheck disable=SC2034 # mpi and limit are for the caller
gpu_multi_setup() {
  gpu_setup
  n="$("$bin" devices --format json | python3 -c 'import json, sys; print(len(json.load(sys.stdin).get("gpus") or []))')"
  ((n >= 2)) || {
    log "needs 2 or more GPUs (found $n)"
    exit 3
  }
  mpi=(mpirun -np "$n" -x NCCL_NVLS_ENABLE --bind-to none)
  limit="${MEMSTRESS_STEP_TIMEOUT:-600}"
  status=0
}

# gpu_step NAME STEM COMMAND...: runs COMMAND under `timeout $limit`, its stdout in $out/STEM.txt and its
# stderr in $out/STEM.log, and logs it and its exit; a failure sets status=1.
# shellcheck disable=SC2154 # out is the caller's
gpu_step() {
  local name="$1" stem="$2" start=$SECONDS rc=0
  shift 2
  log "$name: $*"
  timeout "$limit" "$@" >"$out/$stem.txt" 2>"$out/$stem.log" || rc=$?
  log "$name: exit $rc after $((SECONDS - start)) s"
  ((rc == 0)) || status=1
}

# source_version NAME SRC: "NAME <commit> <date>" where SRC is the top of a git checkout of its own, else
# "NAME (not a git checkout)". A source tree copied into a folder of another checkout (this repository's,
# say) must not be named by that checkout's commit, which `git -C SRC log` would find by walking up.
source_version() {
  local name="$1" src="$2" top
  top="$(git -C "$src" rev-parse --show-toplevel 2>/dev/null || true)"
  if [[ -n "$top" && "$(cd "$top" && pwd -P)" == "$(cd "$src" && pwd -P)" ]]; then
    git -C "$src" log -1 --format="$name %H %cd"
  else
    echo "$name (not a git checkout)"
  fi
}
