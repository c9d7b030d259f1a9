#!/usr/bin/env python3
"""scripts/lab/gpu_signals.py MEMSTRESS OUTDIR: signals in the middle of long GPU cases, recorded.

For each long case (a large integrity fill, a one-rank NCCL collective, a dataloader with worker processes
staging through pinned memory) and each signal (SIGINT, SIGTERM, SIGKILL), starts `memstress run
alloc-smoke CASE --out ... --junit ...` on the GPU, waits until the long case has run a while, sends the
signal, and records what a user finds afterwards:

- how the process ended (by the signal: -2, -15, -9) and how long it took to end after the signal;
- the .jsonl: every line whole, the finished alloc-smoke row there, a footer saying aborted (not for SIGKILL);
- the .json document: whole with status aborted and the finished rows (SIGINT/SIGTERM), absent (SIGKILL);
- the JUnit file says the run was aborted (SIGINT/SIGTERM);
- no worker process left running; the GPU's used memory back to what it was before (nvidia-smi);
- `memstress compare` and `memstress accept --from` read the .jsonl (exit 0/1, not 2), and
  `memstress report` renders it.

Writes OUTDIR/record.json (every scenario's figures and a verdict) and the runs' files. Exits 0 only when
every scenario held. The same behaviour is tested on the simulated device in CI (tests/cli/test_run_safety.py).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIRST = ["alloc-smoke", "-p", "alloc-smoke.bytes=1M"]
CASES = {
    "integrity": ["integrity", "-p", "integrity.patterns=" + "+".join(["random", "checkerboard", "walking_ones",
                                                                       "address"] * 25),
                  "-p", "integrity.block=256M"],
    "collective": ["collectives", "-p", "collectives.collective=all_reduce", "-p", "collectives.pressure=churn",
                   "-p", "collectives.bytes=1G", "-n", "100000"],
    "dataloader": ["dataloader", "-p", "dataloader.workers=process", "-p", "dataloader.pin=true",
                   "-p", "dataloader.batches=100000000", "-p", "dataloader.bytes=32M"],
}
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]


def gpu_used_mib():
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=False).stdout.split()
    return int(out[0]) if out else -1


def descendants(pid):
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                kids = []
            found += kids
            todo += kids
    return found


def running(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def scenario(memstress, outdir, case, sig):
    name = f"{case}-{signal.Signals(sig).name}"
    out = outdir / f"{name}.json"
    jsonl, junit, log = outdir / f"{name}.jsonl", outdir / f"{name}.xml", outdir / f"{name}.log"
    before = gpu_used_mib()
    with open(log, "wb") as err:
        p = subprocess.Popen([memstress, "run", *FIRST, *CASES[case], "-d", "cuda", "--out", str(out),
                              "--junit", str(junit)], stdout=subprocess.DEVNULL, stderr=err)
        started = time.monotonic()
        # The long case has started when the stream holds the first row; give it a few seconds more.
        while time.monotonic() - started < 120 and p.poll() is None:
            if jsonl.exists() and b'"type":"row"' in jsonl.read_bytes():
                break
            time.sleep(0.1)
        time.sleep(5)
        during = gpu_used_mib()
        workers = descendants(p.pid)
        finished_early = p.poll() is not None
        sent = time.monotonic()
        if not finished_early:
            p.send_signal(sig)
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        ended_after = time.monotonic() - sent
    time.sleep(2)  # the driver takes the memory back as the process goes
    after = gpu_used_mib()
    r = {"scenario": name, "case": case, "signal": signal.Signals(sig).name, "exit": p.returncode,
         "seconds_to_end": round(ended_after, 2), "finished_before_the_signal": finished_early,
         "gpu_used_mib": {"before": before, "during": during, "after": after},
         "workers": len(workers), "workers_left_running": [w for w in workers if running(w)]}
    lines, whole = [], True
    for line in jsonl.read_text().splitlines() if jsonl.exists() else []:
        try:
            lines.append(json.loads(line))
        except ValueError:
            whole = False
    r["jsonl"] = {"lines": len(lines), "all_whole": whole, "rows": sum(x.get("type") == "row" for x in lines),
                  "footer": lines[-1].get("status") if lines and lines[-1].get("type") == "footer" else None}
    if out.exists():
        doc = json.loads(out.read_text())
        r["document"] = {"status": doc["status"], "abort_reason": doc["abort_reason"], "rows": len(doc["rows"])}
    else:
        r["document"] = None
    r["junit_aborted"] = junit.exists() and "run aborted" in junit.read_text()
    for tool, cmd in {"compare": [memstress, "compare", str(jsonl), str(jsonl)],
                      "accept_from": [memstress, "accept", "--profile", str(ROOT / "tests/data/accept/sim-ranks.yaml"),
                                      "--from", str(jsonl), "--any-gpu"],
                      "report": [memstress, "report", str(jsonl), "-o", str(outdir / f"{name}.html")]}.items():
        q = subprocess.run(cmd, capture_output=True, text=True, check=False)
        r[f"{tool}_exit"] = q.returncode
        r[f"{tool}_says"] = (q.stdout + q.stderr).strip().splitlines()[-1:]
    killed = sig == signal.SIGKILL
    checks = {
        "ended by the signal": p.returncode == -sig,
        "ended within 30 s": ended_after < 30,
        "the long case was running": not finished_early,
        "every .jsonl line whole": whole,
        "the finished row kept": r["jsonl"]["rows"] >= 1,
        "footer aborted": killed or r["jsonl"]["footer"] == "aborted",
        "document": (r["document"] is None) if killed else (r["document"] or {}).get("status") == "aborted",
        "junit aborted": killed or r["junit_aborted"],
        "no worker left": not r["workers_left_running"],
        "GPU memory returned": after >= 0 and after <= before + 64,
        "compare reads the .jsonl": r["compare_exit"] in (0, 1),
        "report renders the .jsonl": r["report_exit"] == 0,
    }
    r["checks"] = checks
    r["ok"] = all(checks.values())
    return r


def main():
    memstress, outdir = sys.argv[1], Path(sys.argv[2])
    outdir.mkdir(parents=True, exist_ok=True)
    results = []
    for case in CASES:
        for sig in SIGNALS:
            r = scenario(memstress, outdir, case, sig)
            print(f"{r['scenario']}: {'ok' if r['ok'] else 'FAILED'} "
                  f"{[k for k, v in r['checks'].items() if not v]}", flush=True)
            results.append(r)
    record = {"memstress": memstress, "git_sha": os.environ.get("MEMSTRESS_GIT_SHA", ""),
              "gpu": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                    capture_output=True, text=True, check=False).stdout.strip(),
              "scenarios": results, "ok": all(r["ok"] for r in results)}
    (outdir / "record.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0 if record["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
