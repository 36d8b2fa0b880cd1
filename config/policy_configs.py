"""Config roots the model may read: a directory (optionally narrowed by globs) or a single file.

Inside a root some names are never read, whatever the globs say: private keys, certificates
and keystores and their backup copies, SSH identities, dotenv and direnv files, cloud, Kubernetes
and Docker credentials. A root may exempt names from the built-in patterns
(`allow: [".env"]`) or add patterns of its own (`never_read`).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from pydantic import Field, field_validator

from config.policy_base import Access, Strict, absolute

# Key material, whose copies (`tls.key.bak`, `tls.key~`, `tls.pem.old`) are as secret as the original.
_KEY_SUFFIXES = ("pem", "key", "p12", "pfx", "jks", "keystore", "ppk", "gpg", "kdbx")
_BACKUP_SUFFIXES = (".bak", ".old", ".orig", ".save", ".backup", "~")

# Matched case-insensitively against every name on the way to a file: `.ssh/config` is refused
# because of `.ssh`, `TLS.KEY` because of `*.key`, `.aws/credentials` because of `.aws`.
NEVER_READ: tuple[str, ...] = (
    *(f"*.{suffix}" for suffix in _KEY_SUFFIXES),
    *(f"*.{suffix}{backup}" for suffix in _KEY_SUFFIXES for backup in _BACKUP_SUFFIXES),
    "id_*",
    ".env",
    ".env.*",
    ".env~",
    "*.env",
    ".envrc",  # direnv: exported secrets
    ".netrc",
    ".pgpass",
    ".htpasswd",
    ".git-credentials",
    ".ssh",
    ".gnupg",
    ".aws",  # credentials, config with keys
    ".kube",  # kubeconfigs: cluster credentials
    "kubeconfig",
    "*.kubeconfig",
    ".docker",  # config.json holds registry auths
)


class ConfigRoot(Strict):
    description: str = ""
    path: Path = Field(description="a directory, or a single file")
    include: tuple[str, ...] = Field(
        default=(),
        description="globs of the files a directory root shares (none: all); a glob without / matches "
        "the file name at any depth, one with / the path relative to the root",
    )
    never_read: tuple[str, ...] = Field(default=(), description="more name patterns never read in this root")
    allow: tuple[str, ...] = Field(
        default=(), description="name patterns exempt from the built-in never-read patterns, e.g. .env"
    )
    follow_symlinks: bool = Field(
        default=False,
        description="follow symbolic links whose targets stay inside the root (e.g. Kubernetes ConfigMap "
        "mounts); links out of the root are refused either way",
    )
    max_bytes: int = Field(default=256_000, gt=0, le=10_000_000)
    access: Access = Field(default_factory=Access)

    @field_validator("include")
    @classmethod
    def _relative_globs(cls, globs: tuple[str, ...]) -> tuple[str, ...]:
        for glob in globs:
            if not glob or glob.startswith("/") or ".." in PurePosixPath(glob).parts or "\x00" in glob:
                raise ValueError(f"include glob {glob!r} must be relative to the root, without '..'")
        return globs

    @field_validator("never_read", "allow")
    @classmethod
    def _name_patterns(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in patterns:
            if not pattern or "/" in pattern:
                raise ValueError(f"pattern {pattern!r} must match one name, without '/'")
        return patterns

    def refusing(self, name: str) -> str | None:
        """The never-read pattern `name` matches, if any."""
        lowered = name.lower()
        exempt = any(fnmatchcase(lowered, p.lower()) for p in self.allow)
        in_force = (() if exempt else NEVER_READ) + self.never_read
        return next((p for p in in_force if fnmatchcase(lowered, p.lower())), None)

    def includes(self, relative: str) -> bool:
        """Whether a directory root shares the file at `relative` (a path below the root, with /)."""
        if not self.include:
            return True
        name = relative.rsplit("/", 1)[-1]
        return any(fnmatchcase(relative if "/" in g else name, g) for g in self.include)

    def resolved(self, base: Path) -> ConfigRoot:
        return self.model_copy(update={"path": absolute(self.path, base)})


# Every root was a single file once; the policy and callers still know this name.
ConfigFile = ConfigRoot
