#!/usr/bin/env python3
"""scripts/lab/growth_loops.py OUTDIR --memstress BIN [--jobs N] [--stacks python|none] [--doctor-only]: `memstress doctor`'s growth verdict held to
training and inference loops whose leaks are known, recorded with PyTorch on a GPU.

Each loop runs in a process of its own, with no cap, recorded from its first allocation by the memstress recorder
(python/memstress_torch.py), for many steps: the programs of scripts/lab/doctor_programs.py that have steps of
their own (a ResNet, an encoder with bf16 autocast, a checkpointed GPT, a ViT, inference with a growing KV cache,
the MLP loop that keeps its loss tensor and its fix), and three loops of a GPT-like decoder (d 512, 8 layers,
sequence 256) written here: one that keeps nothing, one that keeps each step's predictions on the GPU
(preds.append(logits.argmax(-1)): 16 KiB a step at batch 8) and one that keeps each step's logits (64 MiB).
Then `memstress doctor SNAPSHOT --format json` on each snapshot. --stacks none records no stack frames (the
snapshots are a tenth of the size; the doctor then names no line); --doctor-only asks the doctor again about the
snapshots OUTDIR holds, on any machine. Each snapshot is kept gzip-compressed, the paths of the machine that
recorded it taken out of the command line it stores.

Writes OUTDIR/snapshots/NAME.pickle.gz, OUTDIR/doctor/NAME.json, OUTDIR/growth.json (schema
memstress.growth-loops/1: per loop the bytes it truly keeps a step and the doctor's growth section) and prints the
table. Exit 0 when every loop ran and the doctor answered, 1 otherwise, 3 without PyTorch's CUDA.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import gzip
import json
import pickle
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "lab"))
sys.path.insert(0, str(ROOT / "python"))
from memstress.recorder import write_pickle  # noqa: E402 - torch-free

SCHEMA = "memstress.growth-loops/1"
KiB, MiB = 1 << 10, 1 << 20
GPT_BATCH, GPT_SEQ, GPT_VOCAB = 8, 256, 8192

# name: (program, batch, steps, the bytes the loop truly keeps each step)
LOOPS: Mapping[str, tuple[str, int, int, int]] = MappingProxyType({
    "cnn_train": ("cnn_train", 32, 30, 0),
    "transformer_amp": ("transformer_amp", 16, 30, 0),
    "gpt_checkpoint": ("gpt_checkpoint", 8, 30, 0),
    "vit_train": ("vit_train", 16, 30, 0),
    "kv_generate": ("kv_generate", 16, 8, 0),
    "fixed_train": ("fixed_train", 4096, 60, 0),
    "leak_train": ("leak_train", 4096, 60, 4),  # a float32 scalar, in a block of 512 bytes
    "gpt_plain": ("gpt_plain", GPT_BATCH, 30, 0),
    "gpt_keeps_preds": ("gpt_keeps_preds", GPT_BATCH, 30, GPT_BATCH * GPT_SEQ * 8),
    "gpt_keeps_logits": ("gpt_keeps_logits", GPT_BATCH, 30, GPT_BATCH * GPT_SEQ * GPT_VOCAB * 4),
})
OWN = ("gpt_plain", "gpt_keeps_preds", "gpt_keeps_logits")


def run_own(name: str, batch: int, steps: int, snapshot: str, stacks: str) -> int:
    """One of this script's loops, recorded: a GPT-like decoder's training steps, keeping what `name` says."""
    import torch

    if not torch.cuda.is_available():
        print("growth_loops.py: no CUDA device", file=sys.stderr)
        return 3
    import doctor_programs as dp
    import memstress_torch

    torch.manual_seed(1234)
    recorder = memstress_torch.record(snapshot, batch=batch, stacks=stacks)
    model = dp.gpt(torch, "cuda", d=512, heads=8, layers=8, vocab=GPT_VOCAB)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    kept: list[Any] = []
    for _ in range(steps):
        tokens = torch.randint(0, GPT_VOCAB, (batch, GPT_SEQ), device="cuda")
        logits = model(tokens)
        dp.train(optimizer, dp.lm_loss(torch, logits, tokens))
        if name == "gpt_keeps_preds":
            kept.append(logits.argmax(-1))  # the leak: predictions kept on the GPU for a metric
        elif name == "gpt_keeps_logits":
            kept.append(logits.detach())  # the leak: every step's logits
    torch.cuda.synchronize()
    recorder.dump()
    recorder.stop()
    return 0


def record(name: str, outdir: Path, stacks: str) -> dict[str, Any]:
    program, batch, steps, _ = LOOPS[name]
    snapshot = outdir / "snapshots" / f"{name}.pickle.gz"
    if name in OWN:
        cmd = [sys.executable, __file__, "--one", name, str(snapshot), stacks]
    else:
        cmd = [sys.executable, str(ROOT / "scripts" / "lab" / "doctor_programs.py"), program, "--batch", str(batch),
               "--steps", str(steps), "--record", str(snapshot), "--stacks", stacks, "--out", str(outdir / "runs" / f"{name}.json")]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=1200)
    return {"rc": done.returncode, "stderr": done.stderr[-2000:], "snapshot": snapshot}


def portable(path: str) -> str:
    """An argument naming a file, as the repository names it: the checkout's files relative to it, the output
    folder's from its snapshots/ or runs/ on."""
    if not path.startswith("/"):
        return path
    if path.startswith(f"{ROOT}/"):
        return path[len(str(ROOT)) + 1:]
    for room in ("/snapshots/", "/runs/"):
        if room in path:
            return path[path.index(room) + 1:]
    return Path(path).name


