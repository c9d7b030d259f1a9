#!/usr/bin/env python3
"""PyTorch programs that `scripts/lab/gpu-doctor` and `scripts/lab/doctor_corpus.py` hold `memstress doctor` and
`predict-batch` to account with.

    python3 scripts/lab/doctor_programs.py PROGRAM --batch N [--steps S] [--cap BYTES] [--record SNAPSHOT]
                                       [--stacks python|none] [--out RESULT.json] [--device cuda|cpu]
    python3 scripts/lab/doctor_programs.py PROGRAM --find-max memstress|lightning --cap BYTES [--memstress BIN]
                                       [--restore given|found|off] [--out RESULT.json]
    python3 scripts/lab/doctor_programs.py --list

One program per run, in a process of its own (a fresh CUDA context and an empty allocator):
PYTORCH_CUDA_ALLOC_CONF is whatever the caller put in the environment. With --cap, PyTorch's allocator may
hold at most that many bytes (torch.cuda.set_per_process_memory_fraction(cap / total), set before the first
allocation). With --record, the memstress recorder (python/memstress_torch.py, memstress.recorder) records the run from its
first allocation, with Python stacks unless --stacks none, and writes the snapshot (at an OOM too). The
result (--out, else stdout) is PyTorch's own account: torch.cuda.max_memory_reserved() and
max_memory_allocated() over the whole run, and whether it ran out of memory. --device cpu runs the program on
the CPU (no cap, no recording, no peaks: a smoke test of the program itself).

--find-max finds the program's largest batch under --cap in one process, with memstress_torch.find_max_batch
(`memstress`: two recorded steps, predict-batch through --memstress BIN, one confirmation) or with Lightning's
batch-size finder (`lightning`: Tuner.scale_batch_size, mode "binsearch", one step a trial, from 2), and writes
what it took: the batch found, every trial's batch, the OOMs met, the seconds, or the error if it failed.
--restore says what find_max_batch puts back before each trial: `given` (default) the program's model and
optimizer (restore=), `found` what it finds in the step itself (restore left out), `off` nothing (restore=(),
each trial from what the one before left).

Exit 0 whether or not it ran out (that is a finding); 2 bad usage (an --out that exists and is not a regular
file: python/memstress/_output.py); 3 no CUDA.

Programs (--list prints them; each deterministic: fixed seeds, fixed shapes for a batch size; a "normal"
program runs out of memory when its batch does not fit, a "fragmentation" one, under a cap between its two
peaks, runs out with PyTorch's defaults but not with expandable_segments:True): SPECS below.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))  # the package memstress, and memstress_torch beside it
from memstress import _output  # noqa: E402

MiB = 1 << 20


class Program:
    """A program built once: step(batch) runs one step at that batch size, making its own inputs. `modules`: the
    models and optimizers a batch-size search must leave as it found them; `probe`: the step a search should
    measure (a variable-length program's longest), the step itself unless said."""

    def __init__(self, step: Callable[[int], Any], modules: Sequence[Any] = (),
                 probe: Callable[[int], Any] | None = None) -> None:
        self.step = step
        self.modules = tuple(modules)
        self.probe = probe or step


class Spec(NamedTuple):
    make: Callable[[Any, str], Program]  # (torch, device) -> Program
    shape: str  # one line: what it is
    kind: str  # "normal" or "fragmentation"
    trainable: bool


SPECS: dict[str, Spec] = {}


def program(shape: str, *, kind: str = "normal", trainable: bool = True) -> Callable[[Callable], Callable]:
    def register(make: Callable[[Any, str], Program]) -> Callable[[Any, str], Program]:
        SPECS[make.__name__] = Spec(make, shape, kind, trainable)
        return make
    return register


def train(optimizer: Any, loss: Any) -> None:
    """One training step's end: backward, the optimizer's step, the gradients dropped."""
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


# ---------------------------------------------------------------------------------------------------------------
# The programs scripts/lab/gpu-doctor knew first.


@program("encoder training (d_model 512, 6 layers, sequence 256), bf16 autocast, AdamW")
def transformer_amp(torch: Any, dev: str) -> Program:
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048, dropout=0.1, batch_first=True, norm_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 6, enable_nested_tensor=False), nn.Linear(512, 512)).to(dev)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(batch: int) -> None:
        x = torch.randn(batch, 256, 512, device=dev)
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        train(optimizer, loss)

    return Program(step, (model, optimizer))


