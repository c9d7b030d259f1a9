"""What the memstress programs write: files replaced whole, never over what is not a regular file, in valid UTF-8.

Note [Output files of the scripts]
----------------------------------
Every file a program of this package writes (the report's `-o`, the converter's `-o` and `--facts`, ...) goes through this
module, for three promises:

* Atomic: the content goes to a temporary file in the target's directory (so the rename stays on one file
  system), which is renamed over the target once complete; a reader sees the old file or the new one,
  never half of one, and a failure leaves no temporary file behind. The file gets the mode a plain
  open() would give it (0666 less the umask), not mkstemp's private 0600.
* Only over a regular file (or nothing): a rename over `/dev/null` would replace the device node with a
  regular file (as root, for every program on the machine), over a FIFO it would cut off its reader, and
  over a directory it fails obscurely. A target that exists and is not a regular file (after following
  symbolic links) is refused with OutputError naming the flag and the path: "-o /dev/null: exists and is
  not a regular file (a character device)". Scripts check their targets before they start working
  (check_target) and again just before the rename.
* Valid UTF-8: text from outside (file names and arguments, which Python decodes with surrogate escapes;
  strings from pickles and JSON escapes, which may be lone surrogates) can hold code points that UTF-8
  cannot encode. clean_text and clean replace them with U+FFFD where they are read, so what is written
  is always valid UTF-8; a writer that meets one anyway raises (a bug, not an input to hide).

Only the standard library is used.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path
from typing import IO, Any

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)

_SURROGATE = re.compile("[\ud800-\udfff]")


class OutputError(Exception):
    """An output that cannot (or must not) be written; the message names the flag and the path."""


def _show(path: Path | str) -> str:
    return clean_text(str(path))


def check_target(path: Path | str, flag: str) -> None:
    """Raises OutputError when `path` exists and is not a regular file (symbolic links followed)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise OutputError(f"{flag} {_show(path)}: cannot be written: a part of its directory is not a directory") \
            from None
    except OSError as e:
        raise OutputError(f"{flag} {_show(path)}: cannot be written: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a file")
        raise OutputError(f"{flag} {_show(path)}: exists and is not a regular file ({kind}): refused")


class AtomicFile:
    """A temporary binary file beside `path`, renamed over it by commit() (see the note above).

        with AtomicFile(path, "-o") as out:   # OutputError when path is refused or cannot be written
            out.file.write(data)              # an exception in the block removes the temporary file
    """

    def __init__(self, path: Path | str, flag: str) -> None:
        self.path = Path(path)
        self.flag = flag
        check_target(self.path, flag)
        if self.path.is_symlink():
            # As memstress's own outputs (docs/limits.md): through a link, the file it names is replaced and the
            # link kept; a link to nothing is refused.
            if not self.path.exists():
                raise OutputError(f"{flag} {_show(self.path)}: a symbolic link to nothing; name a file")
            self.path = Path(os.path.realpath(self.path))
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        except OSError as e:
            raise OutputError(f"{flag} {_show(self.path)}: cannot be written: {e.strerror or e}") from None
        self.tmp = Path(tmp)
        self.file: IO[bytes] = os.fdopen(fd, "wb")

    def commit(self) -> None:
        try:
            if not self.file.closed:
                self.file.close()
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(self.tmp, 0o666 & ~umask)
            check_target(self.path, self.flag)  # the target may have appeared since
            os.replace(self.tmp, self.path)
        except OSError as e:
            self.discard()
            raise OutputError(f"{self.flag} {_show(self.path)}: cannot be written: {e.strerror or e}") from None
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass
        self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()
            if isinstance(value, OSError):
                raise OutputError(f"{self.flag} {_show(self.path)}: cannot be written: {value.strerror or value}") \
                    from None


def write_bytes(path: Path | str, flag: str, data: bytes) -> None:
    with AtomicFile(path, flag) as out:
        out.file.write(data)


def write_text(path: Path | str, flag: str, text: str) -> None:
    """`text` as UTF-8 (strictly: clean what came from outside first, clean_text)."""
    write_bytes(path, flag, text.encode("utf-8"))


def clean_text(text: str) -> str:
    """`text` with every surrogate code point (which UTF-8 cannot encode) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def clean(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with clean_text applied to every string, keys
    included. Iterative: a deep value does not exhaust Python's stack. Returns the value, changed in place
    where it is a dict or a list."""
    if isinstance(value, str):
        return clean_text(value)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in list(item):
                child = item[key]
                if isinstance(child, str):
                    child = clean_text(child)
                    item[key] = child
                elif isinstance(child, (dict, list)):
                    stack.append(child)
                if isinstance(key, str) and _SURROGATE.search(key):
                    item[clean_text(key)] = item.pop(key)
        elif isinstance(item, list):
            for i, child in enumerate(item):
                if isinstance(child, str):
                    item[i] = clean_text(child)
                elif isinstance(child, (dict, list)):
                    stack.append(child)
    return value
