"""Writing a folder of files whole: what `plan --render` and `control-plane --render` leave is one
complete render, never a mix of two or the half of one.

`write_folder(directory, files, record)` writes every file into a fresh private folder beside
`directory` (`tempfile.mkdtemp`: created by us, so nothing in it is a symlink we did not create;
files are opened with O_CREAT | O_EXCL | O_NOFOLLOW and each write's byte count is checked), adds
`record` (the inventory: every file written, one per line), then renames it into place. An
existing `directory` is taken out of the way by a rename first and then deleted: two renders racing
into one folder leave the last one to finish, whole. The folder is the render's own:
- an existing `directory` that is a symlink, or not a folder, is refused;
- what it holds that the earlier render did not write (not in its inventory: the user's own files)
  is moved into the new folder as it is, so a render deletes only files a render wrote;
- on any failure (a full disk, Ctrl-C) the temporary folder is removed and `directory` is as it was.
`RenderError` carries the path and the reason; the CLI prints it as an input error (exit 1).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_ATTEMPTS = 8
"""How often a rename into place is retried while other renders keep putting their folder there."""


class RenderError(Exception):
    """A folder that cannot be written; the message names the path and why."""


def write_folder(directory: Path, files: Mapping[str, str], record: str) -> None:
    _check_target(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".new", dir=directory.parent))
    try:
        for relative, text in {**files, record: "".join(f"{name}\n" for name in files)}.items():
            target = staging / relative
            if staging not in target.parents or ".." in Path(relative).parts:
                raise RenderError(f"{relative}: a rendered path must stay inside the folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            write_file(target, text.encode())
        _carry_over(directory, staging, record)
        _move_into_place(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_file(path: Path, data: bytes) -> None:
    """Create `path` (never through a symlink, never over an existing file) holding `data`, every byte
    written and on disk before it returns."""
    try:
        fd = os.open(path, _FLAGS, 0o644)
    except OSError as error:
        raise RenderError(f"cannot create {path}: {error.strerror}") from None
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            if written <= 0:
                raise RenderError(f"cannot write {path}: the disk took no more bytes")
            view = view[written:]
        os.fsync(fd)
    except OSError as error:
        raise RenderError(f"cannot write {path}: {error.strerror}") from None
    finally:
        os.close(fd)


def _check_target(directory: Path) -> None:
    if directory.is_symlink():
        raise RenderError("it is a symlink; give the folder itself (a render never writes through a link)")
    if directory.exists() and not directory.is_dir():
        raise RenderError("it exists and is not a folder")


def _carry_over(directory: Path, staging: Path, record: str) -> None:
    """Move what an earlier render did not write (not in its inventory: the user's own files) from
    `directory` into `staging`, as it is (a symlink stays a link), unless the new render writes it."""
    if not directory.is_dir():
        return
    inventory = directory / record
    listed = set(inventory.read_text().splitlines()) | {record} if inventory.is_file() else {record}
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if (path.is_dir() and not path.is_symlink()) or str(relative) in listed:
            continue
        target = staging / relative
        if target.exists() or target.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        path.rename(target)


def _move_into_place(staging: Path, directory: Path) -> None:
    for _ in range(_ATTEMPTS):
        try:
            staging.rename(directory)
            return
        except OSError:
            if not directory.exists() or directory.is_symlink():
                raise
        # Another render's (or an earlier) folder is there: take it out of the way, then retry.
        aside = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".old", dir=directory.parent))
        try:
            directory.rename(aside / "render")
        except FileNotFoundError:  # another render moved it first
            pass
        shutil.rmtree(aside, ignore_errors=True)
    raise RenderError("other renders kept replacing it; try again")