@program("a ResNet-18 (torchvision) training step on 3x160x160 images, SGD with momentum")
def cnn_train(torch: Any, dev: str) -> Program:
    import torchvision

    model = torchvision.models.resnet18(num_classes=100).to(dev)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(batch: int) -> None:
        x = torch.randn(batch, 3, 160, 160, device=dev)
        y = torch.randint(0, 100, (batch,), device=dev)
        train(optimizer, loss_fn(model(x), y))

    return Program(step, (model, optimizer))


class Block:
    """A pre-norm GPT block (attention through scaled_dot_product_attention, causal), as a factory; forward_cached
    attends over a key/value cache grown by torch.cat."""

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

            def forward_cached(self, x: Any, cache: tuple[Any, Any] | None) -> tuple[Any, tuple[Any, Any]]:
                b, t, _ = x.shape
                q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
                if cache is not None:
                    k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
                a = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None).transpose(1, 2).reshape(b, t, d)
                x = x + self.proj(a)
                return x + self.mlp(self.ln2(x)), (k, v)

        return GPTBlock()


def gpt(torch: Any, dev: str, d: int = 512, heads: int = 8, layers: int = 8, vocab: int = 8192) -> Any:
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

    return GPT().to(dev)


def lm_loss(torch: Any, logits: Any, tokens: Any) -> Any:
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), tokens.reshape(-1))


@program("GPT-like decoder training (d 512, 8 layers, sequence 512) with activation checkpointing, AdamW")
def gpt_checkpoint(torch: Any, dev: str) -> Program:
    model = gpt(torch, dev)
    model.checkpoint = True
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(batch: int) -> None:
        tokens = torch.randint(0, 8192, (batch, 512), device=dev)
        train(optimizer, lm_loss(torch, model(tokens), tokens))

    return Program(step, (model, optimizer))


@program("inference of a GPT-like decoder (6 layers, sequence 384) with batches of varying size (up to N), no_grad",
         trainable=False)
def infer_varying(torch: Any, dev: str) -> Program:
    model = gpt(torch, dev, layers=6).eval()
    fractions = [1.0, 0.25, 0.75, 0.5, 1.0, 0.125, 0.625, 0.875, 0.375, 1.0]  # the same pattern at any batch
    calls = [0]

    def step(batch: int) -> None:
        with torch.no_grad():
            for _ in range(3):
                b = max(1, (batch * int(fractions[calls[0] % len(fractions)] * 8)) // 8)
                calls[0] += 1
                tokens = torch.randint(0, 8192, (b, 384), device=dev)
                model(tokens).argmax(-1)

    return Program(step, (model,))


def _mlp(torch: Any, dev: str, keep_tensor: bool) -> Program:
    nn = torch.nn
    model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).to(dev)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    losses: list[Any] = []

    def step(batch: int) -> None:
        x = torch.randn(batch, 1024, device=dev)
        loss = model(x).pow(2).mean()
        train(optimizer, loss)
        losses.append(loss if keep_tensor else loss.item())  # the leak: a tensor kept every step

    return Program(step, (model, optimizer))


@program("an MLP's training loop (1024-4096-1024, SGD) that keeps each step's loss tensor (losses.append(loss))")
def leak_train(torch: Any, dev: str) -> Program:
    return _mlp(torch, dev, keep_tensor=True)


@program("the same MLP loop, keeping loss.item()")
def fixed_train(torch: Any, dev: str) -> Program:
    return _mlp(torch, dev, keep_tensor=False)


# ---------------------------------------------------------------------------------------------------------------
# More shapes (scripts/lab/doctor_corpus.py).


