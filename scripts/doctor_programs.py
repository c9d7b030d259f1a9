#!/usr/bin/env python3
"""PyTorch programs that `scripts/gpu-doctor` holds `memstress doctor` and `predict-batch` to account with.

    python3 scripts/doctor_programs.py PROGRAM --batch N [--steps S] [--cap BYTES] [--record SNAPSHOT]
                                       [--stacks python|none] [--out RESULT.json]

One program per run, in a process of its own (a fresh CUDA context and an empty allocator):
PYTORCH_CUDA_ALLOC_CONF is whatever the caller put in the environment. With --cap, PyTorch's allocator may
hold at most that many bytes (torch.cuda.set_per_process_memory_fraction(cap / total), set before the first
allocation). With --record, the memstress recorder (python/memstress_torch.py) records the run from its
first allocation, with Python stacks unless --stacks none, and writes the snapshot (at an OOM too). The
result (--out, else stdout) is PyTorch's own account: torch.cuda.max_memory_reserved() and
max_memory_allocated() over the whole run, and whether it ran out of memory. Exit 0 whether or not it ran
out (that is a finding); 2 bad usage (an --out that exists and is not a regular file: scripts/ms_output.py);
3 no CUDA.

Programs (each deterministic: fixed seeds, fixed shapes for a batch size):
  transformer_amp   encoder training (d_model 512, 6 layers, sequence 256), bf16 autocast, AdamW
  cnn_train         a ResNet-18 (torchvision) training step on 3x160x160 images, SGD with momentum
  infer_varying     inference of a GPT-like decoder with batches of varying size (up to N), no_grad
  gpt_checkpoint    GPT-like decoder training with activation checkpointing on every block, AdamW
  leak_train        an MLP's training loop that keeps each step's loss tensor (losses.append(loss))
  fixed_train       the same loop, keeping loss.item()
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import ms_output  # noqa: E402

PROGRAMS = ("transformer_amp", "cnn_train", "infer_varying", "gpt_checkpoint", "leak_train", "fixed_train")


def transformer_amp(torch: Any, batch: int, steps: int) -> None:
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048, dropout=0.1, batch_first=True, norm_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 6, enable_nested_tensor=False), nn.Linear(512, 512)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(steps):
        x = torch.randn(batch, 256, 512, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def cnn_train(torch: Any, batch: int, steps: int) -> None:
    import torchvision

    model = torchvision.models.resnet18(num_classes=100).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(steps):
        x = torch.randn(batch, 3, 160, 160, device="cuda")
        y = torch.randint(0, 100, (batch,), device="cuda")
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


class Block:
    """A pre-norm GPT block (attention through scaled_dot_product_attention, causal), as a factory."""

    @staticmethod
    def make(torch: Any, d: int, heads: int) -> Any:
        nn = torch.nn
        F = torch.nn.functional

        class GPTBlock(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
                self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
                self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

            def forward(self, x: Any) -> Any:
                b, t, _ = x.shape
                q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
                x = x + self.proj(a)
                return x + self.mlp(self.ln2(x))

        return GPTBlock()


def gpt(torch: Any, d: int = 512, heads: int = 8, layers: int = 8, vocab: int = 8192) -> Any:
    nn = torch.nn

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([Block.make(torch, d, heads) for _ in range(layers)])
            self.head = nn.Linear(d, vocab)
            self.checkpoint = False

        def forward(self, tokens: Any) -> Any:
            x = self.embed(tokens)
            for block in self.blocks:
                if self.checkpoint:
                    x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
                else:
                    x = block(x)
            return self.head(x)

    return GPT().cuda()


def gpt_checkpoint(torch: Any, batch: int, steps: int) -> None:
    model = gpt(torch)
    model.checkpoint = True
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(steps):
        tokens = torch.randint(0, 8192, (batch, 512), device="cuda")
        logits = model(tokens)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), tokens.view(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def infer_varying(torch: Any, batch: int, steps: int) -> None:
    model = gpt(torch, layers=6).eval()
    fractions = [1.0, 0.25, 0.75, 0.5, 1.0, 0.125, 0.625, 0.875, 0.375, 1.0]  # the same pattern at any batch
    with torch.no_grad():
        for i in range(steps * 3):
            b = max(1, (batch * int(fractions[i % len(fractions)] * 8)) // 8)
            tokens = torch.randint(0, 8192, (b, 384), device="cuda")
            model(tokens).argmax(-1)


def _mlp_loop(torch: Any, batch: int, steps: int, keep_tensor: bool) -> None:
    nn = torch.nn
    model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for _ in range(steps):
        x = torch.randn(batch, 1024, device="cuda")
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss if keep_tensor else loss.item())  # the leak: a tensor kept every step


def leak_train(torch: Any, batch: int, steps: int) -> None:
    _mlp_loop(torch, batch, steps, keep_tensor=True)


def fixed_train(torch: Any, batch: int, steps: int) -> None:
    _mlp_loop(torch, batch, steps, keep_tensor=False)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="doctor_programs.py")
    parser.add_argument("program", choices=PROGRAMS)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--cap", type=int, help="bytes PyTorch's allocator may hold")
    parser.add_argument("--record", help="write a snapshot here (the memstress recorder)")
    parser.add_argument("--stacks", default="python", choices=("python", "none"))
    parser.add_argument("--out", help="write the result here (JSON)")
    args = parser.parse_args(argv)
    try:
        if args.out:
            ms_output.check_target(args.out, "--out")  # before the program runs, not after
    except ms_output.OutputError as e:
        print(f"doctor_programs.py: {e}", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("doctor_programs.py: no CUDA device", file=sys.stderr)
        return 3
    torch.manual_seed(1234)
    torch.cuda.init()
    total = torch.cuda.mem_get_info()[1]
    if args.cap:
        torch.cuda.set_per_process_memory_fraction(args.cap / total)
    recorder = None
    if args.record:
        sys.path.insert(0, str(ROOT / "python"))
        import memstress_torch

        recorder = memstress_torch.record(args.record, batch=args.batch, stacks=args.stacks, capacity=args.cap)
    torch.cuda.reset_peak_memory_stats()
    oom = None
    try:
        globals()[args.program](torch, args.batch, args.steps)
        torch.cuda.synchronize()
    except torch.cuda.OutOfMemoryError as e:
        oom = str(e).splitlines()[0]
    result = {
        "program": args.program, "batch": args.batch, "steps": args.steps, "cap": args.cap,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "peak_reserved": torch.cuda.max_memory_reserved(), "peak_allocated": torch.cuda.max_memory_allocated(),
        "oom": oom, "num_ooms": torch.cuda.memory_stats().get("num_ooms", 0),
        "torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "total": total,
    }
    if recorder is not None:
        recorder.dump()
        recorder.stop()
    text = json.dumps(result)
    if args.out:
        try:
            ms_output.write_text(args.out, "--out", text + "\n")
        except ms_output.OutputError as e:
            print(f"doctor_programs.py: {e}", file=sys.stderr)
            return 2
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
