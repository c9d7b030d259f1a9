# shellcheck shell=bash
# Shared by the scripts/gpu-* scripts, which run on a machine with NVIDIA GPUs. Sourced, never executed;
# the caller has set `root` (the repository root) and made it the working directory.

# gpu_setup: sets `bin` (the gpu preset's memstress, configured and built when missing), and `gpu` and
# `driver` for naming results ("h200" and "580.159.04"; see scripts/gpu-tag).
# shellcheck disable=SC2034 # bin, gpu and driver are for the caller
gpu_setup() {
  : "${root:?set root to the repository root before gpu_setup}"
  bin="$root/build/gpu/apps/memstress"
  if [[ ! -x "$bin" ]]; then
    cmake --preset gpu >&2
    cmake --build --preset gpu -j "${MEMSTRESS_JOBS:-$(nproc)}" >&2
  fi
  read -r gpu driver < <(scripts/gpu-tag "$bin") || true
  if [[ -z "${gpu:-}" || -z "${driver:-}" ]]; then
    printf '%s: cannot name the GPU and driver (scripts/gpu-tag %s failed)\n' "$0" "$bin" >&2
    exit 3
  fi
}
