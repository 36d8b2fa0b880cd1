"""What every part of the policy shares: strict models, names, paths, and who is asking."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

# Names are what the model and Slack users type: short, lower-case, no spaces.
NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,62}$"
NAME_RULE = "a name in lower case: letters, digits, '.', '_' and '-', starting with a letter or digit"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]


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

    def same_person(self, other: Principal | None) -> bool:
        """Whether `other` is this person. A user id names one person on its platform; the team id
        in a payload depends on where it was built (Enterprise Grid, Slack Connect), so it must not
        tell one person apart from themselves."""
        return other is not None and (self.platform, self.user) == (other.platform, other.user)


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

    def describe(self) -> str:
        """Who is allowed, for people: "anyone", or each kind of rule."""
        parts = []
        if self.users:
            parts.append(f"users {_ids(self.users)}")
        if self.groups:
            parts.append(f"members of {_ids(self.groups)}")
        if self.channels:
            parts.append(f"in channels {_ids(self.channels)}")
        return " and ".join(parts) or "anyone"

    def missing(self, principal: Principal | None) -> list[str]:
        """What `principal` lacks to be allowed, one phrase per kind of rule (empty when allowed)."""
        if self.allows(principal):
            return []
        if principal is None:
            return ["it needs a known user, and nobody in particular is asking"]
        missing: list[str] = []
        if self.users and principal.user not in self.users:
            missing.append(f"user {principal.user} is not one of {_ids(self.users)}")
        if self.groups and not principal.groups & self.groups:
            missing.append(f"it needs membership of a group among {_ids(self.groups)}")
        if self.channels and principal.channel not in self.channels:
            missing.append(f"it must be asked in a channel among {_ids(self.channels)}")
        return missing


def _ids(values: frozenset[str]) -> str:
    return ", ".join(sorted(values))