@program("GPT-like decoder training (d 384, 6 layers, sequence 256, vocab 8192), bf16 autocast, AdamW")
def gpt_amp(torch: Any, dev: str) -> Program:
    model = gpt(torch, dev, d=384, heads=6, layers=6)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    def step(batch: int) -> None:
        tokens = torch.randint(0, 8192, (batch, 256), device=dev)
        with torch.autocast(dev, dtype=torch.bfloat16):
            logits = model(tokens)
        train(optimizer, lm_loss(torch, logits, tokens))

    return Program(step, (model, optimizer))


@program("ViT training: 224x224 images, 16x16 patches (196 + a class token), d 384, 6 layers, 6 heads, AdamW")
def vit_train(torch: Any, dev: str) -> Program:
    nn = torch.nn
    d = 384

    class ViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patches = nn.Conv2d(3, d, kernel_size=16, stride=16)
            self.cls = nn.Parameter(torch.zeros(1, 1, d))
            self.pos = nn.Parameter(torch.randn(1, 197, d) * 0.02)
            layer = nn.TransformerEncoderLayer(d, 6, dim_feedforward=4 * d, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, 100)

        def forward(self, images: Any) -> Any:
            x = self.patches(images).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.size(0), -1, -1), x], dim=1) + self.pos
            return self.head(self.norm(self.encoder(x)[:, 0]))

    model = ViT().to(dev)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(batch: int) -> None:
        images = torch.randn(batch, 3, 224, 224, device=dev)
        labels = torch.randint(0, 100, (batch,), device=dev)
        train(optimizer, torch.nn.functional.cross_entropy(model(images), labels))

    return Program(step, (model, optimizer))


@program("UNet training (written here: 32-64-128-256 channels, batch norm) on 3x128x128 images, a mask, Adam")
def unet_train(torch: Any, dev: str) -> Program:
    nn = torch.nn

    def double_conv(cin: int, cout: int) -> Any:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.downs = nn.ModuleList([double_conv(3, 32), double_conv(32, 64), double_conv(64, 128)])
            self.bottom = double_conv(128, 256)
            self.ups = nn.ModuleList([nn.ConvTranspose2d(c * 2, c, 2, stride=2) for c in (128, 64, 32)])
            self.decs = nn.ModuleList([double_conv(c * 2, c) for c in (128, 64, 32)])
            self.out = nn.Conv2d(32, 1, 1)

        def forward(self, x: Any) -> Any:
            skips = []
            for down in self.downs:
                x = down(x)
                skips.append(x)
                x = torch.nn.functional.max_pool2d(x, 2)
            x = self.bottom(x)
            for up, dec, skip in zip(self.ups, self.decs, reversed(skips)):
                x = dec(torch.cat([up(x), skip], dim=1))
            return self.out(x)

    model = UNet().to(dev)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(batch: int) -> None:
        images = torch.randn(batch, 3, 128, 128, device=dev)
        masks = (torch.rand(batch, 1, 128, 128, device=dev) > 0.5).float()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(images), masks)
        train(optimizer, loss)

    return Program(step, (model, optimizer))


VARLEN_LENGTHS = (128, 512, 64, 384, 256, 192, 448, 320)  # the longest second: any run of two steps has it


@program("variable-length batches: encoder training (d 256, 4 layers, vocab 2048), N sequences a step, lengths "
         "cycling 128, 512, 64, 384, 256, 192, 448, 320, AdamW")
def varlen_train(torch: Any, dev: str) -> Program:
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.0, batch_first=True, norm_first=True)
    model = nn.Sequential(nn.Embedding(2048, 256), nn.TransformerEncoder(layer, 4, enable_nested_tensor=False),
                          nn.Linear(256, 2048)).to(dev)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    calls = [0]

    def at_length(batch: int, length: int) -> None:
        tokens = torch.randint(0, 2048, (batch, length), device=dev)
        train(optimizer, lm_loss(torch, model(tokens), tokens))

    def step(batch: int) -> None:
        length = VARLEN_LENGTHS[calls[0] % len(VARLEN_LENGTHS)]
        calls[0] += 1
        at_length(batch, length)

    return Program(step, (model, optimizer), probe=lambda batch: at_length(batch, max(VARLEN_LENGTHS)))


