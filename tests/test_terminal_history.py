"""The chat's history file keeps no secret: every kind of the secret corpus (tests/corpus/secrets.py,
shapes from gitleaks' rules and vendors' documentation), typed or pasted at the prompt, is
redacted before it is kept in memory or written; the file is its owner's alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from opsbot.bot.terminal.history import RedactedHistory, history_path
from tests.corpus.secrets import KINDS, SecretKind, leaks


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.id)
def test_no_secret_reaches_the_history(tmp_path: Path, kind: SecretKind) -> None:
    path = tmp_path / "opsbot" / "history"
    history = RedactedHistory(path)
    history.append_string(f"why does this fail: {kind.line}")

    assert not leaks(kind.secret, path.read_text())
    assert not leaks(kind.secret, "\n".join(history.get_strings()))
    again = RedactedHistory(path)  # the next chat, reading the file
    assert not leaks(kind.secret, "\n".join(again.load_history_strings()))


def test_the_file_and_its_directory_are_private(tmp_path: Path) -> None:
    path = tmp_path / "data" / "opsbot" / "history"
    RedactedHistory(path).append_string("services")
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert "+services" in path.read_text()


def test_it_lives_in_the_users_data_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert history_path() == tmp_path / "opsbot" / "history"
