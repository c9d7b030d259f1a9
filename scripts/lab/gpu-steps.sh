# shellcheck shell=bash
# Recorded steps, for scripts/lab/gpu-first-run and scripts/lab/gpu-readme-multi: commands run as a user types
# them (no MEMSTRESS_* variable, no virtual environment), each one's exit code, time and log kept, and a
# JSON record of them all. Sourced, never executed. The caller sets `work` (a scratch directory that holds
# the logs) before steps_init.
# shellcheck disable=SC2154,SC2034 # work is the caller's; steps_file and steps_status are for the caller

# fresh_copy SRC DEST: the checkout as a user gets it (no build trees, no .venv, nothing ignored).
fresh_copy() {
  mkdir -p "$2"
  tar -C "$1" --exclude=./build --exclude=./.venv --exclude=./.deps --exclude=./.whl --exclude=./.gl \
    --exclude=./.probe --exclude=__pycache__ --exclude=./compile_commands.json -cf - . | tar -C "$2" -xf -
}

steps_init() {
  steps_file="$work/steps.jsonl"
  : >"$steps_file"
  steps_status=0
}

# step NAME LOG EXPECTED CWD COMMAND...: runs COMMAND in CWD with the clean environment, appends its output
# to $work/LOG and records the step; EXPECTED is the exit code that counts as success. NCCL_NVLS_ENABLE=0
# stays set: the GPU machines the records come from keep NVLink SHARP off (their rule, not a memstress need).
step() {
  local name="$1" logfile="$2" expected="$3" cwd="$4"
  shift 4
  local start end rc unset=(-u VIRTUAL_ENV -u CONDA_PREFIX) var
  for var in $(compgen -e | grep '^MEMSTRESS_' || true); do
    unset+=(-u "$var")
  done
  printf '\n$ (cd %s && %s)\n' "$cwd" "$*" >>"$work/$logfile"
  start=$(date +%s.%N)
  (cd "$cwd" && env "${unset[@]}" NCCL_NVLS_ENABLE=0 "$@") >>"$work/$logfile" 2>&1
  rc=$?
  end=$(date +%s.%N)
  printf '[exit %d after %s s]\n' "$rc" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" \
    >>"$work/$logfile"
  python3 - "$name" "$cwd" "$rc" "$expected" "$start" "$end" "$logfile" "$*" >>"$steps_file" <<'EOF'
import json, sys
name, cwd, rc, expected, start, end, logfile, command = sys.argv[1:]
print(json.dumps({"step": name, "command": command, "cwd": cwd, "exit_code": int(rc), "expected": int(expected),
                  "ok": int(rc) == int(expected), "seconds": round(float(end) - float(start), 1), "log": logfile}))
EOF
  if ((rc != expected)); then
    steps_status=1
    printf '%s: step %s: exit %d (expected %d); see %s\n' "$0" "$name" "$rc" "$expected" "$logfile" >&2
  else
    printf '%s: step %s: ok (exit %d)\n' "$0" "$name" "$rc" >&2
  fi
}

# steps_record OUT SCHEMA WHAT SHA GPU DRIVER BUILD_DIR: copies the logs to OUT and writes OUT/record.json:
# the steps, the build's compiler, CMake and preset line, the GPU, driver and commit.
steps_record() {
  local out="$1"
  mkdir -p "$out"
  cp "$work"/*.log "$out"/
  python3 - "$@" "$steps_file" "$work" <<'EOF'
import datetime, json, re, subprocess, sys
out, schema, what, sha, gpu, driver, build, steps_file, work = sys.argv[1:]
steps = [json.loads(line) for line in open(steps_file) if line.strip()]
cache = {}
try:
    for line in open(f"{build}/CMakeCache.txt"):
        m = re.match(r"([A-Za-z_]+):[A-Z]+=(.*)", line)
        if m:
            cache[m.group(1)] = m.group(2)
except OSError:
    pass
def first_line(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.splitlines()[0]
    except (OSError, IndexError):
        return None
preset = None
for log in {s["log"] for s in steps}:
    with open(f"{work}/{log}") as f:
        preset = preset or next((l.strip() for l in f if re.search(r"scripts/(run|test): preset", l)), None)
compiler = cache.get("CMAKE_CXX_COMPILER")
doc = {
    "schema": schema, "what": what, "git_sha": sha, "gpu": gpu, "driver": driver,
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "build": {"compiler": compiler, "compiler_version": first_line([compiler, "--version"]) if compiler else None,
              "cuda_compiler": cache.get("CMAKE_CUDA_COMPILER"),
              "cuda_architectures": cache.get("CMAKE_CUDA_ARCHITECTURES"),
              "warnings_are_errors": cache.get("MEMSTRESS_WERROR"), "cmake": first_line(["cmake", "--version"]),
              "preset_line": preset},
    "steps": steps,
    "all_ok": all(s["ok"] for s in steps),
}
with open(f"{out}/record.json", "w") as f:
    json.dump(doc, f, indent=2)
for s in steps:
    print(f"{'ok  ' if s['ok'] else 'FAIL'} {s['step']}: exit {s['exit_code']} in {s['seconds']} s")
EOF
  steps_portable "$out"
}

# steps_portable OUT: the scratch directories of this machine (the steps' own, mktemp's memstress-*.XXXXXX
# under $TMPDIR) named as $TMPDIR/memstress-NAME.XXXXXX in every file of OUT, so that a record names no path
# of the machine it came from.
steps_portable() {
  python3 - "$1" "${TMPDIR:-/tmp}" <<'EOF_PY'
import pathlib, re, sys
out, tmp = pathlib.Path(sys.argv[1]), sys.argv[2].rstrip("/")
scratch = re.compile(rf"(?:{re.escape(tmp)}|/tmp)/(memstress-[A-Za-z-]+[.-])[A-Za-z0-9]{{6}}")
for path in sorted(p for p in out.iterdir() if p.is_file()):
    text = path.read_text(errors="surrogateescape")
    portable = scratch.sub(r"$TMPDIR/\1XXXXXX", text)
    if portable != text:
        path.write_text(portable, errors="surrogateescape")
EOF_PY
}
