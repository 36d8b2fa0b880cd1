"""read_config against a corpus of ways out of a config root: none gets out.

Every case plants a secret outside the root (and in a sibling directory whose name shares the
root's prefix) and asserts the secret never appears in the result, nor the outside path, and
that the result is `denied` or `not_found`. Each case runs against a root that refuses every
symbolic link and against one that follows links staying inside it.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opsbot.config.policy import ConfigRoot, Policy
from opsbot.tools.base import Registry, ToolResult
from opsbot.tools.catalog import ops_tools
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall

SECRET = f"TOP-SECRET-{uuid.uuid4().hex}"


@dataclass(frozen=True)
class Env:
    base: Path
    root: Path
    outside: Path
    executor: Executor


def build(base: Path) -> Env:
    """A root with inside files and every kind of trap, a secret outside it and in a sibling."""
    outside, root, sibling = base / "outside", base / "etc" / "app", base / "etc" / "app2"
    for directory in (outside, root / "sub", sibling):
        directory.mkdir(parents=True)
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / "secret.yaml").write_text(f"password: {SECRET}\n")
    (sibling / "secret.yaml").write_text(f"token: {SECRET}\n")
    (base / "etc" / "single.yaml").write_text("ok: true\n")
    (root / "app.yaml").write_text("db:\n  host: inside-host\n")
    (root / "sub" / "inner.yaml").write_text("inner: true\n")
    (root / "link_out_file").symlink_to("../../outside/secret.txt")
    (root / "link_abs").symlink_to(outside / "secret.txt")
    (root / "link_dir").symlink_to("../../outside")
    (root / "link_dir_abs").symlink_to(outside)
    (root / "sub" / "link_up").symlink_to("../..")
    (root / "link_sibling").symlink_to("../app2/secret.yaml")
    (root / "proc_root").symlink_to("/proc/self/root")
    (root / "environ").symlink_to("/proc/self/environ")
    (root / "zero").symlink_to("/dev/zero")
    (root / "chain1").symlink_to("chain2")
    (root / "chain2").symlink_to("link_out_file")
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    os.mkfifo(root / "fifo")
    os.mkfifo(root / "sub" / "fifo.yaml")
    # A hard link is the outside file itself under a name inside the root: no path shows it.
    os.link(outside / "secret.yaml", root / "hard.yaml")
    (root / "via_hard").symlink_to("hard.yaml")
    policy = Policy(
        config_files={
            "app": ConfigRoot(path=root),
            "follow": ConfigRoot(path=root, follow_symlinks=True),
            "single": ConfigRoot(path=base / "etc" / "single.yaml"),
            "single-follow": ConfigRoot(path=base / "etc" / "single.yaml", follow_symlinks=True),
        }
    )
    executor = Executor(Registry(ops_tools(policy)), RetryPolicy(timeout_s=5, retries=0))
    return Env(base, root, outside, executor)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    return build(tmp_path_factory.mktemp("traversal"))


def read(env: Env, root: str, path: str | None = None, key: str | None = None) -> ToolResult:
    arguments: dict[str, Any] = {"name": root}
    if path is not None:
        arguments["path"] = path
    if key is not None:
        arguments["key"] = key
    return env.executor.run_one(ToolCall("t", "read_config", json.dumps(arguments))).result


def assert_contained(
    env: Env, result: ToolResult, asked: str = "", allowed: tuple[str, ...] = ("denied", "not_found")
) -> None:
    """Nothing of outside the root shows: not the secret, and no outside path the request did not
    itself name (where a link points is never said)."""
    rendered = result.render()
    assert SECRET not in rendered, rendered
    for place in (str(env.outside), str(env.base / "etc" / "app2"), "/proc/self", "/dev/zero"):
        assert place in asked or place not in rendered, rendered
    assert result.status in allowed, rendered


# Paths a model, or text pretending to instruct it, might send. `{outside}` and `{base}` are
# filled with the real absolute places.
CORPUS = [
    # `..` in many spellings
    "..",
    "../",
    "../outside/secret.txt",
    "../../outside/secret.txt",
    "../../../../../../../../etc/passwd",
    "sub/../../outside/secret.txt",
    "sub/../../../outside/secret.txt",
    "./../outside/secret.txt",
    "sub/./../..",
    "app.yaml/../../outside/secret.txt",
    "..//..//outside//secret.txt",
    "sub/..",
    "....//....//outside/secret.txt",
    "..;/outside/secret.txt",
    ". ./outside/secret.txt",
    "../app2/secret.yaml",
    # absolute and home paths
    "/etc/passwd",
    "{outside}/secret.txt",
    "{base}/etc/app2/secret.yaml",
    "{base}/etc/app/../../outside/secret.txt",
    "//etc/passwd",
    "/proc/self/environ",
    "/proc/self/root/etc/passwd",
    "/proc/self/cwd/README.md",
    "/proc/1/environ",
    "/dev/zero",
    "~/.ssh/id_rsa",
    "~root/.bashrc",
    # sibling-prefix directories
    "app2/secret.yaml",
    "../app2",
    # URL-encoded, double-encoded and overlong UTF-8
    "%2e%2e%2foutside%2fsecret.txt",
    "%2e%2e/outside/secret.txt",
    "..%2foutside%2fsecret.txt",
    "%2E%2E%2F%2E%2E%2Foutside%2Fsecret.txt",
    "%252e%252e%252foutside%252fsecret.txt",
    "%2fetc%2fpasswd",
    "%c0%ae%c0%ae/outside/secret.txt",
    "%c0%ae%c0%ae%c0%afoutside%c0%afsecret.txt",
    "..%c0%afoutside%c0%afsecret.txt",
    "%e0%80%ae%e0%80%ae/outside/secret.txt",
    "%uff0e%uff0e/outside/secret.txt",
    # unicode look-alikes
    "\uff0e\uff0e/outside/secret.txt",
    "\uff0e\uff0e\uff0foutside\uff0fsecret.txt",
    "\u2024\u2024/outside/secret.txt",
    "\u2025/outside/secret.txt",
    "\ufe52\ufe52/outside/secret.txt",
    "\uff0fetc\uff0fpasswd",
    "..\u2215outside\u2215secret.txt",
    "..\u200b/outside/secret.txt",
    "\u0085../outside/secret.txt",
    # NUL and other control characters
    "app.yaml\x00../../outside/secret.txt",
    "\x00../outside/secret.txt",
    "app.yaml\n../../outside/secret.txt",
    "sub\r/../../outside",
    "..\t/outside/secret.txt",
    # very long paths
    "a/" * 2000,
    "x" * 5000,
    "../" * 500 + "outside/secret.txt",
    "x" * 300,
    "sub/" + "y" * 300 + "/secret.txt",
    # Windows separators and names
    "..\\outside\\secret.txt",
    "sub\\..\\..\\outside\\secret.txt",
    "..\\/outside/secret.txt",
    "C:\\Windows\\win.ini",
    "\\\\server\\share\\secret.txt",
    "C:/Windows/win.ini",
    # symbolic links inside the root pointing out
    "link_out_file",
    "link_abs",
    "link_dir",
    "link_dir/secret.txt",
    "link_dir_abs/secret.txt",
    "sub/link_up/outside/secret.txt",
    "sub/link_up",
    "link_sibling",
    "proc_root/etc/passwd",
    "proc_root",
    "environ",
    "zero",
    "chain1",
    "loop1",
    # hard links to a file outside, by name and through a link inside the root
    "hard.yaml",
    "via_hard",
    # special files and /proc-looking names inside the root
    "fifo",
    "sub/fifo.yaml",
    "proc/self/environ",
    "proc/self/root/etc/passwd",
]


def fill(env: Env, path: str) -> str:
    return path.replace("{outside}", str(env.outside)).replace("{base}", str(env.base))


def case_id(path: str) -> str:
    return repr(path[:40]) + (f"..({len(path)})" if len(path) > 40 else "")


def test_the_corpus_is_a_corpus() -> None:
    assert len(CORPUS) >= 50 and len(set(CORPUS)) == len(CORPUS)


@pytest.mark.parametrize("root", ["app", "follow"])
@pytest.mark.parametrize("path", CORPUS, ids=case_id)
def test_no_path_leaves_a_directory_root(env: Env, root: str, path: str) -> None:
    begun = time.monotonic()
    result = read(env, root, fill(env, path))
    assert time.monotonic() - begun < 2, "a FIFO or device must not make a read wait"
    assert_contained(env, result, fill(env, path))


@pytest.mark.parametrize("root", ["app", "follow"])
@pytest.mark.parametrize("path", CORPUS, ids=case_id)
def test_no_path_with_a_key_leaves_a_directory_root(env: Env, root: str, path: str) -> None:
    assert_contained(env, read(env, root, fill(env, path), key="password"), fill(env, path))


@pytest.mark.parametrize("root", ["single", "single-follow"])
@pytest.mark.parametrize("path", CORPUS[:30], ids=case_id)
def test_no_path_leaves_a_single_file_root(env: Env, root: str, path: str) -> None:
    assert_contained(env, read(env, root, fill(env, path)), fill(env, path))


@pytest.mark.parametrize("path", ["link_out_file", "link_abs", "link_dir/secret.txt", "chain1", "environ", "zero"])
def test_links_are_refused_as_links(env: Env, path: str) -> None:
    for root in ("app", "follow"):
        result = read(env, root, path)
        assert result.status == "denied", result
        assert "symbolic link" in result.error.message  # type: ignore[union-attr]


def test_a_link_loop_ends(env: Env) -> None:
    result = read(env, "follow", "loop1")
    assert result.status == "denied" and "too many levels" in result.error.message  # type: ignore[union-attr]


def test_a_listing_never_shows_what_is_outside(env: Env) -> None:
    for root in ("app", "follow"):
        result = read(env, root)
        assert result.ok
        assert set(result.data["files"]) == {"app.yaml", "sub/inner.yaml"}, result.data
        assert "link_out_file" in result.data["withheld"] and "fifo" in result.data["withheld"]
        assert "hard link" in result.data["withheld"]["hard.yaml"]
        assert_contained(env, result, allowed=("ok",))
    assert "hard link" in read(env, "follow").data["withheld"]["via_hard"]


@pytest.mark.parametrize("path", ["hard.yaml", "via_hard"])
def test_a_hard_link_to_a_file_outside_is_refused_about_the_path_asked_for(env: Env, path: str) -> None:
    for key in (None, "password"):
        result = read(env, "follow", path, key=key)
        assert_contained(env, result, allowed=("denied",))
        assert result.error is not None
        assert f"{path!r} in config root 'follow'" in result.error.message
        assert "more than one hard link" in result.error.message
        assert "set `allow_hardlinks: true` for config root 'follow'" in result.error.hint
        assert "secret.yaml" not in result.render(), "where the other name is stays unsaid"


# ---------------------------------------------------------------- races


@pytest.fixture
def fresh(tmp_path: Path) -> Env:
    return build(tmp_path)


def test_a_file_swapped_for_a_link_between_listing_and_reading_is_refused(fresh: Env) -> None:
    assert "app.yaml" in read(fresh, "app").data["files"]
    (fresh.root / "app.yaml").unlink()
    (fresh.root / "app.yaml").symlink_to(fresh.outside / "secret.yaml")

    for root in ("app", "follow"):
        result = read(fresh, root, "app.yaml", key="password")
        assert result.status == "denied", result
        assert_contained(fresh, result)


def test_a_directory_swapped_for_a_link_between_listing_and_reading_is_refused(fresh: Env) -> None:
    assert "sub/inner.yaml" in read(fresh, "app").data["files"]
    (fresh.root / "sub").rename(fresh.base / "old-sub")
    (fresh.outside / "inner.yaml").write_text(f"inner: {SECRET}\n")
    (fresh.root / "sub").symlink_to(fresh.outside)

    for root in ("app", "follow"):
        assert_contained(fresh, read(fresh, root, "sub/inner.yaml"))


def swap_when_opened(monkeypatch: pytest.MonkeyPatch, name: str, swap: Callable[[], None]) -> None:
    """Make the swap happen inside the tool, after it looked at `name` and before it opens it:
    the window a check-then-open implementation loses."""
    real_open = os.open

    def racing_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if path == name and dir_fd is not None:
            swap()
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", racing_open)


def test_a_file_swapped_for_a_link_after_it_was_checked_is_refused(fresh: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    def swap() -> None:
        (fresh.root / "app.yaml").unlink()
        (fresh.root / "app.yaml").symlink_to(fresh.outside / "secret.txt")

    swap_when_opened(monkeypatch, "app.yaml", swap)
    result = read(fresh, "app", "app.yaml")
    assert result.status == "denied" and "symbolic link" in result.error.message  # type: ignore[union-attr]
    assert_contained(fresh, result)


def test_a_directory_swapped_for_a_link_after_it_was_checked_is_refused(
    fresh: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    (fresh.outside / "inner.yaml").write_text(f"inner: {SECRET}\n")

    def swap() -> None:
        (fresh.root / "sub").rename(fresh.base / "old-sub")
        (fresh.root / "sub").symlink_to(fresh.outside)

    swap_when_opened(monkeypatch, "sub", swap)
    result = read(fresh, "app", "sub/inner.yaml")
    assert result.status == "denied" and "symbolic link" in result.error.message  # type: ignore[union-attr]
    assert_contained(fresh, result)


def test_a_file_swapped_for_a_fifo_after_it_was_checked_is_refused(fresh: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    def swap() -> None:
        (fresh.root / "app.yaml").unlink()
        os.mkfifo(fresh.root / "app.yaml")

    swap_when_opened(monkeypatch, "app.yaml", swap)
    begun = time.monotonic()
    result = read(fresh, "app", "app.yaml")
    assert time.monotonic() - begun < 2
    assert result.status == "denied", result


def test_a_file_replaced_after_it_was_checked_is_refused(fresh: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    def swap() -> None:
        # Renamed, not deleted: a deleted file's inode number may be handed straight to its successor.
        (fresh.root / "app.yaml").rename(fresh.base / "old-app.yaml")
        (fresh.root / "app.yaml").write_text("swapped: true\n")

    swap_when_opened(monkeypatch, "app.yaml", swap)
    result = read(fresh, "app", "app.yaml")
    assert result.status == "denied" and "changed" in result.error.message  # type: ignore[union-attr]


def test_a_hard_link_made_after_the_file_was_checked_is_refused(fresh: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The link count that counts is the one of the file opened: a check by name alone would have
    seen one link and read the file."""
    swap_when_opened(monkeypatch, "app.yaml", lambda: os.link(fresh.root / "app.yaml", fresh.outside / "alias.yaml"))
    result = read(fresh, "app", "app.yaml")
    assert result.status == "denied" and "more than one hard link" in result.error.message  # type: ignore[union-attr]
    assert "alias" not in result.render()


# ---------------------------------------------------------------- control characters


@pytest.mark.parametrize("code", [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)], ids=lambda c: f"U+{c:04X}")
def test_a_path_with_a_control_character_is_refused_and_names_it(env: Env, code: int) -> None:
    result = read(env, "app", f"sub{chr(code)}/inner.yaml")
    assert result.status == "denied", result
    assert f"control character (U+{code:04X})" in result.error.message  # type: ignore[union-attr]


# ---------------------------------------------------------------- fuzzing


ALPHABET = st.sampled_from(
    ["..", ".", "/", "//", "\\", "%2e", "%2f", "\uff0e", "\u2024", "\uff0f", "~", "\x00", "sub", "app.yaml"]
    + ["inner.yaml", "outside", "secret.txt", "link_dir", "link_up", "link_out_file", "proc_root", "chain1", "etc"]
)


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(ALPHABET, max_size=10), root=st.sampled_from(["app", "follow"]))
def test_no_generated_path_leaves_the_root(env: Env, pieces: list[str], root: str) -> None:
    path = "".join(pieces)
    assert_contained(env, read(env, root, path), path, allowed=("ok", "denied", "not_found", "failed"))