def keep(snapshot: Path) -> None:
    """The recorder's snapshot gzip-compressed in place, the recording machine's paths taken out of the command line
    it stored; left as it is where it is both already."""
    with open(snapshot, "rb") as f:
        packed = f.read(2) == b"\x1f\x8b"
    with (gzip.open(snapshot, "rb") if packed else open(snapshot, "rb")) as f:
        data = pickle.load(f)  # the recorder's own output: plain data
    meta = data.get("memstress")
    argv = meta.get("argv") if isinstance(meta, dict) else None
    if isinstance(argv, list):
        meta["argv"] = [portable(str(a)) for a in argv]
    if packed and meta is not None and meta.get("argv") == argv:
        return
    write_pickle(str(snapshot), data)  # the recorder's own writer: gzip for a .gz name, atomically


def doctor(memstress: Path, snapshot: Path, out: Path) -> dict[str, Any] | None:
    done = subprocess.run([str(memstress), "doctor", str(snapshot), "--format", "json", "-o", str(out)],
                          capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0 or not out.exists():
        print(f"doctor on {snapshot.name}: exit {done.returncode}: {done.stderr.strip()}", file=sys.stderr)
        return None
    return json.loads(out.read_text())


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        name, snapshot, stacks = argv[1:4]
        _, batch, steps, _ = LOOPS[name]
        return run_own(name, batch, steps, snapshot, stacks)
    parser = argparse.ArgumentParser(prog="growth_loops.py")
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--memstress", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--stacks", default="python", choices=("python", "none"))
    parser.add_argument("--doctor-only", action="store_true", help="only ask the doctor about OUTDIR's snapshots")
    args = parser.parse_args(argv)
    for sub in ("snapshots", "doctor", "runs"):
        (args.outdir / sub).mkdir(parents=True, exist_ok=True)
    if args.doctor_only:
        runs = {n: {"rc": 0, "stderr": "", "snapshot": args.outdir / "snapshots" / f"{n}.pickle.gz"} for n in LOOPS}
    else:
        with cf.ThreadPoolExecutor(args.jobs) as pool:
            runs = dict(zip(LOOPS, pool.map(lambda n: record(n, args.outdir, args.stacks), LOOPS)))
    failed = 0
    loops = []
    for name, (program, batch, steps, keeps) in LOOPS.items():
        run = runs[name]
        entry: dict[str, Any] = {"loop": name, "program": program, "batch": batch, "steps": steps,
                                 "keeps_per_step": keeps, "rc": run["rc"]}
        if run["rc"] == 3:
            print(run["stderr"], file=sys.stderr)
            return 3
        if run["rc"] == 0:
            keep(run["snapshot"])
        report = doctor(args.memstress, run["snapshot"], args.outdir / "doctor" / f"{name}.json") \
            if run["rc"] == 0 else None
        if report is None:
            failed += 1
            entry["error"] = run["stderr"] or "the doctor did not answer"
        else:
            entry["growth"] = report.get("growth")
        loops.append(entry)
    if args.doctor_only:  # the recording's environment, as it was written
        recorded = json.loads((args.outdir / "growth.json").read_text())
        env = {"gpu": recorded["gpu"], "torch": recorded["torch"], "stacks": recorded["stacks"]}
    else:
        import torch

        env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "stacks": args.stacks}
    doc = {"schema": SCHEMA, **env, "loops": loops}
    (args.outdir / "growth.json").write_text(json.dumps(doc, indent=1) + "\n")
    print("| loop | steps | keeps a step | doctor: steps | requests a step | kept a step | grows |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for e in loops:
        g = e.get("growth") or {}
        print(f"| {e['loop']} | {e['steps']} | {e['keeps_per_step']} | {g.get('steps', e.get('error', '?'))} | "
              f"{g.get('step_requests', '')} | {g.get('kept_per_step', '')} | {g.get('grows', '')} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
