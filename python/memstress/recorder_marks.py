"""The recorder's marks: the allocations PyTorch makes inside a convolution, told apart in the snapshot.

Note [Marking the convolutions]. PyTorch's cuDNN convolutions try one plan after another and go on to the next
when the caching allocator refuses a plan's workspace, down to plans that need little or none; a refused
workspace costs the program nothing but speed (Note [A workspace PyTorch does without],
harness/doctor/batch_model.hpp). predict-batch must know which requests those are, and a trace cannot tell it:
an attention kernel's workspace, which PyTorch cannot do without, is allocated and freed around one kernel just
the same, and the backward pass has no Python frames to name the operator. So while recording, the allocations
made inside a convolution module carry PyTorch's per-allocation ``user_metadata`` (``MARK``), which the
snapshot's trace keeps: set by a forward pre-hook of every ``torch.nn`` convolution (module hooks registered
for all modules), cleared by its forward hook (called even when the forward raises), and for the backward pass
set and cleared by a pre-hook and a hook on the convolution's autograd node (the output's ``grad_fn``), which run
on the autograd thread right before and after the node. Node hooks, not module backward hooks: those wrap the
module's outputs in a view that an in-place operation right after the convolution (a ReLU with
``inplace=True``) refuses. Every other module's forward pre-hook clears the mark, so that what runs after a node's
pre-hook and before the node (activation checkpointing's recomputation) is not taken for the convolution's.

Only what is marked can be refused in predict-batch's replay, so a mark wrongly left off makes the answer lower,
never higher; the hooks are kept to what surely is a convolution's. The metadata is the allocator's, one value a
device: the mark is set on the device of the module's input (the node's hooks run on the autograd thread of its
device), cleared on every device marked when recording stops, and what the program had set itself is put back.
Not marked: a convolution called as ``torch.nn.functional.conv2d``, one inside a module being compiled by
``torch.compile`` (the hooks step aside while compiling), anything on ROCm (MIOpen falls back to a workspace of its
own, not to none), and anything where this PyTorch has no ``user_metadata`` (the recorder says so: the snapshot's
``convolutions_marked``). A hook that fails stops the marking; it never raises into the program.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MARK = "memstress.convolution"


def _memory_api(torch: Any, name: str, native: str) -> Callable[..., Any] | None:
    memory = getattr(getattr(torch, "cuda", None), "memory", None)
    function = getattr(memory, name, None)
    return function if function is not None else getattr(getattr(torch, "_C", None), native, None)


class ConvolutionMarks:
    """Marks what convolutions allocate while started (Note [Marking the convolutions]); ``active`` says
    whether it is marking. A context manager: ``with ConvolutionMarks(torch): ...``."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        rocm = bool(getattr(getattr(torch, "version", None), "hip", None))
        self._set = None if rocm else _memory_api(torch, "_set_memory_metadata", "_cuda_setMemoryMetadata")
        self._get = _memory_api(torch, "_get_memory_metadata", "_cuda_getMemoryMetadata")
        self._handles: list[Any] = []
        self._before: dict[int | None, str] = {}  # by device: the program's own metadata, put back at stop()

    def __enter__(self) -> ConvolutionMarks:
        self.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.stop()

    @property
    def active(self) -> bool:
        return bool(self._handles)

    def start(self) -> bool:
        """Installs the hooks (once); False where this PyTorch cannot mark."""
        if self._set is None:
            return False
        if not self._handles:
            hooks = self.torch.nn.modules.module
            try:
                leave = hooks.register_module_forward_hook(self._leave, always_call=True)
            except TypeError:  # a PyTorch without always_call: a forward that raises leaves the mark to the next
                leave = hooks.register_module_forward_hook(self._leave)
            self._handles = [hooks.register_module_forward_pre_hook(self._enter), leave]
        return True

    def stop(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        before, self._before = self._before, {}
        for device, value in before.items():
            try:
                self._put(device, value)
            except Exception:  # noqa: BLE001, PERF203 - the program's own value, put back where it can be
                continue

    def _on(self, device: int | None, function: Callable[..., Any], *args: Any) -> Any:
        """`function` called with the allocator of `device` current (None: the current one)."""
        cuda = self.torch.cuda
        if device is None or device == cuda.current_device():
            return function(*args)
        with cuda.device(device):
            return function(*args)

    def _put(self, device: int | None, value: str) -> None:
        if self._set is not None:
            self._on(device, self._set, value)

    def _mark_on(self, device: int | None, value: bool) -> None:
        if not self._handles:  # a node's hook can outlive the recording: it marks nothing then
            return
        try:
            if device not in self._before:
                before = self._on(device, self._get) if self._get is not None else ""
                self._before[device] = before if isinstance(before, str) and before != MARK else ""
            self._put(device, MARK if value else self._before[device])
        except Exception:  # noqa: BLE001 - a mark is worth less than the program: stop marking, never raise
            self.stop()

    def _mark(self, *_: Any) -> None:
        self._mark_on(None, True)

    def _unmark(self, *_: Any) -> None:
        self._mark_on(None, False)

    def _compiling(self) -> bool:
        compiler = getattr(self.torch, "compiler", None)
        is_compiling = getattr(compiler, "is_compiling", None)
        return bool(is_compiling()) if is_compiling is not None else False

    def _is_convolution(self, module: Any) -> bool:
        return isinstance(module, self.torch.nn.modules.conv._ConvNd)

    def _device_of(self, inputs: Any) -> int | None:
        for value in inputs if isinstance(inputs, tuple) else ():
            device = getattr(value, "device", None)
            if getattr(device, "type", None) == "cuda" and device.index is not None:
                return int(device.index)
        return None

    def _enter(self, module: Any, inputs: Any) -> None:
        if self._compiling():
            return
        self._mark_on(self._device_of(inputs), self._is_convolution(module))

    def _leave(self, module: Any, inputs: Any, output: Any) -> None:
        if self._compiling() or not self._is_convolution(module):
            return
        self._mark_on(self._device_of(inputs), False)
        node = getattr(output, "grad_fn", None)
        if node is not None and self._handles:
            node.register_prehook(self._mark)
            node.register_hook(self._unmark)
