"""What every part of the policy shares: strict models, names, paths, and who is asking."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

# Names are what the model and Slack users type: short, lower-case, no spaces.
Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]{0,62}$")]


class Strict(BaseModel):
    """Unknown keys are errors: a typo in policy must not silently widen or narrow it."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def absolute(path: Path, base: Path) -> Path:
    """`path` made absolute against the directory of the YAML file that declared it."""
    return path if path.is_absolute() else (base / path).resolve()


class Principal(Strict):
    """Who is asking. Policy decisions use ids, never display names."""

    platform: str = Field(description="slack, cli, webhook, ...")
    user: str = Field(description="the platform's user id, e.g. U024BE7LH, or the OS user for the CLI")
    team: str | None = None
    channel: str | None = None
    groups: frozenset[str] = frozenset()


class Access(Strict):
    """Who may use something. Empty lists mean no restriction of that kind; all given kinds must match."""

    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    channels: frozenset[str] = frozenset()

    def allows(self, principal: Principal | None) -> bool:
        if not (self.users or self.groups or self.channels):
            return True
        if principal is None:
            return False
        return (
            (not self.users or principal.user in self.users)
            and (not self.groups or bool(principal.groups & self.groups))
            and (not self.channels or principal.channel in self.channels)
        )