@program("LoRA fine-tune: a GPT-like decoder (d 512, 6 layers, sequence 256) with frozen weights, rank-8 adapters "
         "on every Linear of its blocks the only trainable parameters, AdamW")
def lora_finetune(torch: Any, dev: str) -> Program:
    nn = torch.nn

    class LoRALinear(nn.Module):
        def __init__(self, base: Any, rank: int = 8, alpha: float = 16.0) -> None:
            super().__init__()
            self.base = base
            self.a = nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))
            self.b = nn.Parameter(torch.zeros(base.out_features, rank))
            self.scale = alpha / rank

        def forward(self, x: Any) -> Any:
            return self.base(x) + (x @ self.a.t() @ self.b.t()) * self.scale

    model = gpt(torch, dev, layers=6)
    model.requires_grad_(False)
    for block in model.blocks:
        for parent in [block, block.mlp]:
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(parent, name, LoRALinear(child))
    model.to(dev)
    adapters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(adapters, lr=1e-4)

    def step(batch: int) -> None:
        tokens = torch.randint(0, 8192, (batch, 256), device=dev)
        train(optimizer, lm_loss(torch, model(tokens), tokens))

    return Program(step, (model, optimizer))


@program("inference with a growing KV cache: a bf16 GPT-like decoder (d 512, 6 layers) reads a 128-token prompt "
         "and generates 64 tokens, each layer's keys and values grown by torch.cat every token, no_grad",
         trainable=False)
def kv_generate(torch: Any, dev: str) -> Program:
    model = gpt(torch, dev, layers=6).to(torch.bfloat16).eval()

    def step(batch: int) -> None:
        with torch.no_grad():
            tokens = torch.randint(0, 8192, (batch, 128), device=dev)
            caches: list[Any] = [None] * len(model.blocks)
            for _ in range(64):
                x = model.embed(tokens)
                for i, block in enumerate(model.blocks):
                    x, caches[i] = block.forward_cached(x, caches[i])
                tokens = model.head(x[:, -1:]).argmax(-1)

    return Program(step, (model,))


@program("mixed precision with fp32 master weights: a bf16 GPT-like decoder (d 512, 4 layers, sequence 128); AdamW "
         "steps fp32 copies of the weights, which are copied back into the bf16 ones")
def master_weights(torch: Any, dev: str) -> Program:
    nn = torch.nn
    model = gpt(torch, dev, layers=4).to(torch.bfloat16)
    params = list(model.parameters())
    masters = nn.ParameterList([nn.Parameter(p.detach().float().clone()) for p in params]).to(dev)
    optimizer = torch.optim.AdamW(masters.parameters(), lr=1e-4)

    def step(batch: int) -> None:
        tokens = torch.randint(0, 8192, (batch, 128), device=dev)
        lm_loss(torch, model(tokens), tokens).backward()
        for master, p in zip(masters, params):
            master.grad = p.grad.float()
            p.grad = None
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():
            for master, p in zip(masters, params):
                p.copy_(master)

    return Program(step, (model, masters, optimizer))


# ---------------------------------------------------------------------------------------------------------------
# Fragmentation: each step frees a large block and then keeps a tensor of more than half its size, which PyTorch's
# best fit carves out of that cached block (the smallest free one big enough: the remainders of the blocks carved
# before are all smaller than the tensor). Every segment is left split, holding one kept tensor and a free remainder
# that no later request fits and that PyTorch cannot release (it releases whole unsplit segments only), so the
# reserved memory grows by the whole block each time while the live memory grows by the tensor kept. Under a cap
# between the two, PyTorch's defaults run out with the free bytes there, in pieces. With expandable_segments:True the
# blocks share one segment that grows at its end: the next large block takes the free remainder at the end and maps
# only the rest, so the kept tensors lie side by side and the reserved memory follows the live memory (a hole left
# in between gives its whole 20 MiB pages back when PyTorch runs out). max_split_size_mb below the large blocks'
# size avoids it too: the kept tensors may then not split the large (oversize) blocks.


