"""`--render` output you can trust (issue 23): whole or not at all, never through a symlink it did
not create, stale files gone, Ctrl-C and a full disk as one clear line."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from modelplane.io import atomic
from modelplane.io.atomic import RenderError, write_folder
from modelplane.cli import INTERRUPTED, RENDER_RECORD, main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def tree(directory: Path) -> dict[str, str]:
    return {p.relative_to(directory).as_posix(): p.read_text() for p in directory.rglob("*") if p.is_file()}


def render_files(tag: str, count: int) -> dict[str, str]:
    return {f"c{i % 7}/ns/obj-{tag}-{i}.yaml": f"{tag} {i}\n" * 50 for i in range(count)}


def test_racing_renders_leave_one_whole_render(tmp_path: Path) -> None:
    out = tmp_path / "out"
    a, b = render_files("a", 120), render_files("b", 90)
    for _ in range(10):
        threads = [threading.Thread(target=write_folder, args=(out, files, RENDER_RECORD)) for files in (a, b)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        found = tree(out)
        assert found in ({**a, RENDER_RECORD: "".join(f"{n}\n" for n in a)},
                         {**b, RENDER_RECORD: "".join(f"{n}\n" for n in b)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "no staging folder is left behind"


def test_a_symlink_planted_in_an_earlier_render_is_never_written_through(tmp_path: Path) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside.txt"
    outside.write_text("precious")
    write_folder(out, {"c/ns/a.yaml": "one\n"}, RENDER_RECORD)
    (out / "c/ns/a.yaml").unlink()
    (out / "c/ns/a.yaml").symlink_to(outside)
    write_folder(out, {"c/ns/a.yaml": "two\n"}, RENDER_RECORD)
    assert outside.read_text() == "precious"
    assert not (out / "c/ns/a.yaml").is_symlink() and (out / "c/ns/a.yaml").read_text() == "two\n"


def test_a_render_folder_that_is_a_symlink_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert main(["plan", str(EXAMPLES / "qwen-demo"), "--render", str(tmp_path / "link")]) == 1
    assert capsys.readouterr().err.endswith(f"--render {tmp_path / 'link'}: it is a symlink; give the folder itself "
                                            "(a render never writes through a link)\n")
    assert list(real.iterdir()) == []


def test_an_interrupted_render_leaves_the_earlier_one_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["plan", str(EXAMPLES / "multi-cloud"), "--render", str(out)]) == 0
    before = tree(out)
    written = []
    real = atomic.write_file

    def interrupted(path: Path, data: bytes) -> None:
        written.append(path)
        if len(written) == 5:
            raise KeyboardInterrupt
        real(path, data)

    monkeypatch.setattr(atomic, "write_file", interrupted)
    capsys.readouterr()
    assert main(["plan", str(EXAMPLES / "qwen-demo"), "--render", str(out)]) == INTERRUPTED == 130
    assert capsys.readouterr().err.splitlines()[-1:] == ["modelplane: interrupted"]
    assert "Traceback" not in capsys.readouterr().err
    assert tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_full_disk_is_exit_1_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    out = tmp_path / "out"
    assert main(["plan", str(EXAMPLES / "qwen-demo"), "--render", str(out)]) == 1
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith(f"--render {out}: cannot write {tmp_path}/.out.") and err.endswith(": No space left on device")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_short_write_is_retried_to_the_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real(fd, bytes(data[:3])))
    atomic.write_file(tmp_path / "f", b"0123456789")
    assert (tmp_path / "f").read_bytes() == b"0123456789"


def test_a_path_that_leaves_the_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RenderError, match="must stay inside"):
        write_folder(tmp_path / "out", {"../escape.yaml": "x"}, RENDER_RECORD)
    assert not (tmp_path / "escape.yaml").exists() and list(tmp_path.iterdir()) == []


def test_control_plane_render_is_whole_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cp"
    assert main(["control-plane", "--render", str(out)]) == 0
    listed = (out / RENDER_RECORD).read_text().splitlines()
    assert sorted(listed + [RENDER_RECORD]) == sorted(tree(out))
