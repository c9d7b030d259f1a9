"""Allocation sites of a PyTorch memory snapshot: which line of the user's program asked for each block.

A snapshot recorded with stacks (``_record_memory_history(stacks="python")`` or ``"all"``) gives every
trace entry and every live block a list of frames, ``{"filename", "line", "name"}``, innermost first
(the allocator's caller first, the program's entry point last). Most of those frames are PyTorch's own
(``torch/nn/modules/linear.py``, ``torch/_tensor.py``), Python's standard library (``contextlib.py``)
or C++ (``??``, ``c10/cuda/CUDACachingAllocator.cpp``): none of them is what a user can change. The
*site* of an allocation is its first frame that is none of those: the user's own line (or a library's
that the user called, such as ``transformers/models/llama/modeling_llama.py``). When no frame
qualifies, the innermost Python frame stands in (marked internal), and when no frame was recorded the
allocation has no site (-1).

Sites are keyed by (filename, line, function); each keeps one example stack (its first), shortened to
the Python frames when there are any, at most STACK_FRAMES of them.
"""

from __future__ import annotations

import re
import sysconfig
from dataclasses import dataclass, field
from typing import Any

STACK_FRAMES = 16

# Frames of PyTorch itself, wherever it is installed (site-packages, a source checkout's torch/).
_TORCH = re.compile(r"(^|[/\\])torch[/\\]")
# The recorder's own frames (recorder.py of this package).
_RECORDER = re.compile(r"(^|[/\\])memstress[/\\]recorder\.py$")
_STDLIB_DIRS = tuple(
    p for p in {sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")} if p)
_STDLIB = re.compile(r"[/\\]lib[/\\]python3\.\d+[/\\](?!site-packages|dist-packages)")


def is_python(filename: str) -> bool:
    return filename.endswith(".py")


def is_internal(filename: str) -> bool:
    """Frames no user edits: C/C++, PyTorch's Python, the standard library, frozen modules, and the
    memstress recorder (recorder.py, and memstress_torch.py, which re-exports it and was the recorder before:
    older snapshots name it), which may sit at the bottom of every stack."""
    if not is_python(filename) or filename.startswith("<") or filename.endswith("memstress_torch.py"):
        return True
    if _RECORDER.search(filename) or _TORCH.search(filename):
        return True
    return bool(_STDLIB.search(filename)) or any(filename.startswith(d) for d in _STDLIB_DIRS)


def frame_text(frame: dict[str, Any]) -> str:
    return f"{frame['filename']}:{frame['line']} in {frame['name']}"


def short_where(filename: str, line: int, name: str) -> str:
    """The last two components of the path: enough to find the file, short enough for a table."""
    parts = re.split(r"[/\\]", filename)
    return f"{'/'.join(parts[-2:])}:{line} in {name}"


def _well_formed(f: Any) -> bool:
    return (isinstance(f, dict) and isinstance(f.get("filename"), str) and isinstance(f.get("name"), str)
            and isinstance(f.get("line"), int) and not isinstance(f.get("line"), bool)
            and -(1 << 63) <= f["line"] < (1 << 63))  # the facts' readers take int64 (str() refuses 4300 digits)


USER, INTERNAL_PYTHON, INTERNAL = 2, 1, 0


@dataclass
class SiteTable:
    """The sites seen so far, in order of first appearance."""

    sites: list[dict[str, Any]] = field(default_factory=list)
    index: dict[tuple[str, int, str], int] = field(default_factory=dict)
    with_frames: int = 0  # entries that had frames
    without_frames: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # filename -> USER, INTERNAL_PYTHON or INTERNAL
    # id(frames list) -> (its site, the list): a pickle memoises a list shared by many entries (one list of
    # 10,000 frames behind 20,000 events), which is classified once, not once an entry. The list is kept
    # so that its id is not reused while the table lives.
    shared: dict[int, tuple[int, Any]] = field(default_factory=dict)

    def _kind(self, filename: str) -> int:
        kind = self.kinds.get(filename)
        if kind is None:
            kind = USER if not is_internal(filename) else INTERNAL_PYTHON if is_python(filename) else INTERNAL
            self.kinds[filename] = kind
        return kind

    def site_of(self, frames_value: Any) -> int:
        """The site index of an entry's frames (-1 when it has none). One pass over the frames, each file
        classified once (a snapshot has hundreds of thousands of entries and a few hundred files), and each
        frames list once however many entries share it (by identity: a pickle's memo makes them one object)."""
        if isinstance(frames_value, list) and frames_value:
            seen = self.shared.get(id(frames_value))
            if seen is not None and seen[1] is frames_value:
                if seen[0] < 0:
                    self.without_frames += 1
                else:
                    self.with_frames += 1
                return seen[0]
            site = self._site_of(frames_value)
            self.shared[id(frames_value)] = (site, frames_value)
            return site
        return self._site_of(frames_value)

    def _site_of(self, frames_value: Any) -> int:
        chosen = first_python = first_any = None
        if isinstance(frames_value, list):
            for f in frames_value:
                if not _well_formed(f):
                    continue
                kind = self._kind(f["filename"])
                first_any = first_any or f
                if kind != INTERNAL and first_python is None:
                    first_python = f
                if kind == USER:
                    chosen = f
                    break
        if first_any is None:
            self.without_frames += 1
            return -1
        self.with_frames += 1
        user = chosen is not None
        chosen = chosen or first_python or first_any
        key = (chosen["filename"], chosen["line"], chosen["name"])
        found = self.index.get(key)
        if found is not None:
            return found
        frames = [f for f in frames_value if _well_formed(f)]
        python = [f for f in frames if is_python(f["filename"])]
        self.sites.append({
            "where": short_where(*key),
            "filename": key[0],
            "line": key[1],
            "function": key[2],
            "user_code": user,
            "stack": [frame_text(f) for f in (python or frames)[:STACK_FRAMES]],
        })
        self.index[key] = len(self.sites) - 1
        return len(self.sites) - 1


def alloc_conf_of(settings: Any) -> str | None:
    """A snapshot's allocator_settings as the PYTORCH_CUDA_ALLOC_CONF string it was configured with.

    PyTorch writes the string last given (``PYTORCH_CUDA_ALLOC_CONF``, from the environment or
    ``torch.cuda.memory._set_allocator_settings``) beside the parsed values; when the string is absent
    the values are turned back into one (max_split_size is in bytes there, SIZE_MAX when unset).
    """
    if not isinstance(settings, dict):
        return None
    text = settings.get("PYTORCH_CUDA_ALLOC_CONF")
    if isinstance(text, str):
        return text.strip()
    parts = []
    split = settings.get("max_split_size")
    if isinstance(split, int) and 0 < split < (1 << 62):
        parts.append(f"max_split_size_mb:{split >> 20}")
    gc = settings.get("garbage_collection_threshold")
    if isinstance(gc, (int, float)) and not isinstance(gc, bool) and 0 < gc < (1 << 62):  # PyTorch: (0, 1)
        parts.append(f"garbage_collection_threshold:{gc}")
    if settings.get("expandable_segments") is True:
        parts.append("expandable_segments:True")
    return ",".join(parts)
