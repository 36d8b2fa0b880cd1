"""Config roots the model may read: a directory (optionally narrowed by globs) or a single file.

Inside a root some names are never read, whatever the globs say: private keys, certificates
and keystores and their backup copies, SSH and GnuPG homes, dotenv and direnv files, password
files (netrc, pgpass, htpasswd), git, Vault, package-index and Terraform credentials, the
credential stores of the AWS, Google Cloud, Azure, Oracle Cloud and Databricks CLIs, s3cmd and
boto, kubeconfigs and Docker registry auths. Names are matched case-insensitively against every
name on the way, so a directory refused hides everything below it. A root may exempt names from
the built-in patterns (`allow: [".env"]`) or add patterns of its own (`never_read`).

Left readable on purpose, because they are mostly settings people need and redaction masks the
secrets among them: `.npmrc` (`_authToken`, `_password`), a directory or file an application calls
`credentials` or `credentials.json` (too common a name to refuse), a kubeconfig-shaped YAML under
another name (`token`, `client-key-data`, `password`).

A regular file with more than one hard link is not read unless the root says `allow_hardlinks`:
a hard link is the same file under a second name, so one inside a root can be a file from
anywhere on the same filesystem, and no path check can tell.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from pydantic import Field, field_validator

from .base import Access, Strict, absolute

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
    # Files that are nothing but credentials, often in forms redaction cannot read as `key = value`.
    ".netrc",  # curl, ftp, git over HTTP: `machine h login u password p`
    "_netrc",  # the same file on Windows
    ".pgpass",  # PostgreSQL: `host:port:db:user:password`
    "pgpass.conf",  # the same file on Windows (%APPDATA%\postgresql)
    ".htpasswd",
    ".git-credentials",  # git's store helper: URLs with the password in them
    ".git-credential-cache",  # git's cache helper's directory: its socket hands out cached passwords
    ".vault-token",  # the Vault CLI's token, bare
    # Homes of key material.
    ".ssh",
    ".gnupg",
    # Cloud CLIs' credential stores: access keys, refresh tokens, cached access tokens.
    ".aws",  # credentials, config with keys
    "gcloud",  # ~/.config/gcloud: the credential databases, ADC and per-account keys below
    "application_default_credentials.json",  # gcloud ADC, often copied or mounted elsewhere
    "credentials.db",  # gcloud's refresh tokens (SQLite)
    "access_tokens.db",  # gcloud's cached access tokens (SQLite)
    "legacy_credentials",  # gcloud's per-account credentials for older tools
    ".azure",  # the Azure CLI's home
    "accessTokens.json",  # older Azure CLI: its token cache
    "msal_token_cache.json",  # Azure CLI (MSAL): token cache
    "msal_token_cache.bin",  # the same on Windows
    "service_principal_entries.json",  # Azure CLI: service principal secrets
    ".oci",  # Oracle Cloud CLI: config and API signing keys
    ".databrickscfg",  # Databricks CLI: personal access tokens
    ".boto",  # gsutil and boto: cloud storage keys
    ".s3cfg",  # s3cmd: access and secret keys
    # Package registries and infrastructure tools.
    ".pypirc",  # PyPI upload passwords and tokens
    "credentials.tfrc.json",  # Terraform Cloud tokens (`terraform login`)
    ".terraformrc",  # Terraform CLI config: `credentials` blocks with tokens
    "terraform.rc",  # the same file on Windows
    ".kube",  # kubeconfigs: cluster credentials
    "kubeconfig",
    "*.kubeconfig",
    ".docker",  # config.json holds registry auths
    ".dockercfg",  # Docker's older registry auths file
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
    allow_hardlinks: bool = Field(
        default=False,
        description="read regular files that have more than one hard link; off because a hard link can make a "
        "file outside the root appear inside it, and Kubernetes and most package managers do not create them "
        "for config files",
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
