#!/usr/bin/env bash
# expect.sh [--skip-if-gpu | --needs-gpu] [--json-stdout] [--match REGEX]... [--stdout-match REGEX]... CODE -- COMMAND...
# Runs COMMAND and passes when it exits with CODE and its output (stdout + stderr) matches every REGEX
# (grep -E). --json-stdout: stdout alone must parse as JSON. --skip-if-gpu: exit 77 (CTest: skipped) on a
# machine with an NVIDIA GPU, for behaviour that only exists without one; --needs-gpu: exit 77 on a machine
# without one (exit 1 where MEMSTRESS_REQUIRE_GPU=1).
set -uo pipefail
matches=() stdout_matches=() json=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --skip-if-gpu)
      if [[ -e /dev/nvidia0 ]] || compgen -G "/dev/nvidia[0-9]*" >/dev/null; then
        echo "skipped: this machine has an NVIDIA GPU"; exit 77
      fi
      shift ;;
    --needs-gpu)
      if ! { [[ -e /dev/nvidia0 ]] || compgen -G "/dev/nvidia[0-9]*" >/dev/null; }; then
        # GPU CI sets MEMSTRESS_REQUIRE_GPU=1: there a missing GPU fails the test, never skips it.
        [[ "${MEMSTRESS_REQUIRE_GPU:-}" == 1 ]] && { echo "FAIL: MEMSTRESS_REQUIRE_GPU=1 and no CUDA device"; exit 1; }
        echo "skipped: needs a CUDA device"; exit 77
      fi
      shift ;;
    --json-stdout) json=1; shift ;;
    --match) matches+=("$2"); shift 2 ;;
    --stdout-match) stdout_matches+=("$2"); shift 2 ;;
    *) break ;;
  esac
done
expected=$1; shift
[[ "$1" == "--" ]] && shift
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
rc=$?
echo "--- command: $*"; echo "--- exit code: $rc (expected $expected)"
echo "--- stdout:"; head -c 20000 "$out"; echo "--- stderr:"; head -c 20000 "$err"
status=0
[[ "$rc" == "$expected" ]] || { echo "FAIL: exit code $rc, expected $expected"; status=1; }
for re in "${matches[@]}"; do
  grep -Eq -- "$re" "$out" "$err" || { echo "FAIL: output does not match /$re/"; status=1; }
done
for re in "${stdout_matches[@]}"; do
  grep -Eq -- "$re" "$out" || { echo "FAIL: stdout does not match /$re/"; status=1; }
done
if [[ $json == 1 ]]; then
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out" || { echo "FAIL: stdout is not JSON"; status=1; }
fi
exit $status