@program("a chunked pipeline: each of 32 chunks takes a scratch buffer of 2-2.4 x N/2 MiB that is freed before its "
         "result, 1.4-1.5 x N/2 MiB, is kept", kind="fragmentation", trainable=False)
def frag_split(torch: Any, dev: str) -> Program:
    def step(batch: int) -> None:
        unit = batch * MiB // 2 // 4  # float32 elements
        kept = []
        for i in range(32):
            scratch = torch.randn(int((2 + 0.2 * (i % 3)) * unit), device=dev)
            mean = scratch.mean()
            del scratch
            kept.append(mean.expand(int((1.4 + 0.05 * (i % 3)) * unit)).clone())  # carved from the scratch's block
        torch.stack([k[:1] for k in kept]).sum().item()

    return Program(step)


@program("speculative decoding with a prefix store: a key/value cache of N sequences (d 1024, 128-token prompt) "
         "grown by torch.cat by a block of 8 tokens a step for 24 steps; each step the store keeps the keys (half "
         "the cache)", kind="fragmentation", trainable=False)
def frag_kv_cat(torch: Any, dev: str) -> Program:
    d = 1024

    def step(batch: int) -> None:
        with torch.no_grad():
            cache = torch.randn(2, batch, 128, d, device=dev)  # the prompt's keys and values
            store = []
            for _ in range(24):
                block = torch.randn(2, batch, 8, d, device=dev)  # the block of tokens accepted this step
                cache = torch.cat([cache, block], dim=2)  # a new cache; the old one is freed
                del block
                store.append(cache[0].clone())  # this length's keys, carved from the old cache's block
                query = torch.randn(batch, 1, d, device=dev)
                weights = torch.softmax(query @ cache[0].transpose(1, 2) / math.sqrt(d), dim=-1)
                (weights @ cache[1]).sum().item()

    return Program(step)


@program("variable-length batches whose length grows by 8 tokens a step (256 to 440 over 24 steps): N sequences' "
         "features (d 640) are kept, their logits (vocab 1024) are not", kind="fragmentation", trainable=False)
def frag_varlen(torch: Any, dev: str) -> Program:
    generator = torch.Generator(device="cpu").manual_seed(7)
    head = (torch.randn(640, 1024, generator=generator, device="cpu") / math.sqrt(640)).to(dev)

    def step(batch: int) -> None:
        with torch.no_grad():
            kept = []
            for s in range(24):
                features = torch.randn(batch, 256 + 8 * s, 640, device=dev)  # carved from the last logits' block
                logits = features @ head  # a new block: larger than any free one
                kept.append(features)
                logits.amax(-1).mean().item()
                del logits

    return Program(step)


PROGRAMS = tuple(SPECS)
NORMAL = tuple(name for name, spec in SPECS.items() if spec.kind == "normal")
FRAGMENTATION = tuple(name for name, spec in SPECS.items() if spec.kind == "fragmentation")


# ---------------------------------------------------------------------------------------------------------------
# Largest batch in one process: memstress_torch.find_max_batch, or Lightning's batch-size finder, each trying a
# batch with as many steps as the corpus's real runs take (the second step is the one that runs out).
STEPS_PER_TRIAL = 2


def find_with_memstress(torch: Any, prog: Program, cap: int | None, memstress: str | None,
                        restore: str = "given") -> dict[str, Any]:
    import memstress_torch

    kept = {"given": prog.modules, "found": None, "off": ()}[restore]
    found = memstress_torch.find_max_batch(prog.probe, capacity=cap, memstress=memstress, restore=kept,
                                           steps_per_trial=STEPS_PER_TRIAL)
    keys = ("safe_batch", "range", "sure", "record_at", "estimate")
    return {"batch": found.batch, "trials": [list(t) for t in found.trials], "trial_count": len(found.trials),
            "restore": restore, "restored": found.restored, "fresh": found.fresh, "trial_steps": found.steps,
            "ooms": found.ooms, "seconds": found.seconds,
            "prediction": {k: found.prediction.get(k) for k in keys if k in found.prediction} if found.prediction
            else None}


