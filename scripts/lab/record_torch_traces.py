#!/usr/bin/env python3
"""Record real PyTorch allocator traces on a GPU and convert them into memstress traces.

    python3 scripts/lab/record_torch_traces.py OUTDIR [--only NAME[,NAME...]] [--keep-pickles]

Needs PyTorch with CUDA and one GPU (numpy and torchvision are optional). For each workload below it
writes

    OUTDIR/<name>.trace.csv.gz   the memstress trace (python/memstress/convert.py's conversion)
    OUTDIR/<name>.pytorch.json   PyTorch's own figures for the same run: torch.cuda.memory_stats() at
                                 its end (peaks of allocated, reserved and requested bytes, segments,
                                 retries, OOMs), versions, GPU, driver, PYTORCH_CUDA_ALLOC_CONF, the
                                 workload's parameters, the command
    OUTDIR/<name>.snapshot.pickle only with --keep-pickles (they are large: do not commit them)

Workloads (each a few seconds of GPU work, sized so that its trace is about 1 MB compressed):

    transformer_train  nn.TransformerEncoder training, sequence length drawn per step (128..2048)
    cnn_train          ResNet-18 training (torchvision's if installed, else one built from torch.nn)
    kv_cache_infer     decoding with a KV cache grown by torch.cat per token, prompts of four lengths
    multistream_loader pinned host batches copied on a side stream (non_blocking, record_stream),
                       computed on the main stream, the next batch in flight meanwhile

Design. Each workload runs in a child process of its own (this script with --child), so that every
trace starts from a fresh CUDA context and an empty allocator, and a crash in one (even a CUDA error
that poisons the context) loses only that one. In the child, the allocator's cache is emptied and its
peak and accumulated statistics reset, then recording starts
(``torch.cuda.memory._record_memory_history(enabled='all', context=None, stacks='python',
max_entries=...)``: every alloc/free event, no stack frames, so snapshots stay small), and only then is
the model built. After the last step the child synchronizes, reads ``torch.cuda.memory_stats()``,
dumps the snapshot (``torch.cuda.memory._dump_snapshot``), stops recording and converts. The workload's
tensors die when it returns, so each trace holds their frees too. Exit codes:
0 every workload recorded; 1 some failed (the others are still written); 2 bad usage; 3 no PyTorch or
no CUDA device.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import random
import shlex
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROG = "record_torch_traces"
PYTHON = Path(__file__).resolve().parents[2] / "python"  # the package memstress
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_ENV = 0, 1, 2, 3
MAX_ENTRIES = 4_000_000  # far above what any workload records: the ring buffer never wraps
SEED = 1234


def log(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


# --- the workloads (run in the child; torch is imported there) ------------------------------------------


def transformer_train(torch: Any, params: dict[str, Any]) -> None:
    """Transformer encoder training (bf16 autocast, AdamW); the sequence length is drawn per step."""
    nn = torch.nn
    d_model, heads, layers, batch = params["d_model"], params["heads"], params["layers"], params["batch"]
    layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=4 * d_model, dropout=0.1,
                                       batch_first=True, norm_first=True)
    model = nn.Sequential(
        nn.TransformerEncoder(layer, layers, enable_nested_tensor=False),
        nn.Linear(d_model, d_model),
    ).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    rng = random.Random(SEED)
    for _ in range(params["steps"]):
        length = rng.randint(params["min_len"], params["max_len"])
        x = torch.randn(batch, length, d_model, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def _nn_resnet18(torch: Any, classes: int) -> Any:
    """A ResNet-18 from torch.nn alone (basic blocks [2, 2, 2, 2], widths 64..512)."""
    nn = torch.nn

    class Basic(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x: Any) -> Any:
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + (x if self.down is None else self.down(x)))

    stages, cin = [], 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        stages += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
        cin = cout
    return nn.Sequential(
        nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1), *stages, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes))


def cnn_train(torch: Any, params: dict[str, Any]) -> None:
    """ResNet-18 training on random 224x224 images (bf16 autocast, SGD with momentum)."""
    classes = 1000
    try:
        import torchvision  # noqa: F401 - optional

        model = torchvision.models.resnet18(weights=None, num_classes=classes)  # no download
        params["model"] = f"torchvision.models.resnet18 (torchvision {torchvision.__version__})"
    except Exception as e:  # noqa: BLE001 - not installed, or broken: the torch.nn one is as good
        model = _nn_resnet18(torch, classes)
        params["model"] = f"ResNet-18 built from torch.nn (torchvision unavailable: {type(e).__name__})"
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    batch, size = params["batch"], params["image"]
    for _ in range(params["steps"]):
        x = torch.randn(batch, 3, size, size, device="cuda")
        y = torch.randint(0, classes, (batch,), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def kv_cache_infer(torch: Any, params: dict[str, Any]) -> None:
    """Greedy decoding under no_grad, the KV cache grown by torch.cat per token; prompts of 4 lengths."""
    nn, functional = torch.nn, torch.nn.functional
    d, heads, layers, vocab = params["d_model"], params["heads"], params["layers"], params["vocab"]
    hd = d // heads

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x: Any, cache: list[Any]) -> Any:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, heads, hd).permute(2, 0, 3, 1, 4)
            if cache[0] is not None:  # the cache grows by one token: a new, larger tensor each time
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            cache[0], cache[1] = k, v
            a = functional.scaled_dot_product_attention(q, k, v, is_causal=cache[0].shape[2] == t)
            x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.ln2(x))

    embed, head = nn.Embedding(vocab, d), nn.Linear(d, vocab, bias=False)
    blocks = nn.ModuleList(Layer() for _ in range(layers))
    model = nn.ModuleDict({"embed": embed, "blocks": blocks, "head": head}).cuda().to(torch.bfloat16)
    generator = torch.Generator(device="cuda").manual_seed(SEED)
    with torch.no_grad():
        for prompt, batch in params["prompts"]:
            caches: list[list[Any]] = [[None, None] for _ in range(layers)]
            tokens = torch.randint(0, vocab, (batch, prompt), device="cuda", generator=generator)
            for _ in range(params["new_tokens"]):
                x = model["embed"](tokens)
                for layer, cache in zip(model["blocks"], caches):
                    x = layer(x, cache)
                tokens = model["head"](x[:, -1:]).argmax(-1)
            del caches, tokens, x


def multistream_loader(torch: Any, params: dict[str, Any]) -> None:
    """Pinned batches copied on a side stream (record_stream), trained on the main stream."""
    nn, functional = torch.nn, torch.nn.functional
    batch, size, classes = params["batch"], params["image"], 100
    # Pinned host batches (the pinned host allocator is not traced; the device copies are).
    host = [torch.randint(0, 256, (batch, 3, size, size), dtype=torch.uint8).pin_memory()
            for _ in range(params["host_buffers"])]
    labels = [torch.randint(0, classes, (batch,)).pin_memory() for _ in range(params["host_buffers"])]
    model = nn.Sequential(
        nn.Conv2d(3, 64, 3, 2, 1), nn.ReLU(), nn.Conv2d(64, 128, 3, 2, 1), nn.ReLU(),
        nn.Conv2d(128, 256, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(256, classes)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    compute, copy = torch.cuda.current_stream(), torch.cuda.Stream()
    params["streams"] = {"compute": compute.cuda_stream, "copy": copy.cuda_stream}

    def load(i: int) -> tuple[Any, Any]:
        with torch.cuda.stream(copy):
            raw = host[i % len(host)].to("cuda", non_blocking=True)  # allocated on the copy stream
            x = raw.float().div_(255.0)  # also on the copy stream; raw is freed there at once
            y = labels[i % len(labels)].to("cuda", non_blocking=True)
        return x, y

    ahead = load(0)
    for i in range(params["batches"]):
        compute.wait_stream(copy)
        x, y = ahead
        # Used on the compute stream: their blocks are not reusable until that work is done, so
        # their frees are free_requested now and free_completed later.
        x.record_stream(compute)
        y.record_stream(compute)
        if i + 1 < params["batches"]:
            ahead = load(i + 1)  # the next batch copies while this one computes
        loss = functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        del x, y, loss


WORKLOADS: dict[str, tuple[Callable[[Any, dict[str, Any]], None], dict[str, Any]]] = {
    "transformer_train": (transformer_train, {"d_model": 768, "heads": 12, "layers": 4, "batch": 8,
                                              "min_len": 128, "max_len": 2048, "steps": 30}),
    "cnn_train": (cnn_train, {"batch": 64, "image": 224, "steps": 20}),
    "kv_cache_infer": (kv_cache_infer, {"d_model": 1024, "heads": 16, "layers": 4, "vocab": 32000,
                                        "prompts": [[37, 8], [180, 4], [512, 4], [1021, 2]],
                                        "new_tokens": 48}),
    "multistream_loader": (multistream_loader, {"batch": 64, "image": 224, "host_buffers": 3,
                                                "batches": 40}),
}


# --- the child: one recording ---------------------------------------------------------------------------


def _nvidia_smi() -> dict[str, str] | None:
    query = "name,driver_version,memory.total,pci.bus_id,uuid"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [dict(zip(query.split(","), (f.strip() for f in line.split(",")))) for line in out.splitlines()]
    return {"gpus": rows} if rows else None  # type: ignore[dict-item]


def _record_history(torch: Any, enabled: str | None) -> None:
    """_record_memory_history without stack frames; clear_history where this PyTorch has it."""
    record = torch.cuda.memory._record_memory_history
    if enabled is None:
        record(enabled=None)
        return
    kwargs: dict[str, Any] = {"enabled": enabled, "context": None, "stacks": "python",
                              "max_entries": MAX_ENTRIES}
    if "clear_history" in inspect.signature(record).parameters:
        kwargs["clear_history"] = True
    record(**kwargs)


def record_one(name: str, outdir: Path, keep_pickle: bool, command: str) -> None:
    import torch
    from memstress import convert as converter

    run, defaults = WORKLOADS[name]
    params = json.loads(json.dumps(defaults))  # a copy the workload may add facts to
    torch.manual_seed(SEED)
    torch.cuda.init()
    device = torch.cuda.current_device()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.reset_accumulated_memory_stats()
    _record_history(torch, "all")  # before the model is built
    started = time.perf_counter()
    run(torch, params)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    stats = torch.cuda.memory_stats(device)

    pickle_path = outdir / f"{name}.snapshot.pickle"
    torch.cuda.memory._dump_snapshot(str(pickle_path))
    _record_history(torch, None)
    trace_path = outdir / f"{name}.trace.csv.gz"
    summary = converter.convert(pickle_path, trace_path)
    for line in converter.report(summary, pickle_path, trace_path):
        log(f"{name}: {line.strip()}")
    snapshot_bytes = pickle_path.stat().st_size
    if not keep_pickle:
        pickle_path.unlink()

    props = torch.cuda.get_device_properties(device)
    figures = {
        "workload": name,
        "description": (run.__doc__ or "").strip() or None,
        "params": params,
        "seconds": round(seconds, 3),
        "command": command,
        "recording": {"api": "torch.cuda.memory._record_memory_history", "enabled": "all", "context": None,
                      "stacks": "python", "max_entries": MAX_ENTRIES,
                      "started": "after empty_cache and reset_peak_memory_stats, before the model was built"},
        "pytorch_cuda_alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or None,
        "pytorch_cuda_alloc_conf_note": "null: unset, PyTorch's defaults",
        "memory_stats": stats,
        "memory_stats_note": "read after the workload returned and torch.cuda.synchronize(): its tensors "
                             "are freed, so 'current' is what the allocator still caches; peaks: the run",
        "peaks": {key: stats.get(key) for key in (
            "allocated_bytes.all.peak", "reserved_bytes.all.peak", "requested_bytes.all.peak",
            "active_bytes.all.peak", "segment.all.peak", "num_alloc_retries", "num_ooms")},
        "trace": {"file": trace_path.name, "bytes": trace_path.stat().st_size,
                  "lines_by_action": dict(summary.written),
                  "synthesized": dict(summary.synthesized), "times_clamped": summary.clamped,
                  "snapshot_pickle_bytes": snapshot_bytes},
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "gpu": {"index": device, "name": props.name, "total_memory": props.total_memory,
                "capability": f"{props.major}.{props.minor}",
                "multiprocessors": props.multi_processor_count},
        "nvidia_smi": _nvidia_smi(),
        "python": platform.python_version(),
        "host": platform.node(),
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (outdir / f"{name}.pytorch.json").write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    peak = stats.get("reserved_bytes.all.peak", 0) / 2**20
    log(f"{name}: done in {seconds:.1f} s; reserved peak {peak:.0f} MiB; "
        f"{trace_path.name} {trace_path.stat().st_size / 1e6:.2f} MB")
    if trace_path.stat().st_size > 2_000_000:
        log(f"{name}: warning: the trace is over 2 MB: lower its steps before committing it")


def child(name: str, outdir: Path, keep_pickle: bool, command: str) -> int:
    sys.path.insert(0, str(PYTHON))
    try:
        record_one(name, outdir, keep_pickle, command)
    except Exception:  # noqa: BLE001 - report, and let the parent go on with the other workloads
        log(f"{name}: FAILED:\n{traceback.format_exc()}")
        left = outdir / f"{name}.snapshot.pickle"
        if left.exists() and not keep_pickle:
            log(f"{name}: {left} is left for inspection: do not commit it")
        return EXIT_FAILED
    return EXIT_OK


# --- the parent -------------------------------------------------------------------------------------------


def check_environment() -> str | None:
    """None when PyTorch sees a CUDA device, else why not."""
    probe = ("import torch, sys; ok = torch.cuda.is_available() and torch.cuda.device_count() > 0; "
             "print(torch.__version__, torch.version.cuda, "
             "torch.cuda.get_device_name(0) if ok else '-', sep='|'); sys.exit(0 if ok else 4)")
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                              check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return f"could not run {sys.executable}: {e}"
    if done.returncode == 4:
        version = done.stdout.strip().split("|")[0]
        return f"PyTorch {version} sees no CUDA device (torch.cuda.is_available() is False): " \
               "run this on a GPU machine"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"PyTorch is not importable by {sys.executable}: {last}"
    version, cuda, gpu = done.stdout.strip().split("|")
    log(f"PyTorch {version} (CUDA {cuda}) on {gpu}")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="record_torch_traces.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path, help="where the traces and figures go (created if missing)")
    parser.add_argument("--only", help=f"comma-separated workloads (default: all: {', '.join(WORKLOADS)})")
    parser.add_argument("--keep-pickles", action="store_true",
                        help="keep OUTDIR/<name>.snapshot.pickle (large; for pytorch.org/memory_viz)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--command", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        return child(args.child, args.outdir, args.keep_pickles, args.command or "")

    names = list(WORKLOADS) if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown or not names:
        parser.error(f"--only: unknown workload {', '.join(map(repr, unknown)) or '(none given)'}; "
                     f"known: {', '.join(WORKLOADS)}")
    try:
        args.outdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"{PROG}: error: {args.outdir}: cannot create: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE
    problem = check_environment()
    if problem:
        print(f"{PROG}: error: {problem}", file=sys.stderr)
        return EXIT_ENV

    command = shlex.join([sys.executable, *sys.argv])
    failed = []
    for name in names:
        log(f"{name}: recording ({json.dumps(WORKLOADS[name][1])})")
        child_argv = [sys.executable, str(Path(__file__).resolve()), str(args.outdir), "--child", name,
                      "--command", command]
        if args.keep_pickles:
            child_argv.append("--keep-pickles")
        try:
            rc = subprocess.run(child_argv, timeout=1800, check=False).returncode
        except (OSError, subprocess.SubprocessError) as e:
            log(f"{name}: FAILED: {e}")
            rc = EXIT_FAILED
        if rc != 0:
            failed.append(name)
            log(f"{name}: FAILED (exit code {rc}); going on with the others")
    done = [n for n in names if n not in failed]
    log(f"recorded {len(done)} of {len(names)}: {', '.join(done) or 'none'}"
        + (f"; failed: {', '.join(failed)}" if failed else ""))
    return EXIT_FAILED if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
