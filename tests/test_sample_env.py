"""The bundled sample as `opsbot` runs on it without OPSBOT_CONFIG: a copy in the user's cache whose
logs end a few minutes ago, every line moved by one offset, the shipped templates untouched."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import textwrap
import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

import opsbot.config.sample_env as sample_env
from opsbot.config.sample_env import LEAD_S, MAX_AGE_S, prepare_sample
from opsbot.config.settings import SAMPLE_CONFIG, Settings, load_file_config
from opsbot.tools.logs.time import stamp_at

SAMPLE_DIR = SAMPLE_CONFIG.parent
ROOT = Path(__file__).resolve().parent.parent


def tool_time(line: str, now: float) -> float | None:
    """The line's time as query_logs reads it (a service without `timezone`)."""
    return stamp_at(
        line,
        0,
        SimpleNamespace(zone=None, now=now, year=datetime.fromtimestamp(now).year, declared=None, last_written=None),
    )


def tree(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under `root`: its content's digest and its mtime."""
    return {
        p.relative_to(root).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def log_lines(root: Path) -> dict[str, list[str]]:
    return {p.name: p.read_text().splitlines() for p in sorted((root / "logs").glob("*.log"))}


def test_the_copys_newest_line_is_a_few_minutes_before_now(tmp_path: Path) -> None:
    now = time.time()
    copy = prepare_sample(SAMPLE_CONFIG, "1.0", now=now, cache_home=tmp_path)

    assert copy.parent.is_relative_to(tmp_path / "opsbot" / "sample")
    times = [t for lines in log_lines(copy.parent).values() for line in lines if (t := tool_time(line, now))]
    assert now - LEAD_S - 60 < max(times) <= now - LEAD_S
    for log in (copy.parent / "logs").glob("*.log"):  # query_logs skips a file not written since `since`
        assert log.stat().st_mtime == max(t for line in log.read_text().splitlines() if (t := tool_time(line, now)))


def test_every_line_moves_by_one_offset_and_keeps_its_text(tmp_path: Path) -> None:
    now = time.time()
    copy = prepare_sample(SAMPLE_CONFIG, "1.0", now=now, cache_home=tmp_path)
    shipped, copied = log_lines(SAMPLE_DIR), log_lines(copy.parent)

    assert shipped.keys() == copied.keys() == {"auth.log", "checkout.log", "payments.log"}
    shifts = set()
    for name, lines in shipped.items():
        assert len(copied[name]) == len(lines)
        for before, after in zip(lines, copied[name], strict=True):
            assert before.split(" ", 1)[1] == after.split(" ", 1)[1]
            old, new = tool_time(before, now), tool_time(after, now)
            assert (old is None) == (new is None), (before, after)
            if old is not None and new is not None:
                shifts.add(new - old)
    # One offset for all three files: checkout's 502s and payments' pool errors stay side by side.
    assert len(shifts) == 1 and next(iter(shifts)) % 60 == 0, shifts


def test_the_rest_of_the_sample_is_copied_as_it_is(tmp_path: Path) -> None:
    copy = prepare_sample(SAMPLE_CONFIG, "1.0", cache_home=tmp_path)

    shipped, copied = tree(SAMPLE_DIR), tree(copy.parent)
    assert shipped.keys() == copied.keys()
    for name, (digest, _) in shipped.items():
        if not name.startswith("logs/"):
            assert copied[name][0] == digest, name
            assert (copy.parent / name).stat().st_nlink == 1  # read_config refuses hard-linked files


def test_the_shipped_files_are_untouched(tmp_path: Path) -> None:
    before = tree(SAMPLE_DIR)
    prepare_sample(SAMPLE_CONFIG, "1.0", cache_home=tmp_path)
    prepare_sample(SAMPLE_CONFIG, "1.0", now=time.time() + 2 * MAX_AGE_S, cache_home=tmp_path)
    assert tree(SAMPLE_DIR) == before


def test_a_read_only_package_directory_is_enough(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "config" / "sample"
    package.parent.mkdir(parents=True)
    subprocess.run(["cp", "-r", str(SAMPLE_DIR), str(package)], check=True)
    for path in [package, *package.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    before = tree(package)
    try:
        copy = prepare_sample(package / "opsbot.yaml", "1.0", cache_home=tmp_path / "cache")
        assert copy.parent.is_relative_to(tmp_path / "cache")
        assert tree(package) == before  # nothing written beside the templates (root could have)
        assert Settings.load(copy).policy.services["checkout"].logs == [copy.parent / "logs" / "checkout.log"]
    finally:
        for path in [package, *package.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def test_a_fresh_copy_is_reused_and_an_hour_old_one_rendered_again(tmp_path: Path) -> None:
    now = time.time()
    first = prepare_sample(SAMPLE_CONFIG, "1.0", now=now, cache_home=tmp_path)
    assert prepare_sample(SAMPLE_CONFIG, "1.0", now=now + MAX_AGE_S - 1, cache_home=tmp_path) == first

    later = now + MAX_AGE_S
    again = prepare_sample(SAMPLE_CONFIG, "1.0", now=later, cache_home=tmp_path)
    assert again != first and first.is_file()  # a process started on the old copy keeps its files
    times = [t for lines in log_lines(again.parent).values() for line in lines if (t := tool_time(line, later))]
    assert later - LEAD_S - 60 < max(times) <= later - LEAD_S
    # A copy rendered for a later clock (a test's, a clock set back) is not taken: its lines would be ahead.
    assert prepare_sample(SAMPLE_CONFIG, "1.0", now=now + 60, cache_home=tmp_path) == first


def test_a_changed_sample_or_version_gets_its_own_copy(tmp_path: Path) -> None:
    source = tmp_path / "sample"
    subprocess.run(["cp", "-r", str(SAMPLE_DIR), str(source)], check=True)
    first = prepare_sample(source / "opsbot.yaml", "1.0", cache_home=tmp_path / "cache")
    assert prepare_sample(source / "opsbot.yaml", "1.1", cache_home=tmp_path / "cache") != first

    with (source / "logs" / "auth.log").open("a") as log:
        log.write("2026-11-29T03:08:00Z ERROR auth a line added to the template\n")
    changed = prepare_sample(source / "opsbot.yaml", "1.0", cache_home=tmp_path / "cache")
    assert changed.parent.parent != first.parent.parent
    assert (changed.parent / "logs" / "auth.log").read_text().splitlines()[-1].endswith("added to the template")


def test_copies_a_day_old_are_removed(tmp_path: Path) -> None:
    now = time.time()
    old = prepare_sample(SAMPLE_CONFIG, "1.0", now=now, cache_home=tmp_path)
    (old.parent.parent / ".tmp-crashed").mkdir()
    os.utime(old.parent.parent / ".tmp-crashed", (now - 2 * MAX_AGE_S, now - 2 * MAX_AGE_S))
    new = prepare_sample(SAMPLE_CONFIG, "1.0", now=now + 2 * 86400, cache_home=tmp_path)

    assert new.is_file() and not old.parent.exists()
    assert sorted(p.name for p in new.parent.parent.iterdir()) == [new.parent.name]


RACE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from opsbot.config.sample_env import prepare_sample
    from opsbot.config.settings import SAMPLE_CONFIG
    start = float(sys.argv[2])
    time.sleep(max(0.0, start - time.time()))
    print(prepare_sample(SAMPLE_CONFIG, "1.0", now=start, cache_home=Path(sys.argv[1])))
    """
)


def test_processes_preparing_at_once_each_get_a_whole_copy(tmp_path: Path) -> None:
    start = time.time() + 1.5  # every process imported and waiting: they render at the same moment
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, str(tmp_path), str(start)], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    copies = {Path(racer.communicate(timeout=60)[0].strip()) for racer in racers}

    assert all(racer.returncode == 0 for racer in racers)
    shipped = log_lines(SAMPLE_DIR)
    for copy in copies:
        assert tree(copy.parent).keys() == tree(SAMPLE_DIR).keys()
        assert {name: len(lines) for name, lines in log_lines(copy.parent).items()} == {
            name: len(lines) for name, lines in shipped.items()
        }
    key_dir = next(iter(copies)).parent.parent
    assert not [p for p in key_dir.iterdir() if p.name.startswith(".")]  # no half copy left behind
    # Afterwards everyone takes the same one.
    assert len({prepare_sample(SAMPLE_CONFIG, "1.0", now=start + 1, cache_home=tmp_path) for _ in range(3)}) == 1


def test_an_unwritable_cache_falls_back_to_a_directory_of_this_users_own(tmp_path: Path, monkeypatch) -> None:
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache would be")
    monkeypatch.setattr(sample_env.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()

    copy = prepare_sample(SAMPLE_CONFIG, "1.0", cache_home=blocked)

    assert copy.parent.is_relative_to(tmp_path / "tmp" / f"opsbot-{os.getuid()}")
    assert stat.S_IMODE((tmp_path / "tmp" / f"opsbot-{os.getuid()}").stat().st_mode) == 0o700


def test_a_shared_directory_someone_else_can_write_is_not_used(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sample_env.tempfile, "tempdir", str(tmp_path / "tmp"))
    planted = tmp_path / "tmp" / f"opsbot-{os.getuid()}"
    planted.mkdir(parents=True)
    planted.chmod(0o777)
    blocked = tmp_path / "cache"
    blocked.write_text("")

    copy = prepare_sample(SAMPLE_CONFIG, "1.0", cache_home=blocked)

    assert not copy.parent.is_relative_to(planted) and copy.is_file()  # a private one for this process
    assert copy.parent.parent.parent.parent.parent.name.startswith("opsbot-sample-")


def test_nowhere_to_write_leaves_the_shipped_sample(tmp_path: Path, monkeypatch) -> None:
    def refuse(*args: object, **kwargs: object) -> str:
        raise PermissionError("read-only")

    monkeypatch.setattr(sample_env.tempfile, "mkdtemp", refuse)
    monkeypatch.setattr(sample_env.tempfile, "tempdir", str(tmp_path))
    assert prepare_sample(SAMPLE_CONFIG, "1.0", cache_home=tmp_path / "cache") == SAMPLE_CONFIG


def test_check_config_and_settings_load_the_copy(tmp_path: Path) -> None:
    copy = prepare_sample(SAMPLE_CONFIG, "1.0", cache_home=tmp_path)
    assert load_file_config(copy) == load_file_config(SAMPLE_CONFIG)
    policy = Settings.load(copy).policy
    assert policy.runbooks.keys() == Settings.load(SAMPLE_CONFIG).policy.runbooks.keys()
    assert all(Path(path).is_relative_to(copy.parent) for s in policy.services.values() for path in s.logs)

    done = subprocess.run(
        [sys.executable, "-m", "opsbot.bot", "check-config", str(copy)], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0 and "ok – 3 service(s)" in done.stdout, done.stderr


@pytest.mark.parametrize(
    "template",
    [
        "2026-11-29T03:07:53Z INFO  iso, UTC",
        "2026-11-29T03:07:53.250+01:00 INFO  iso, an offset and a fraction",
        "2026-11-29 03:07:53,123 INFO  log4j's comma, no offset (local time)",
        "2026/11/29 03:07 INFO  slashes, no seconds",
        "[2026-11-29T03:07:53Z] INFO  bracketed",
        'ts=2026-11-29T03:07:53Z level=info msg="logfmt key first"',
        '{"@timestamp": "2026-11-29T03:07:53Z", "msg": "JSON key first"}',
        "Nov 29 03:07:53 host sshd[1]: syslog",
        "Nov  9 03:07:53 host sshd[1]: syslog, a one-digit day",
        "<34>Nov 29 03:07:53 host su: syslog with PRI",
    ],
)
def test_each_stamp_style_is_moved_as_query_logs_reads_it(template: str) -> None:
    now = time.time()
    older = template.replace("03:07", "02:57")  # ten minutes earlier
    text, newest = sample_env._redate(f"{older}\n  a continuation line\n{template}\n", 3 * 86400, now)
    first, continuation, last = text.splitlines()

    assert continuation == "  a continuation line"
    old_first, old_last = tool_time(older, now + 4 * 86400), tool_time(template, now + 4 * 86400)
    new_first, new_last = tool_time(first, now + 4 * 86400), tool_time(last, now + 4 * 86400)
    assert None not in (old_first, old_last, new_first, new_last), text
    assert new_last - new_first == old_last - old_first == 600  # type: ignore[operator]
    assert new_last - old_last == 3 * 86400  # type: ignore[operator]
    assert newest == new_last
    assert len(last) == len(template) and last[-12:] == template[-12:]  # written in the same style


def test_a_date_inside_a_message_is_not_moved() -> None:
    line = "2026-11-29T03:07:53Z WARN  checkout-api certificate expires 2027-01-01T00:00:00Z\n"
    text, _ = sample_env._redate(line, 86400, time.time())
    assert text == "2026-11-30T03:07:53Z WARN  checkout-api certificate expires 2027-01-01T00:00:00Z\n"
