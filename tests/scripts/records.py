"""The committed records of results/ as the tests read them: a file over 20 kB is kept xz-compressed (NAME.xz,
results/README.md) and read here as it was written."""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any


def text(path: Path | str) -> str:
    """The text of a committed record, NAME or NAME.xz."""
    data = Path(path).read_bytes()
    return (lzma.decompress(data) if str(path).endswith(".xz") else data).decode("utf-8")


def document(path: Path | str) -> Any:
    """The JSON document of a committed record, NAME or NAME.xz."""
    return json.loads(text(path))
