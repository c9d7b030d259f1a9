# shellcheck shell=bash
# Shared functions of scripts/setup, scripts/run and scripts/test. Sourced, never executed.
#
# Every message goes to stderr as one short line prefixed with the calling script's name
# (MS_PROG, e.g. "scripts/run: ..."), so that stdout carries only what the command itself prints
# (memstress's results table, ctest's report).
#
# Exit codes follow the project's convention: 3 when the environment is missing something we do not
# install (packages as non-root, the CUDA toolkit, nvml.h), 1 when configuring or building fails.
#
# Knobs (environment; a user sets none of them):
#   MEMSTRESS_PRESET          cmake preset: gpu where an NVIDIA GPU is present, else cpu (asan, tsan too)
#   MEMSTRESS_SANITIZE        1 (CI): scripts/test also runs the sanitizer presets and the fuzz step
#                             (scripts/fuzz), so setup installs clang and libFuzzer too
#   MEMSTRESS_WERROR          1: warnings are errors (.ci/run and developers set it; users' builds never
#                             fail on a warning, since a newer compiler may warn where ours does not)
#   MEMSTRESS_JOBS            build parallelism (default: nproc, capped at one job per 2 GiB available)
#   MEMSTRESS_PYTHON          python used to create .venv (default: python3)
#   MEMSTRESS_REQUIRE_PYDEPS  1: failing to install requirements.txt is fatal (CI sets it)
#   MEMSTRESS_CCACHE          1: compile through ccache (CI: setup installs it); 0: never; unset: where ccache is
#                             on PATH. With precompiled headers ccache needs CCACHE_SLOPPINESS (set when unset)
#   MS_BUILD_TARGETS          what the build builds (default: the preset's build targets; scripts/run: memstress)
# With either MEMSTRESS_SANITIZE=1 or MEMSTRESS_REQUIRE_PYDEPS=1 (CI, ms_ci) the optional packages are
# required too, and cmake is told so (-DMEMSTRESS_WITH_DB=ON): nothing CI tests may silently go missing.

MS_PROG="${MS_PROG:-scripts/setup}"

# The repository root, from this file's own location (links resolved: scripts/ may be reached through one).
MEMSTRESS_ROOT="$(cd -P "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

ms_log() { printf '%s: %s\n' "$MS_PROG" "$*" >&2; }
ms_warn() { printf '%s: warning: %s\n' "$MS_PROG" "$*" >&2; }
# ms_die CODE MESSAGE...
ms_die() {
  local code="$1"
  shift
  printf '%s: error: %s\n' "$MS_PROG" "$*" >&2
  exit "$code"
}

# --- system packages -------------------------------------------------------------------------------

MS_APT_PACKAGES=(cmake ninja-build g++ libopenmpi-dev openmpi-bin libcli11-dev nlohmann-json3-dev
  libyaml-cpp-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev)

# Wanted, not needed: without them everything but `memstress db` (the fleet store; libpq-dev: on PostgreSQL) and the
# reading of .xz results (liblzma-dev) builds
# (cmake/FleetStore.cmake). Installed with the others where apt can run; where it cannot (not root, or
# an offline GPU node whose apt-get update fails) setup warns and goes on, so that the first scripts/run
# there still builds. CI (ms_ci) requires them.
MS_APT_OPTIONAL_PACKAGES=(libsqlite3-dev libssl-dev libpq-dev liblzma-dev)

# CI's only: the PostgreSQL server that the store's PostgreSQL tests start and stop themselves
# (tests/db/postgresql_server.sh) and Slurm with munge, which the Slurm test starts and stops on this host
# (tests/slurm/slurm_cluster.sh), never installed on a user's machine: they are services; and ccache, which
# keeps the objects of one CI run for the next on the same machine (ms_ccache); clang-format and shellcheck,
# which scripts/lint (CTest's lint.tree) runs with ruff (requirements.txt); clang-tidy, which scripts/dev/tidy
# (CTest's lint.tidy) runs over the files the last commit changed.
MS_APT_CI_PACKAGES=(postgresql slurm-wlm munge ccache clang-format clang-tidy shellcheck)