def find_with_lightning(torch: Any, prog: Program, dev: str) -> dict[str, Any]:
    import tempfile
    import warnings

    try:
        import lightning.pytorch as pl
        from lightning.pytorch.tuner import Tuner
    except ImportError:
        import pytorch_lightning as pl
        from pytorch_lightning.tuner import Tuner
    warnings.filterwarnings("ignore")
    trials: list[list[Any]] = []

    class Indices(torch.utils.data.Dataset):  # as long as any batch: the data is made by the step itself
        def __len__(self) -> int:
            return 1 << 40

        def __getitem__(self, index: int) -> int:
            return index

    class Wrapped(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False  # the program's step runs its own optimizer
            self.batch_size = 2
            self.steps = 0
            self.trial_count = 0
            self.inner = torch.nn.ModuleList([m for m in prog.modules if isinstance(m, torch.nn.Module)])

        def train_dataloader(self) -> Any:
            return torch.utils.data.DataLoader(Indices(), batch_size=self.batch_size)

        def on_train_start(self) -> None:
            self.steps = 0
            self.trial_count += 1

        def on_train_batch_start(self, data: Any, index: int) -> int | None:
            # The optimizer is the program's own, stepped outside Lightning, so Lightning's step count (which
            # ends a trial at steps_per_trial) never moves: a trial's epoch is ended here after its steps.
            return -1 if self.steps >= STEPS_PER_TRIAL else None

        def training_step(self, data: Any, index: int) -> None:
            self.steps += 1
            started = time.perf_counter()
            try:
                prog.probe(self.batch_size)
            except torch.cuda.OutOfMemoryError:
                trials.append([self.batch_size, False, round(time.perf_counter() - started, 4)])
                raise
            trials.append([self.batch_size, True, round(time.perf_counter() - started, 4)])

        def configure_optimizers(self) -> Any:
            return [o for o in prog.modules if isinstance(o, torch.optim.Optimizer)] or None

    started = time.perf_counter()
    wrapped = Wrapped()
    with tempfile.TemporaryDirectory(prefix="memstress-lightning-") as root:
        trainer = pl.Trainer(accelerator="cpu" if dev == "cpu" else "gpu", devices=1, max_epochs=1, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                             default_root_dir=root)
        batch = Tuner(trainer).scale_batch_size(wrapped, mode="binsearch", steps_per_trial=STEPS_PER_TRIAL, init_val=2,
                                                max_trials=3 if dev == "cpu" else 25)
    return {"batch": batch, "trials": trials, "trial_count": wrapped.trial_count, "trial_steps": len(trials),
            "ooms": sum(not t[1] for t in trials),
            "seconds": round(time.perf_counter() - started, 4)}


def find_max(args: argparse.Namespace, torch: Any, prog: Program) -> dict[str, Any]:
    result: dict[str, Any] = {"program": args.program, "tool": args.find_max, "cap": args.cap, "crashed": False,
                              "error": None}
    if not SPECS[args.program].trainable and args.find_max == "lightning":
        result["error"] = "not trainable: Lightning's batch-size finder runs training steps"
        return result
    try:
        if args.find_max == "memstress":
            result.update(find_with_memstress(torch, prog, args.cap, args.memstress, args.restore))
        else:
            result.update(find_with_lightning(torch, prog, args.device))
    except Exception as e:  # noqa: BLE001 - a search that fails is a finding, reported
        result.update(crashed=True, error=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return result


def main(argv: list[str]) -> int:
    started = time.perf_counter()
    parser = argparse.ArgumentParser(prog="doctor_programs.py")
    parser.add_argument("program", nargs="?", choices=PROGRAMS)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--cap", type=int, help="bytes PyTorch's allocator may hold")
    parser.add_argument("--record", help="write a snapshot here (the memstress recorder)")
    parser.add_argument("--stacks", default="python", choices=("python", "none"))
    parser.add_argument("--out", help="write the result here (JSON)")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--find-max", choices=("memstress", "lightning"), help="find the largest batch in-process")
    parser.add_argument("--memstress", help="the memstress binary, for --find-max memstress")
    parser.add_argument("--restore", default="given", choices=("given", "found", "off"),
                        help="what find_max_batch puts back before each trial (--find-max memstress)")
    parser.add_argument("--list", action="store_true", help="print the programs (JSON) and exit")
    args = parser.parse_args(argv)
    if args.list:
        print(json.dumps({n: {"shape": s.shape, "kind": s.kind, "trainable": s.trainable} for n, s in SPECS.items()},
                         indent=1))
        return 0
    if args.program is None or (args.batch is None and not args.find_max):
        parser.error("give PROGRAM and --batch N (or --find-max, or --list)")
    if args.device == "cpu" and (args.cap or args.record):
        parser.error("--cap and --record need --device cuda")
    try:
        if args.out:
            _output.check_target(args.out, "--out")  # before the program runs, not after
    except _output.OutputError as e:
        print(f"doctor_programs.py: {e}", file=sys.stderr)
        return 2
    import torch

    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("doctor_programs.py: no CUDA device", file=sys.stderr)
        return 3
    torch.manual_seed(1234)
    total = 0
    if cuda:
        torch.cuda.init()
        total = torch.cuda.mem_get_info()[1]
        if args.cap:
            torch.cuda.set_per_process_memory_fraction(args.cap / total)
    recorder = None
    if args.record:
        import memstress_torch

        recorder = memstress_torch.record(args.record, batch=args.batch, stacks=args.stacks, capacity=args.cap)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    imported = time.perf_counter()
    oom = None
    prog = None
    timing = {"start": round(imported - started, 3)}  # python and torch, CUDA's context and the cap
    try:
        prog = SPECS[args.program].make(torch, args.device)
        timing["build"] = round(time.perf_counter() - imported, 3)
        if args.find_max:
            result = find_max(args, torch, prog)
        else:
            for _ in range(args.steps):
                prog.step(args.batch)
            if cuda:
                torch.cuda.synchronize()
            timing["steps"] = round(time.perf_counter() - imported - timing["build"], 3)
    except torch.cuda.OutOfMemoryError as e:
        oom = str(e).splitlines()[0]
    if args.find_max and oom is not None:  # building the program itself ran out
        result = {"program": args.program, "tool": args.find_max, "cap": args.cap, "crashed": True,
                  "error": f"OutOfMemoryError: {oom}"}
    if not args.find_max:
        result = {
            "program": args.program, "batch": args.batch, "steps": args.steps, "cap": args.cap,
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
            "peak_reserved": torch.cuda.max_memory_reserved() if cuda else 0,
            "peak_allocated": torch.cuda.max_memory_allocated() if cuda else 0,
            "oom": oom, "num_ooms": torch.cuda.memory_stats().get("num_ooms", 0) if cuda else 0,
            "torch": torch.__version__, "gpu": torch.cuda.get_device_name() if cuda else "cpu", "total": total,
            "seconds": timing,
        }
    if recorder is not None:
        # the snapshots the OOM observer wrote, and the OOMs it met too soon after one (Note [OOMs that PyTorch
        # survives], python/memstress/recorder.py)
        result["recorder"] = {"written_at_oom": recorder.written, "skipped": recorder.skipped}
        recorder.dump()
        recorder.stop()
    text = json.dumps(result)
    if args.out:
        try:
            _output.write_text(args.out, "--out", text + "\n")
        except _output.OutputError as e:
            print(f"doctor_programs.py: {e}", file=sys.stderr)
            return 2
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
