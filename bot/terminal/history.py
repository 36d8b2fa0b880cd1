"""What `opsbot chat` remembers of what was typed: prompt_toolkit's history file, with every line
redacted before it is kept, in memory or on disk (a token pasted into a question is not written
down for the next person at this account to find with the up arrow).

The file is `history` in the user's data directory (platformdirs: $XDG_DATA_HOME/opsbot, else
~/.local/share/opsbot on Linux), readable by its owner only."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
from prompt_toolkit.history import FileHistory

from ...tools.redact import redact_text

HISTORY_FILE = "history"


def history_path() -> Path:
    return platformdirs.user_data_path("opsbot") / HISTORY_FILE


class RedactedHistory(FileHistory):
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Created private before prompt_toolkit first appends to it.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        super().__init__(str(path))

    def append_string(self, string: str) -> None:
        super().append_string(redact_text(string))