# Whether we may install packages (tests/scripts/test_setup_lib.py stands in another answer).
ms_is_root() {
  ((EUID == 0))
}

# Whether this is CI (.ci/run): the sanitizer runs, or the python tools required.
ms_ci() {
  [[ "${MEMSTRESS_SANITIZE:-0}" == 1 || "${MEMSTRESS_REQUIRE_PYDEPS:-0}" == 1 ]]
}

# Whether the fuzz step will run: scripts/fuzz (MS_WANT_FUZZ=1), or scripts/test with MEMSTRESS_SANITIZE=1 and
# the cpu preset (CI). Only then are clang and libFuzzer needed: a plain scripts/run never asks for them.
ms_fuzz_wanted() {
  [[ "${MS_WANT_FUZZ:-0}" == 1 ]] || [[ "${MEMSTRESS_SANITIZE:-0}" == 1 && "${MEMSTRESS_PRESET:-cpu}" == cpu ]]
}

# The fuzz step's packages: clang, and the runtime holding libFuzzer for that clang's version (Debian 12:
# clang 14, libclang-rt-14-dev; 14 where no clang is installed yet).
ms_fuzz_packages() {
  local major
  major="$(clang++ --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n 1 || true)"
  printf '%s\n' clang "libclang-rt-${major:-14}-dev"
}

ms_pkg_installed() {
  # Build tools count as present when a usable one is on PATH, whoever installed it (the GPU images
  # carry CMake 4 from pip and their own compilers, not Debian's packages).
  case "$1" in
    cmake) ms_cmake_usable && return 0 ;;
    ninja-build) command -v ninja >/dev/null 2>&1 && return 0 ;;
    g++) command -v g++ >/dev/null 2>&1 && return 0 ;;
    clang) command -v clang++ >/dev/null 2>&1 && return 0 ;;
  esac
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

# Whether the cmake on PATH is at least 3.25 (presets version 6).
ms_cmake_usable() {
  local version
  version="$(cmake --version 2>/dev/null | head -n 1 | awk '{print $3}')" || return 1
  [[ -n "$version" ]] && [[ "$(printf '%s\n3.25.0\n' "$version" | sort -V | head -n 1)" == 3.25.0 ]]
}

# Whether $1 (a python) can create a virtual environment with pip in it (Debian splits ensurepip
# into python3-venv).
ms_python_can_venv() {
  command -v "$1" >/dev/null 2>&1 && "$1" -c 'import venv, ensurepip' >/dev/null 2>&1
}

