"""The recorder's marks: the allocations PyTorch makes inside a convolution, told apart in the snapshot.

Note [Marking the convolutions]. PyTorch's cuDNN convolutions try one plan after another and go on to the next
when the caching allocator refuses a plan's workspace, down to plans that need little or none; a refused
workspace costs the program nothing but speed (Note [A workspace PyTorch does without],
harness/doctor/batch_model.hpp). predict-batch must know which requests those are, and a trace cannot tell it:
an attention kernel's workspace, which PyTorch cannot do without, is allocated and freed around one kernel just
the same, and the backward pass has no Python frames to name the operator. So while recording, the allocations
made inside a convolution module carry PyTorch's per-allocation ``user_metadata`` (``MARK``), which the
snapshot's trace keeps: set by a forward pre-hook of every ``torch.nn`` convolution (module hooks registered
for all modules), cleared by its forward hook, and for the backward pass set and cleared by a pre-hook and a
hook on the convolution's autograd node (the output's ``grad_fn``), which run on the autograd thread right
before and after the node. Node hooks, not module backward hooks: those wrap the module's outputs in a view
that an in-place operation right after the convolution (a ReLU with ``inplace=True``) refuses. The metadata is
the allocator's, one value a device, not a thread's: the hooks set it for the current device. A convolution
called as ``torch.nn.functional.conv2d`` is not marked, nor one inside a model compiled with ``torch.compile``
(hooks of compiled modules are traced); its workspaces are taken to be needed, which can only make the answer
lower. Where PyTorch has no ``user_metadata`` (before 2.6), nothing is marked and the recorder says so.
"""

from __future__ import annotations

from typing import Any, Callable

MARK = "memstress.convolution"


def _setter(torch: Any) -> Callable[[str], None] | None:
    memory = getattr(getattr(torch, "cuda", None), "memory", None)
    setter = getattr(memory, "_set_memory_metadata", None)
    if setter is None:
        setter = getattr(getattr(torch, "_C", None), "_cuda_setMemoryMetadata", None)
    return setter


class ConvolutionMarks:
    """Marks what convolutions allocate while started (Note [Marking the convolutions]); ``active`` says
    whether this PyTorch can."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self._set = _setter(torch)
        self._handles: list[Any] = []

    @property
    def active(self) -> bool:
        return bool(self._handles)

    def start(self) -> bool:
        """Installs the hooks (once); False where this PyTorch cannot mark."""
        if self._set is None:
            return False
        if not self._handles:
            hooks = self.torch.nn.modules.module
            self._handles = [hooks.register_module_forward_pre_hook(self._enter),
                             hooks.register_module_forward_hook(self._leave)]
        return True

    def stop(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self._set is not None:
            self._set("")

    def _is_convolution(self, module: Any) -> bool:
        return isinstance(module, self.torch.nn.modules.conv._ConvNd)

    def _mark(self, *_: Any) -> None:
        if self._handles:  # a node's hook can outlive the recording: it marks nothing then
            self._set(MARK)

    def _unmark(self, *_: Any) -> None:
        if self._handles:
            self._set("")

    def _enter(self, module: Any, _inputs: Any) -> None:
        if self._is_convolution(module):
            self._mark()

    def _leave(self, module: Any, _inputs: Any, output: Any) -> None:
        if not self._is_convolution(module):
            return
        self._unmark()
        node = getattr(output, "grad_fn", None)
        if node is not None:
            node.register_prehook(self._mark)
            node.register_hook(self._unmark)
