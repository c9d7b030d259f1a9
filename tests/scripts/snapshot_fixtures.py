"""Synthetic PyTorch memory snapshots and RMM logs for the converter's tests (no GPU, no torch).

The snapshots have exactly the structure ``torch.cuda.memory._dump_snapshot`` pickles, as written by
``torch/csrc/cuda/memory_snapshot.cpp`` and ``Module.cpp`` (``_cuda_memorySnapshot``):

    {"segments": [{"device", "address", "total_size", "allocated_size", "active_size",
                   "requested_size", "stream", "segment_type", "segment_pool_id", "is_expandable",
                   "frames", "blocks": [{"address", "size", "requested_size", "state", "frames"}]}],
     "device_traces": [[{"action", "addr" (or "device_free" for oom), "size", "stream", "time_us",
                         "frames"?}]],   # one list per device
     "allocator_settings": {...}}

They are made by ``FakeCachingAllocator``, a toy of PyTorch's caching allocator that records what the
real one records (``record_trace`` in ``c10/cuda/CUDACachingAllocator.cpp``): ``alloc`` with the
requested size (``orig_size``), ``free_requested``/``free_completed`` with ``requested_size``,
``segment_alloc``/``segment_free`` with the segment's size, ``oom`` with the rounded size and
``device_free``, ``snapshot`` with the active bytes. While ``recording`` is off it changes its state
but records nothing, as when ``_record_memory_history`` starts late: that is what gives real traces
frees of unknown addresses and live blocks the trace never mentions.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

KMIN = 512
SMALL_SIZE = 1 << 20  # the largest request of the small pool
SMALL_SEGMENT = 2 << 20
LARGE_ROUND = 2 << 20
EPOCH_US = 1_760_000_000_000_000


def round_size(size: int) -> int:
    """PyTorch's round_size without roundup_power2_divisions: at least 512, a multiple of 512."""
    return KMIN if size < KMIN else KMIN * ((size + KMIN - 1) // KMIN)


@dataclass
class FakeBlock:
    address: int
    size: int
    requested_size: int = 0
    state: str = "inactive"


@dataclass
class FakeSegment:
    device: int
    address: int
    total_size: int
    stream: int
    blocks: list[FakeBlock] = field(default_factory=list)


class FakeCachingAllocator:
    """Enough of PyTorch's caching allocator to produce consistent snapshots on any number of devices."""

    def __init__(self, devices: int = 1, *, rounded_trace_sizes: bool = False) -> None:
        self.recording = False
        self.rounded_trace_sizes = rounded_trace_sizes  # what a trace of rounded sizes would say
        self.traces: list[list[dict[str, Any]]] = [[] for _ in range(devices)]
        self.segments: list[FakeSegment] = []
        self.now_us = EPOCH_US
        self.next_address = [0x7F0000000000 + (d << 36) for d in range(devices)]

    def tick(self, us: int = 3) -> None:
        self.now_us += us

    def record(self, device: int, action: str, addr: int, size: int, stream: int, **extra: Any) -> None:
        if not self.recording:
            return
        entry: dict[str, Any] = {"action": action}
        if action == "oom":
            entry["device_free"] = addr
        else:
            entry["addr"] = addr
        entry.update(size=size, stream=stream, time_us=self.now_us, **extra)
        self.traces[device].append(entry)
        self.tick()

    # The program's side ------------------------------------------------------------------------------

    def malloc(self, device: int, size: int, stream: int = 0, frames: list[dict[str, Any]] | None = None) -> int:
        rounded = round_size(size)
        found = self._find(device, rounded, stream)
        if found is None:
            total = SMALL_SEGMENT if rounded <= SMALL_SIZE else LARGE_ROUND * (-(-rounded // LARGE_ROUND))
            segment = FakeSegment(device, self.next_address[device], total, stream,
                                  [FakeBlock(self.next_address[device], total)])
            self.next_address[device] += total + (1 << 24)
            self.segments.append(segment)
            self.record(device, "segment_alloc", segment.address, total, stream)
            found = (segment, 0)
        segment, index = found
        block = segment.blocks[index]
        if block.size > rounded:
            rest = FakeBlock(block.address + rounded, block.size - rounded)
            block.size = rounded
            segment.blocks.insert(index + 1, rest)
        block.state = "active_allocated"
        block.requested_size = size
        extra = {} if frames is None else {"frames": frames}
        self.record(device, "alloc", block.address, rounded if self.rounded_trace_sizes else size, stream, **extra)
        return block.address

    def free(self, device: int, address: int, *, pending: bool = False) -> None:
        """The program frees a block; with `pending` it was used on another stream (record_stream)."""
        segment, block = self._block(device, address)
        size = block.size if self.rounded_trace_sizes else block.requested_size
        self.record(device, "free_requested", address, size, segment.stream)
        block.state = "active_pending_free"
        if not pending:
            self.complete(device, address)

    def complete(self, device: int, address: int) -> None:
        """The other stream's event completed: the block can be reused."""
        segment, block = self._block(device, address)
        size = block.size if self.rounded_trace_sizes else block.requested_size
        self.record(device, "free_completed", address, size, segment.stream)
        block.state = "inactive"
        block.requested_size = 0
        self._merge(segment)

    def oom(self, device: int, size: int, stream: int = 0, device_free: int = 1 << 30) -> None:
        self.record(device, "oom", device_free, round_size(size), stream)

    def empty_cache(self) -> None:
        for segment in list(self.segments):
            if all(b.state == "inactive" for b in segment.blocks):
                self.record(segment.device, "segment_free", segment.address, segment.total_size,
                            segment.stream)
                self.segments.remove(segment)

    def snapshot(self) -> dict[str, Any]:
        active = sum(b.size for s in self.segments for b in s.blocks if b.state != "inactive")
        for device in range(len(self.traces)):
            self.record(device, "snapshot", 0, active, 0)
        return {
            "segments": [self._segment_dict(s) for s in sorted(self.segments, key=lambda s: s.address)],
            "device_traces": [list(t) for t in self.traces],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                   "expandable_segments": False, "roundup_power2_divisions": {}},
        }

    # Internals -----------------------------------------------------------------------------------------

    def _find(self, device: int, size: int, stream: int) -> tuple[FakeSegment, int] | None:
        for segment in self.segments:
            if segment.device != device or segment.stream != stream:
                continue
            if (segment.total_size > SMALL_SEGMENT) != (size > SMALL_SIZE):  # the small and large pools
                continue
            for index, block in enumerate(segment.blocks):
                if block.state == "inactive" and block.size >= size:
                    return segment, index
        return None

    def _block(self, device: int, address: int) -> tuple[FakeSegment, FakeBlock]:
        for segment in self.segments:
            for block in segment.blocks:
                if segment.device == device and block.address == address and block.state != "inactive":
                    return segment, block
        raise KeyError(f"no active block at {address:#x} on device {device}")

    @staticmethod
    def _merge(segment: FakeSegment) -> None:
        merged: list[FakeBlock] = []
        for block in segment.blocks:
            if merged and merged[-1].state == "inactive" and block.state == "inactive":
                merged[-1].size += block.size
            else:
                merged.append(block)
        segment.blocks = merged

    @staticmethod
    def _segment_dict(segment: FakeSegment) -> dict[str, Any]:
        blocks = [{"address": b.address, "size": b.size, "requested_size": b.requested_size,
                   "state": b.state, "frames": []} for b in segment.blocks]
        return {
            "device": segment.device,
            "address": segment.address,
            "total_size": segment.total_size,
            "allocated_size": sum(b.size for b in segment.blocks if b.state == "active_allocated"),
            "active_size": sum(b.size for b in segment.blocks if b.state != "inactive"),
            "requested_size": sum(b.requested_size for b in segment.blocks if b.state != "inactive"),
            "stream": segment.stream,
            "segment_type": "large" if segment.total_size > SMALL_SEGMENT else "small",
            "segment_pool_id": (0, 0),
            "is_expandable": False,
            "frames": [],
            "blocks": blocks,
        }


# The scenario the tests check, line by line ------------------------------------------------------------

SIDE_STREAM = 0x55D0C0DE1000  # a cudaStream_t's value, as PyTorch pickles it (int64)
DEV1_STREAM = 0x55D0C0DE2000


def scenario(*, rounded_trace_sizes: bool = False) -> tuple[dict[str, Any], dict[str, int]]:
    """A two-device, two-stream run whose recording starts late; returns (snapshot, addresses by name).

    Before recording: A (1000 B), B (3 MiB), K (512 B, never freed) and D (5000 B, freed while in use
    on another stream, still pending at the snapshot) on cuda:0; C (5000 B) on cuda:1.
    Recorded, cuda:0: alloc E (4096 B), alloc F (1,000,001 B on the side stream), free A, free E,
    alloc G (700 B), free F (pending: free_requested now, free_completed two steps later), an oom of
    80 GiB, free B, empty_cache (segment_free of B's segment, which predates the trace).
    Recorded, cuda:1: alloc H (12,345 B on its stream), free C.
    Live at the snapshot: G, K, D (pending) on cuda:0, H on cuda:1.
    """
    fake = FakeCachingAllocator(devices=2, rounded_trace_sizes=rounded_trace_sizes)
    names: dict[str, int] = {}
    names["A"] = fake.malloc(0, 1000)
    names["B"] = fake.malloc(0, 3 << 20)
    names["K"] = fake.malloc(0, 512)
    names["D"] = fake.malloc(0, 5000)
    fake.free(0, names["D"], pending=True)
    names["C"] = fake.malloc(1, 5000, DEV1_STREAM)
    fake.tick(1000)

    fake.recording = True
    names["E"] = fake.malloc(0, 4096)
    names["F"] = fake.malloc(0, 1_000_001, SIDE_STREAM)
    names["H"] = fake.malloc(1, 12_345, DEV1_STREAM)
    fake.free(0, names["A"])
    fake.free(0, names["E"])
    names["G"] = fake.malloc(0, 700)
    fake.free(0, names["F"], pending=True)
    fake.free(1, names["C"])
    fake.tick(50)
    fake.complete(0, names["F"])
    fake.oom(0, 80 << 30, device_free=123 << 20)
    fake.free(0, names["B"])
    fake.empty_cache()
    return fake.snapshot(), names


def frames_at(where: str, line: int, name: str) -> list[dict[str, Any]]:
    """A Python stack as PyTorch records it, innermost first: torch's own frames, then the user's."""
    torch_dir = "/usr/lib/python3/dist-packages/torch"
    return [
        {"filename": f"{torch_dir}/nn/modules/module.py", "line": 1751, "name": "_call_impl"},
        {"filename": f"project/{where}", "line": line, "name": name},
        {"filename": "project/train.py", "line": 120, "name": "<module>"},
    ]


def training_snapshot(steps: int = 8, *, leak: bool = False, frames: bool = True,
                      oom_request: int | None = None, batch: int = 4, device_free: int = 16 << 20,
                      recorder: bool = True) -> dict[str, Any]:
    """A training loop as a snapshot: 64 MiB of weights, then per step 6 activations of 1 MiB per sample
    (model.py:42 in forward) and a 4-byte loss (train.py:57 in <module>), freed at the step's end unless
    `leak` (losses.append(loss) without .item()). With `oom_request`, the program ends with an OOM of
    that many bytes and `device_free` free on the device. Recorded from the start, with stack frames unless
    `frames` is false; with the memstress recorder's notes unless `recorder` is false (a plain PyTorch
    snapshot, as its out-of-memory observer writes one)."""
    fake = FakeCachingAllocator()
    fake.recording = True
    at = (lambda *where: frames_at(*where)) if frames else (lambda *where: None)
    fake.malloc(0, 64 << 20, frames=at("model.py", 10, "__init__"))
    for _ in range(steps):
        acts = [fake.malloc(0, batch << 20, frames=at("model.py", 42, "forward")) for _ in range(6)]
        loss = fake.malloc(0, 4, frames=at("train.py", 57, "<module>"))
        for a in acts:
            fake.free(0, a)
        if not leak:
            fake.free(0, loss)
    if oom_request is not None:
        fake.oom(0, oom_request, device_free=device_free)
    snapshot = fake.snapshot()
    if not recorder:
        return snapshot
    snapshot["memstress"] = {"recorded_by": "memstress_torch", "device_name": "NVIDIA H100 80GB HBM3",
                             "device_total": 85_031_714_816, "allocator_capacity": 84_396_015_616,
                             "batch": batch}
    return snapshot


def write_pickle(path: Any, obj: Any) -> None:
    with open(path, "wb") as f:
        pickle.dump(obj, f)


class _RunsCode:
    """Pickles into a call of os.system: what a malicious 'snapshot' would contain."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        import os

        return os.system, (self.command,)


def malicious_pickle(command: str) -> bytes:
    return pickle.dumps({"segments": [], "device_traces": [[_RunsCode(command)]]})


RMM_LOG = """Thread,Time,Action,Pointer,Size,Stream
2342727,23:59:59.999990,allocate,0x10012400000,1048576,0
2342727,23:59:59.999995,allocate,0x10012500000,256,0x7f8a38001020
2342728,00:00:00.000010,free,0x10012400000,1048576,0
2342728,00:00:00.000011,free,0x7f0000000000,4096,0
2342727,00:00:00.000020,allocate failure,(nil),85899345920,0x7f8a38001020
2342727,00:00:00.000015,free,0x10012500000,256,0x7f8a38001020
"""