# Installs the missing Debian packages as root, or says how to and exits 3. Does nothing (no
# apt-get update either: GPU machines are offline) when everything is there. The optional packages
# (MS_APT_OPTIONAL_PACKAGES) go with the others; alone, outside CI, failing to install them is a warning.
ms_ensure_packages() {
  local wanted=("${MS_APT_PACKAGES[@]}") missing=() optional=() pkg
  if ! ms_python_can_venv "${MEMSTRESS_PYTHON:-python3}"; then
    wanted+=(python3-venv)
  fi
  if ms_fuzz_wanted; then
    mapfile -t -O "${#wanted[@]}" wanted < <(ms_fuzz_packages)
  fi
  if ms_ci; then
    wanted+=("${MS_APT_CI_PACKAGES[@]}")
  fi
  if ! command -v dpkg-query >/dev/null 2>&1; then
    ms_warn "no dpkg-query (not Debian/Ubuntu): cannot check packages; make sure these are installed:" \
      "${wanted[*]} (and for memstress db: ${MS_APT_OPTIONAL_PACKAGES[*]})"
    return 0
  fi
  for pkg in "${wanted[@]}"; do
    ms_pkg_installed "$pkg" || missing+=("$pkg")
  done
  for pkg in "${MS_APT_OPTIONAL_PACKAGES[@]}"; do
    ms_pkg_installed "$pkg" || optional+=("$pkg")
  done
  if ((${#missing[@]} == 0 && ${#optional[@]} == 0)); then
    ms_log "system packages: all $((${#wanted[@]} + ${#MS_APT_OPTIONAL_PACKAGES[@]})) present"
    return 0
  fi
  if ((${#missing[@]} > 0)) || ms_ci; then
    ms_install_packages "${missing[@]}" "${optional[@]}"
    return 0
  fi
  # Only the optional ones are missing: try, and go on without them if apt cannot run.
  if ! ms_is_root; then
    ms_warn "memstress db will not be built: ${optional[*]} missing and not root to install them" \
      "(sudo apt-get install ${optional[*]}, then scripts/setup again); everything else is"
  elif ! apt-get update >&2; then
    ms_warn "memstress db will not be built: ${optional[*]} missing and apt-get update failed (offline?);" \
      "everything else is"
  elif ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${optional[@]}" >&2; then
    ms_warn "memstress db will not be built: apt-get install failed for ${optional[*]}; everything else is"
  fi
}

# ms_install_packages PKG...: installs them as root, or says how to and exits 3.
ms_install_packages() {
  if ! ms_is_root; then
    ms_log "system packages missing: $*"
    ms_log "install them with:"
    printf '  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends %s\n' \
      "$*" >&2
    exit 3
  fi
  ms_log "installing system packages: $*"
  apt-get update >&2 || ms_die 3 "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2 ||
    ms_die 3 "apt-get install failed for: $*"
}

# --- CUDA toolkit ----------------------------------------------------------------------------------

# Finds nvcc (CUDACXX, PATH, /usr/local/cuda), exits 3 without one. Sets MS_NVCC and MS_CUDA_ROOT and
# exports CUDACXX and PATH so that cmake and FindCUDAToolkit pick the same toolkit.
ms_ensure_cuda() {
  local nvcc=""
  if [[ -n "${CUDACXX:-}" && -x "${CUDACXX}" ]]; then
    nvcc="$CUDACXX"
  elif command -v nvcc >/dev/null 2>&1; then
    nvcc="$(command -v nvcc)"
  elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
    nvcc=/usr/local/cuda/bin/nvcc
  fi
  if [[ -z "$nvcc" ]]; then
    ms_die 3 "CUDA toolkit not found: no nvcc on PATH nor at /usr/local/cuda/bin/nvcc." \
      "Install the CUDA toolkit (12.4 or newer; this project does not install it) or set CUDACXX."
  fi
  export MS_NVCC="$nvcc"
  MS_CUDA_ROOT="$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)"
  local bin_dir
  bin_dir="$(dirname "$nvcc")"
  case ":$PATH:" in
    *":$bin_dir:"*) ;;
    *) PATH="$bin_dir:$PATH" ;;
  esac
  export PATH CUDACXX="$nvcc"
  local release
  release="$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -n1)"
  ms_log "CUDA: $nvcc (release ${release:-unknown})"
}

# Prints the directory holding nvml.h in the CUDA toolkit (or the system include dir), if any.
ms_toolkit_nvml_dir() {
  local dir
  for dir in "$MS_CUDA_ROOT/include" "$MS_CUDA_ROOT"/targets/*/include /usr/include; do
    if [[ -f "$dir/nvml.h" ]]; then
      printf '%s\n' "$dir"
      return 0
    fi
  done
  return 1
}

# Prints the venv directory holding nvml.h (PyPI nvidia-nvml-dev), where cmake/FindNVML.cmake looks.
ms_venv_nvml_dir() {
  local header
  for header in "$MEMSTRESS_ROOT"/.venv/lib/python3*/site-packages/nvidia/cu*/include/nvml.h; do
    if [[ -f "$header" ]]; then
      dirname "$header"
      return 0
    fi
  done
  return 1
}

# --- python virtual environment --------------------------------------------------------------------

# Creates (or repairs) ./.venv and installs requirements.txt into it, unless a stamp says the venv
# already holds exactly these requirements. Exports VIRTUAL_ENV and puts .venv/bin first on PATH so
# that `python3` (scripts, ctest, cmake's FindPython) is the venv's.
ms_ensure_venv() {
  local venv="$MEMSTRESS_ROOT/.venv" req="$MEMSTRESS_ROOT/requirements.txt"
  local stamp="$venv/.memstress-requirements.stamp" python="${MEMSTRESS_PYTHON:-python3}"
  local require="${MEMSTRESS_REQUIRE_PYDEPS:-0}"

  if [[ -x "$venv/bin/python3" ]] && "$venv/bin/python3" -c '' >/dev/null 2>&1; then
    :
  elif ms_python_can_venv "$python"; then
    # Not --clear: repairing in place keeps what is installed (e.g. nvml.h carried to an offline machine).
    # A venv made on another machine points at a python that is not here: drop those links first.
    if [[ -d "$venv/bin" ]]; then
      ms_log "python: .venv's python does not run here: repairing .venv"
      rm -f "$venv"/bin/python "$venv"/bin/python3 "$venv"/bin/python3.*
    fi
    ms_log "python: creating virtual environment .venv ($("$python" --version 2>&1))"
    "$python" -m venv "$venv" >&2 || ms_die 3 "could not create .venv with $python -m venv"
  else
    if [[ "$require" == 1 ]]; then
      ms_die 3 "no python able to create a virtual environment ($python -m venv); install python3-venv"
    fi
    ms_warn "no python able to create .venv ($python -m venv): skipping python dependencies"
    ms_check_nvml
    return 0
  fi

  local want
  want="$(sha256sum "$req" | cut -d' ' -f1) $("$venv/bin/python3" -c 'import sys; print(sys.version.split()[0])')"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    ms_log "python: .venv up to date with requirements.txt"
  else
    ms_log "python: installing requirements.txt into .venv"
    if "$venv/bin/python3" -m pip install --disable-pip-version-check --quiet --retries 2 -r "$req" >&2; then
      printf '%s\n' "$want" >"$stamp"
    elif [[ "$require" == 1 ]]; then
      ms_die 3 "pip install -r requirements.txt failed (MEMSTRESS_REQUIRE_PYDEPS=1)"
    else
      ms_warn "pip install -r requirements.txt failed (offline?): continuing without it;" \
        "results validation will be skipped"
    fi
  fi

  export VIRTUAL_ENV="$venv"
  case ":$PATH:" in
    *":$venv/bin:"*) ;;
    *) PATH="$venv/bin:$PATH" ;;
  esac
  export PATH
  ms_check_nvml
}

# nvml.h must come from the toolkit or the venv; say which, or exit 3 before cmake does.
ms_check_nvml() {
  local dir
  if dir="$(ms_toolkit_nvml_dir)"; then
    ms_log "nvml.h: $dir (CUDA toolkit)"
  elif dir="$(ms_venv_nvml_dir)"; then
    ms_log "nvml.h: ${dir#"$MEMSTRESS_ROOT"/} (PyPI nvidia-nvml-dev)"
  else
    ms_die 3 "nvml.h not found: not in the CUDA toolkit ($MS_CUDA_ROOT) and not in .venv" \
      "(pip install -r requirements.txt provides it through nvidia-nvml-dev)"
  fi
}

# --- configure and build ---------------------------------------------------------------------------

# Build parallelism: nproc, at most one job per 2 GiB of available memory (nvcc is memory hungry).
ms_jobs() {
  if [[ -n "${MEMSTRESS_JOBS:-}" ]]; then
    printf '%s\n' "$MEMSTRESS_JOBS"
    return 0
  fi
  local cpus mem_kib by_mem
  cpus="$(nproc 2>/dev/null || echo 1)"
  mem_kib="$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || true)"
  by_mem=$((${mem_kib:-0} / (2 * 1024 * 1024)))
  if ((by_mem < 1)); then by_mem=1; fi
  if ((cpus < by_mem)); then by_mem=$cpus; fi
  printf '%s\n' "$by_mem"
}

# The NVIDIA GPUs of this machine, one name a line (nvidia-smi), or nothing. A driver that does not
# answer counts as no GPU.
ms_gpu_names() {
  command -v nvidia-smi >/dev/null 2>&1 || return 0
  timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sed '/^[[:space:]]*$/d' || true
}

# Sets MEMSTRESS_PRESET: the caller's choice, else gpu (device code for the GPUs present) where
# nvidia-smi lists a GPU, else cpu. Says which and why.
ms_pick_preset() {
  if [[ -n "${MEMSTRESS_PRESET:-}" ]]; then
    ms_log "preset $MEMSTRESS_PRESET (MEMSTRESS_PRESET)"
    return 0
  fi
  local names count
  names="$(ms_gpu_names)"
  if [[ -n "$names" ]]; then
    count="$(printf '%s\n' "$names" | wc -l)"
    MEMSTRESS_PRESET=gpu
    ms_log "preset gpu: $count NVIDIA GPU(s) here ($(printf '%s\n' "$names" | sort | uniq -c |
      awk '{$1=$1" x"; print}' | paste -sd, -)); device code is built for them (native)"
  else
    MEMSTRESS_PRESET=cpu
    ms_log "preset cpu: no NVIDIA GPU here (nvidia-smi lists none); the simulated device runs what" \
      "needs no real memory and GPU cases are skipped with the reason"
  fi
}

# Prints the compiler launcher to configure with: ccache (MEMSTRESS_CCACHE=1, or unset and ccache on PATH), or
# nothing. Said to cmake explicitly either way, so that an earlier configure's cache does not decide.
ms_ccache() {
  case "${MEMSTRESS_CCACHE:-auto}" in
    0) return 0 ;;
    1) command -v ccache || ms_warn "MEMSTRESS_CCACHE=1 but no ccache on PATH: building without it" ;;
    *) command -v ccache || true ;;
  esac
}

# ms_configure_build PRESET: cmake --preset, then cmake --build --preset. Returns non-zero (after
# saying so) on failure; the caller decides whether that ends the script. Warnings are errors only
# with MEMSTRESS_WERROR=1, said explicitly either way so that an earlier configure's cache does not decide.
# Likewise the fleet store: required in CI (MEMSTRESS_WITH_DB=ON), else built where its packages are (AUTO);
# and the RMM peers: required in CI (MEMSTRESS_WITH_RMM=ON), else built where .venv has librmm (AUTO).
ms_configure_build() {
  local preset="$1" jobs werror=OFF db=AUTO rmm=AUTO launcher targets=()
  jobs="$(ms_jobs)"
  launcher="$(ms_ccache)"
  if [[ -n "$launcher" ]]; then
    # The precompiled headers (cmake/BuildSpeed.cmake) are found through -include: ccache caches such files
    # only when told that their time macros and the header's time stamps may be ignored.
    export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
    # Paths relative to the checkout, so that another clone in another folder (CI's next run) finds these
    # objects; where no base_dir is configured. In CI, also objects with debug information (the sanitizer
    # presets), whose comp_dir then names the clone that compiled them first.
    if [[ -z "${CCACHE_BASEDIR:-}" && -z "$(ccache --get-config base_dir 2>/dev/null || true)" ]]; then
      export CCACHE_BASEDIR="$MEMSTRESS_ROOT"
      if ms_ci; then
        export CCACHE_NOHASHDIR=1
      fi
    fi
  fi
  if [[ -n "${MS_BUILD_TARGETS:-}" ]]; then
    read -r -a targets <<<"$MS_BUILD_TARGETS"
  fi
  if [[ "${MEMSTRESS_WERROR:-0}" == 1 ]]; then
    werror=ON
  fi
  if ms_ci; then
    db=ON
    rmm=ON
  fi
  if [[ "$preset" == fuzz ]]; then
    rmm=OFF # the fuzz targets are parsers; RMM's headers are for g++ builds of the harness
  fi
  ms_log "configuring: cmake --preset $preset (warnings are errors: $werror; memstress db: $db; RMM peers: $rmm;" \
    "ccache: ${launcher:-no})"
  if ! cmake --preset "$preset" -DMEMSTRESS_WERROR="$werror" -DMEMSTRESS_WITH_DB="$db" \
    -DMEMSTRESS_WITH_RMM="$rmm" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" \
    -DCMAKE_CUDA_COMPILER_LAUNCHER="$launcher" >&2; then
    ms_log "error: configuring failed (cmake --preset $preset): see the messages above"
    return 1
  fi
  ms_log "building: cmake --build --preset $preset --parallel $jobs${targets[*]:+ --target ${targets[*]}}"
  if ! cmake --build --preset "$preset" --parallel "$jobs" ${targets[@]:+--target "${targets[@]}"} >&2; then
    ms_log "error: build failed (cmake --build --preset $preset): see the compiler messages above"
    return 1
  fi
  ms_log "built: build/$preset"
}

# ms_ctest PRESET [CTEST ARGS...]: the tests of PRESET's build. Tests run side by side, one per core
# (CTEST_PARALLEL_LEVEL, the caller's choice first): CI's time more than halves. On the gpu preset too: the
# tests that use the GPU hold the resource lock `gpu` and so run one at a time, beside the cpu-labelled ones;
# the timing tests and the mpi jobs with timeouts of their own run alone (RUN_SERIAL). With arguments, ctest as asked (one at a time on
# the gpu preset unless CTEST_PARALLEL_LEVEL says otherwise). Returns ctest's exit code.
ms_ctest() {
  local preset="$1" side_by_side rc=0
  shift
  side_by_side="${CTEST_PARALLEL_LEVEL:-$(nproc)}"
  if [[ "$preset" != gpu ]]; then
    ms_log "testing: ctest --preset $preset${*:+ $*} ($side_by_side at a time)"
    ctest --preset "$preset" --parallel "$side_by_side" "$@" || rc=$?
  elif (($# > 0)); then
    ms_log "testing: ctest --preset gpu $*${CTEST_PARALLEL_LEVEL:+ ($CTEST_PARALLEL_LEVEL at a time)}"
    ctest --preset gpu "$@" || rc=$?
  else
    # One ctest: every test that uses the GPU holds the resource lock `gpu` (tests/CMakeLists.txt), so they
    # run one at a time while the cpu-labelled tests run beside them; the timing tests run alone (RUN_SERIAL).
    ms_log "testing: ctest --preset gpu: the GPU tests one at a time, the cpu-labelled tests beside them" \
      "($side_by_side at a time)"
    ctest --preset gpu --parallel "$side_by_side" || rc=$?
  fi
  return "$rc"
}

# Everything scripts/setup does, in order. Exports MEMSTRESS_ROOT, MEMSTRESS_PRESET and
# MEMSTRESS_BUILD_DIR for the caller.
ms_setup() {
  ms_pick_preset
  MEMSTRESS_BUILD_DIR="$MEMSTRESS_ROOT/build/$MEMSTRESS_PRESET"
  export MEMSTRESS_ROOT MEMSTRESS_PRESET MEMSTRESS_BUILD_DIR
  cd "$MEMSTRESS_ROOT" || exit 1
  ms_ensure_cuda
  ms_ensure_packages
  ms_ensure_venv
  ms_configure_build "$MEMSTRESS_PRESET" || exit 1
}
