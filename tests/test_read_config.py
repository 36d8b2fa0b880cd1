"""read_config: formats, key paths, listings, caps, never-read patterns, access, links inside roots."""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from opsbot.bot.commands import NotACommand, parse_command
from opsbot.config.policy import NEVER_READ, Access, ConfigRoot, Policy, Principal
from opsbot.config.settings import SAMPLE_CONFIG, Settings
from opsbot.tools.base import Registry, ToolResult
from opsbot.tools.catalog import ops_tools
from opsbot.tools.configs.confined import LIST_FILES
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall

ONCALL = Principal(platform="slack", user="U1", groups=frozenset({"oncall"}))
VISITOR = Principal(platform="slack", user="U2")


def executor(**roots: ConfigRoot) -> Executor:
    return Executor(Registry(ops_tools(Policy(config_files=roots))), RetryPolicy(timeout_s=5, retries=0))


def read(
    ex: Executor, name: str, path: str | None = None, key: str | None = None, who: Principal | None = None
) -> ToolResult:
    arguments: dict[str, Any] = {"name": name}
    if path is not None:
        arguments["path"] = path
    if key is not None:
        arguments["key"] = key
    return ex.run_one(ToolCall("t", "read_config", json.dumps(arguments)), who).result


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    root = tmp_path / "conf"
    write(root / "app.yaml", "db:\n  primary:\n    host: pg-1\n    port: 5432\nservers:\n  - name: a\n  - name: b\n")
    write(root / "app.json", '{"db": {"primary": {"host": "pg-1", "port": 5432}}}')
    write(root / "app.toml", '[db.primary]\nhost = "pg-1"\nport = 5432\nstarted = 2026-11-29T10:00:00Z\n')
    write(root / "app.ini", "[db]\nHost = pg-1\nport = 5432\n\n[cache]\nttl = 30\n")
    write(root / "legacy.cfg", "[main]\nworkers = 4\n")
    write(root / "app.properties", "db.primary.host=pg-1\ndb.primary.port : 5432\nlong = one \\\n  two\n# comment\n")
    write(root / "app.env", "export DB_HOST=pg-1\nDB_PORT='5432'\n# comment\nLOG_LEVEL=info # inline\n")
    write(root / "flat.yaml", "spring.datasource.url: jdbc:pg://pg-1/app\nspring:\n  profiles: prod\n")
    write(root / "multi.yaml", "a: 1\n---\nb: 2\n")
    write(root / "settings", '{"sniffed": {"as": "json"}}')
    write(root / "nginx.conf", "server { listen 80; }\n")
    write(root / "conf.d" / "10-limits.conf", "[limits]\nrps: 100\n")
    write(root / "tls" / "server.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    write(root / "tls" / "server.KEY", "not for you\n")
    write(root / "id_rsa", "not for you\n")
    write(root / ".env", "SECRET=dotenv-value\n")
    write(root / ".env.local", "SECRET=dotenv-local-value\n")
    write(root / ".ssh" / "config", "Host *\n")
    write(root / ".git" / "HEAD", "ref: refs/heads/main\n")
    return root


@pytest.fixture
def ops(conf: Path) -> Executor:
    return executor(conf=ConfigRoot(path=conf), single=ConfigRoot(path=conf / "app.yaml"))


# ---------------------------------------------------------------- formats and key paths


@pytest.mark.parametrize(
    ("path", "key", "value", "kind"),
    [
        ("app.yaml", "db.primary.host", "pg-1", "yaml"),
        ("app.yaml", "db.primary", {"host": "pg-1", "port": 5432}, "yaml"),
        ("app.yaml", "servers.1.name", "b", "yaml"),
        ("app.json", "db.primary.port", 5432, "json"),
        ("app.toml", "db.primary.host", "pg-1", "toml"),
        ("app.toml", "db.primary.started", "2026-11-29T10:00:00+00:00", "toml"),
        ("app.ini", "db.Host", "pg-1", "ini"),
        ("app.ini", "cache.ttl", "30", "ini"),
        ("legacy.cfg", "main.workers", "4", "ini"),
        ("app.properties", "db.primary.host", "pg-1", "properties"),
        ("app.properties", "db.primary.port", "5432", "properties"),
        ("app.properties", "long", "one two", "properties"),
        ("app.env", "DB_HOST", "pg-1", "env"),
        ("app.env", "DB_PORT", "5432", "env"),
        ("app.env", "LOG_LEVEL", "info", "env"),
        ("flat.yaml", "spring.datasource.url", "jdbc:pg://pg-1/app", "yaml"),
        ("flat.yaml", "spring.profiles", "prod", "yaml"),
        ("multi.yaml", "1.b", 2, "yaml"),
        ("settings", "sniffed.as", "json", "json"),
        ("conf.d/10-limits.conf", "limits.rps", "100", "ini"),
    ],
)
def test_a_key_path_returns_just_that_value(conf: Path, path: str, key: str, value: Any, kind: str) -> None:
    # .env files are never read unless the root allows them; this root does.
    ex = executor(conf=ConfigRoot(path=conf, allow=("*.env",)))
    result = read(ex, "conf", path, key)
    assert result.ok, result
    assert result.data["value"] == value
    assert result.data["format"] == kind and result.data["key"] == key and result.data["path"] == path


@pytest.mark.parametrize(
    ("path", "kind"),
    [("app.yaml", "yaml"), ("app.json", "json"), ("app.toml", "toml"), ("app.ini", "ini"), ("settings", "json")]
    + [("nginx.conf", "text"), ("app.properties", "properties")],
)
def test_a_whole_file_comes_back_as_written_with_its_format(ops: Executor, conf: Path, path: str, kind: str) -> None:
    result = read(ops, "conf", path)
    assert result.ok and result.data["content"] == (conf / path).read_text()
    assert result.data["format"] == kind


def test_a_missing_key_names_the_keys_at_the_level_where_it_stopped(ops: Executor) -> None:
    result = read(ops, "conf", "app.yaml", "db.primary.user")
    assert result.status == "not_found"
    assert "'user'" in result.error.message  # type: ignore[union-attr]
    assert result.error.hint == "keys at that level: host, port"  # type: ignore[union-attr]


def test_a_list_index_out_of_range_says_the_range(ops: Executor) -> None:
    result = read(ops, "conf", "app.yaml", "servers.5.name")
    assert result.status == "not_found" and "0..1" in result.error.hint  # type: ignore[union-attr]


def test_a_key_in_a_file_of_no_known_format_says_so(ops: Executor) -> None:
    result = read(ops, "conf", "nginx.conf", "server")
    assert result.status == "failed" and "could not be parsed" in result.error.message  # type: ignore[union-attr]


def test_a_broken_file_is_reported_not_raised(conf: Path) -> None:
    write(conf / "broken.json", '{"a": ')
    result = read(executor(conf=ConfigRoot(path=conf)), "conf", "broken.json", "a")
    assert result.status == "failed" and "read it whole" in result.error.hint  # type: ignore[union-attr]


def test_a_yaml_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, 9)]
    write(tmp_path / "bomb.yaml", "\n".join(lines) + "\n")
    begun = time.monotonic()
    result = read(executor(c=ConfigRoot(path=tmp_path)), "c", "bomb.yaml", "a8")
    assert time.monotonic() - begun < 3
    assert result.status == "failed" and "too large" in result.error.message  # type: ignore[union-attr]


def test_deep_nesting_is_refused_not_crashed(tmp_path: Path) -> None:
    write(tmp_path / "deep.json", "[" * 5000 + "]" * 5000)
    result = read(executor(c=ConfigRoot(path=tmp_path)), "c", "deep.json", "0")
    assert result.status == "failed"


def test_a_binary_file_is_not_shown(tmp_path: Path) -> None:
    (tmp_path / "blob.yaml").write_bytes(b"\x00\x01\x02" * 10)
    result = read(executor(c=ConfigRoot(path=tmp_path)), "c", "blob.yaml")
    assert result.status == "failed" and "not a text file" in result.error.message  # type: ignore[union-attr]


def test_a_secret_looked_up_by_key_is_redacted(tmp_path: Path) -> None:
    write(
        tmp_path / "db.yaml",
        "db:\n  user: app\n  password: hunter2-not-shown\n  pool: 5\n  url: postgres://app:pa55-not-shown@pg-1/app\n",
    )
    ex = executor(c=ConfigRoot(path=tmp_path))
    assert read(ex, "c", "db.yaml", "db.password").data["value"] == "[REDACTED:secret-value]"
    url = read(ex, "c", "db.yaml", "db.url").data["value"]
    assert "pa55-not-shown" not in url and url.startswith("postgres://") and url.endswith("@pg-1/app")
    whole_section = read(ex, "c", "db.yaml", "db")
    assert "hunter2-not-shown" not in whole_section.render()
    assert whole_section.data["value"]["pool"] == 5 and whole_section.data["value"]["user"] == "app"
    assert "hunter2-not-shown" not in read(ex, "c", "db.yaml").render()


GITHUB_TOKEN = "ghp_" + "Q7" * 18
OTHER_TOKEN = "ghp_" + "Z3" * 18


def test_a_lookup_sees_keys_and_values_as_redaction_shows_them(tmp_path: Path) -> None:
    write(
        tmp_path / "app.yaml",
        f"tokens:\n  {GITHUB_TOKEN}: alice\n  {OTHER_TOKEN}: bob\n"
        "passwords: [aaaa1111, bbbb2222]\n"
        "env:\n  - name: DB_PASSWORD\n    value: zzzz9999\n",
    )
    ex = executor(c=ConfigRoot(path=tmp_path))
    tokens = read(ex, "c", "app.yaml", "tokens")
    assert tokens.data["value"] == {"[REDACTED:github]": "alice", "[REDACTED:github] (2)": "bob"}
    assert read(ex, "c", "app.yaml", "tokens.[REDACTED:github] (2)").data["value"] == "bob"
    by_token = read(ex, "c", "app.yaml", f"tokens.{GITHUB_TOKEN}")
    assert by_token.status == "not_found", "a key is found by what the model can see, never by the secret"
    assert by_token.error.hint == "keys at that level: [REDACTED:github], [REDACTED:github] (2)"  # type: ignore[union-attr]
    assert read(ex, "c", "app.yaml", "passwords.1").data["value"] == "[REDACTED:secret-value]"
    assert read(ex, "c", "app.yaml", "env.0.value").data["value"] == "[REDACTED:secret-value]"
    for key in ("tokens", "passwords", "env", "env.0"):
        rendered = read(ex, "c", "app.yaml", key).render()
        assert not any(secret in rendered for secret in ("Q7Q7", "Z3Z3", "aaaa1111", "bbbb2222", "zzzz9999"))


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster:
    server: https://k8s.example.com
users:
- name: admin
  user:
    token: kube-token-0123456789abcdef
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBCg==
- name: basic
  user:
    username: admin
    password: s3cr3t-kube-pass
"""


def test_a_kubeconfig_under_another_name_is_read_with_its_credentials_masked(tmp_path: Path) -> None:
    write(tmp_path / "cluster-admin.yaml", KUBECONFIG)
    ex = executor(c=ConfigRoot(path=tmp_path))
    secrets = ("kube-token-0123456789abcdef", "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVkt", "s3cr3t-kube-pass")
    whole = read(ex, "c", "cluster-admin.yaml")
    assert whole.ok and "https://k8s.example.com" in whole.data["content"]
    for key in ("users", "users.0.user.token", "users.0.user.client-key-data", "users.1.user.password"):
        looked_up = read(ex, "c", "cluster-admin.yaml", key)
        assert looked_up.ok and "[REDACTED:" in looked_up.render(), looked_up
        assert not any(secret in looked_up.render() for secret in secrets)
    assert not any(secret in whole.render() for secret in secrets)


# ---------------------------------------------------------------- roots and listing


def test_a_single_file_root_needs_no_path(ops: Executor, conf: Path) -> None:
    assert read(ops, "single").data["content"] == (conf / "app.yaml").read_text()
    assert read(ops, "single", key="db.primary.port").data["value"] == 5432
    assert read(ops, "single", "app.yaml", "db.primary.port").data["value"] == 5432


def test_a_single_file_root_has_no_other_files(ops: Executor) -> None:
    result = read(ops, "single", "app.json")
    assert result.status == "not_found" and "single file" in result.error.message  # type: ignore[union-attr]


def test_a_directory_root_without_path_lists_what_can_be_read(ops: Executor) -> None:
    result = read(ops, "conf")
    assert result.ok and result.data["path"] == "."
    files = result.data["files"]
    assert "app.yaml" in files and "conf.d/10-limits.conf" in files
    assert not any(f.startswith((".git/", ".ssh/")) for f in files), "hidden directories are not walked"
    withheld = result.data["withheld"]
    assert withheld["tls/server.pem"] == "never read (matches '*.pem')"
    assert withheld["tls/server.KEY"] == "never read (matches '*.key')"
    assert set(withheld) >= {"id_rsa", ".env", ".env.local", "app.env"}
    assert not set(files) & set(withheld)


def test_a_directory_path_lists_that_directory(ops: Executor) -> None:
    result = read(ops, "conf", "conf.d")
    assert result.ok and result.data == {"name": "conf", "path": "conf.d", "files": ["conf.d/10-limits.conf"]}


def test_a_key_on_a_directory_lists_it_rather_than_guessing(ops: Executor) -> None:
    result = read(ops, "conf", "conf.d", "limits.rps")
    assert result.ok and result.data["files"] == ["conf.d/10-limits.conf"]


def test_include_globs_narrow_a_root(conf: Path) -> None:
    ex = executor(c=ConfigRoot(path=conf, include=("*.yaml", "conf.d/*.conf")))
    files = read(ex, "c").data["files"]
    assert files == ["app.yaml", "conf.d/10-limits.conf", "flat.yaml", "multi.yaml"]
    excluded = read(ex, "c", "app.json")
    assert excluded.status == "not_found", "a file outside the globs is not part of the root"
    assert "app.yaml" in excluded.error.hint  # type: ignore[union-attr]


def test_a_listing_stops_at_its_cap_and_says_so(tmp_path: Path) -> None:
    for n in range(LIST_FILES + 20):
        write(tmp_path / f"f{n:04}.yaml", "a: 1\n")
    result = read(executor(c=ConfigRoot(path=tmp_path)), "c")
    assert len(result.data["files"]) == LIST_FILES and "stopped after" in result.data["more"]


def test_an_unknown_root_lists_the_roots(ops: Executor) -> None:
    result = read(ops, "nginx")
    assert result.status == "not_found" and result.error.hint == "known config roots: conf, single"  # type: ignore[union-attr]


def test_a_missing_file_lists_readable_files_near_it(ops: Executor) -> None:
    result = read(ops, "conf", "conf.d/10-limit.conf")
    assert result.status == "not_found"
    assert result.error.hint.startswith("readable files near it: conf.d/10-limits.conf")  # type: ignore[union-attr]
    typo = read(ops, "conf", "ap.yml")
    assert typo.error.hint.startswith("readable files near it: app.yaml")  # type: ignore[union-attr]
    assert "id_rsa" not in typo.error.hint and ".env" not in typo.error.hint  # type: ignore[union-attr]


def test_a_root_missing_on_this_host_is_unavailable(tmp_path: Path) -> None:
    ex = executor(gone=ConfigRoot(path=tmp_path / "nope"), gone_file=ConfigRoot(path=tmp_path / "nope.yaml"))
    for name in ("gone", "gone_file"):
        result = read(ex, name)
        assert result.status == "unavailable", result
        assert str(tmp_path) not in result.render()


def test_a_root_declared_through_a_link_is_the_operators_word(conf: Path, tmp_path: Path) -> None:
    (tmp_path / "current").symlink_to(conf)
    assert read(executor(c=ConfigRoot(path=tmp_path / "current")), "c", "app.yaml", "db.primary.host").ok


# ---------------------------------------------------------------- caps


def test_a_whole_file_over_the_cap_is_cut_and_says_so(tmp_path: Path) -> None:
    write(tmp_path / "big.yaml", "k: " + "v" * 5000 + "\n")
    result = read(executor(c=ConfigRoot(path=tmp_path, max_bytes=1000)), "c", "big.yaml")
    # The word the cut went through is left out: half a token would match no redaction shape.
    assert result.ok and result.data["content"] == "k: …"
    assert "cut at 1,000 bytes" in (result.truncated or "")


def test_a_key_in_a_file_over_the_cap_is_not_guessed_from_a_part(tmp_path: Path) -> None:
    write(tmp_path / "big.yaml", "k: " + "v" * 5000 + "\nlast: 1\n")
    result = read(executor(c=ConfigRoot(path=tmp_path, max_bytes=1000)), "c", "big.yaml", "last")
    assert result.status == "failed" and "larger than 1,000 bytes" in result.error.message  # type: ignore[union-attr]


# ---------------------------------------------------------------- never-read patterns


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("tls/server.pem", "*.pem"),
        ("tls/server.KEY", "*.key"),
        ("id_rsa", "id_*"),
        (".env", ".env"),
        (".env.local", ".env.*"),
        ("app.env", "*.env"),
        (".ssh/config", ".ssh"),
    ],
)
def test_never_read_patterns_hold_inside_a_root(ops: Executor, path: str, pattern: str) -> None:
    for key in (None, "SECRET"):
        result = read(ops, "conf", path, key)
        assert result.status == "denied", result
        assert f"matches {pattern!r}" in result.error.message  # type: ignore[union-attr]
        assert "dotenv" not in result.render() and "not for you" not in result.render()


def test_a_single_file_root_on_a_never_read_file_is_refused(conf: Path) -> None:
    result = read(executor(c=ConfigRoot(path=conf / ".env")), "c")
    assert result.status == "denied" and "dotenv-value" not in result.render()


def test_a_root_may_exempt_names_and_add_patterns_of_its_own(conf: Path) -> None:
    ex = executor(c=ConfigRoot(path=conf, allow=(".env",), never_read=("*.toml", "legacy*")))
    assert read(ex, "c", ".env").ok
    assert read(ex, "c", ".env.local").status == "denied", "only the names allowed are exempt"
    assert read(ex, "c", "app.env").status == "denied"
    assert read(ex, "c", "app.toml").status == "denied"
    assert read(ex, "c", "legacy.cfg").status == "denied"
    assert "app.toml" in read(ex, "c").data["withheld"]


def test_an_allowed_env_file_is_still_redacted(conf: Path) -> None:
    write(conf / ".env", "API_TOKEN=tok-abcdef0123456789\nDB_HOST=pg-1\n")
    ex = executor(c=ConfigRoot(path=conf, allow=(".env",)))
    whole = read(ex, "c", ".env").render()
    assert "tok-abcdef0123456789" not in whole and "pg-1" in whole
    assert "tok-abcdef0123456789" not in read(ex, "c", ".env", "API_TOKEN").render()


@pytest.mark.parametrize(
    "fields",
    [
        {"allow": ["tls/*.pem"]},
        {"never_read": ["secrets/*.yaml"]},
        {"include": ["../*.yaml"]},
        {"include": ["/etc/*.conf"]},
    ],
)
def test_bad_patterns_are_config_errors(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ConfigRoot.model_validate({"path": "/etc/app", **fields})


def test_the_built_in_patterns_cover_the_issue() -> None:
    assert {"*.pem", "*.key", "id_*", "*.p12", ".env"} <= set(NEVER_READ)


@pytest.mark.parametrize(
    "path",
    [
        ".envrc",
        ".aws/credentials",
        ".kube/config",
        ".docker/config.json",
        "prod.kubeconfig",
        "kubeconfig",
        "tls.key.bak",
        "tls.pem.bak",
        "tls.key~",
        "server.PEM.old",
        "store.jks.orig",
        ".env~",
        ".vault-token",
        ".netrc",
        "_NETRC",
        ".pgpass",
        "postgresql/pgpass.conf",
        ".git-credentials",
        ".git-credential-cache/socket",
        ".config/gcloud/configurations/config_default",
        "gcloud/credentials.db",
        "application_default_credentials.json",
        "mounted/access_tokens.db",
        "legacy_credentials/me@example.com/adc.json",
        ".azure/azureProfile.json",
        "accessTokens.json",
        "msal_token_cache.json",
        "MSAL_TOKEN_CACHE.BIN",
        "service_principal_entries.json",
        ".oci/config",
        ".databrickscfg",
        ".boto",
        ".s3cfg",
        ".pypirc",
        "credentials.tfrc.json",
        ".terraformrc",
        "terraform.rc",
        ".dockercfg",
    ],
)
def test_credentials_and_key_backups_are_never_read(tmp_path: Path, path: str) -> None:
    write(tmp_path / path, "token: do-not-show\n")
    write(tmp_path / "app.yaml", "a: 1\n")
    ex = executor(c=ConfigRoot(path=tmp_path))
    result = read(ex, "c", path)
    assert result.status == "denied" and "never read" in result.error.message, result  # type: ignore[union-attr]
    assert "do-not-show" not in result.render()
    assert read(ex, "c").data["files"] == ["app.yaml"]


def test_names_like_the_new_patterns_are_still_read(tmp_path: Path) -> None:
    names = ["keys.yaml", "docker-compose.yaml", "kube-proxy.conf", "backup.yaml", "envoy.yaml", "gcloud.yaml"]
    names += ["azure.yaml", "netrc.md", "terraform.tfvars", "oci.yaml"]
    # Deliberately readable: common names for settings, whose secrets redaction masks.
    names += [".npmrc", "credentials.json", "credentials/app.yaml"]
    for name in names:
        write(tmp_path / name, "a: 1\n")
    assert sorted(read(executor(c=ConfigRoot(path=tmp_path)), "c").data["files"]) == sorted(names)


def test_an_npmrc_is_read_with_its_tokens_masked(tmp_path: Path) -> None:
    write(
        tmp_path / ".npmrc",
        "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=npm-token-0123456789abcdef\n"
        "//npm.example.com/:_password=cGFzc3dvcmQxMjM0\n",
    )
    result = read(executor(c=ConfigRoot(path=tmp_path)), "c", ".npmrc")
    assert result.ok and "registry=https://registry.npmjs.org/" in result.data["content"]
    assert "npm-token-0123456789abcdef" not in result.render() and "cGFzc3dvcmQxMjM0" not in result.render()


def test_a_root_may_exempt_a_credential_file(tmp_path: Path) -> None:
    write(tmp_path / ".pypirc", "[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc0123456789\n")
    assert read(executor(c=ConfigRoot(path=tmp_path)), "c", ".pypirc").status == "denied"
    allowed = read(executor(c=ConfigRoot(path=tmp_path, allow=(".pypirc",))), "c", ".pypirc", "pypi.password")
    assert allowed.ok and allowed.data["value"].startswith("[REDACTED:")


# ---------------------------------------------------------------- access


def test_a_root_with_access_refuses_others(conf: Path) -> None:
    ex = executor(c=ConfigRoot(path=conf, access=Access(groups=frozenset({"oncall"}))))
    assert read(ex, "c", "app.yaml", who=ONCALL).ok
    for who in (VISITOR, None):
        result = read(ex, "c", "app.yaml", who=who)
        assert result.status == "denied" and "pg-1" not in result.render()
    assert read(ex, "c", who=VISITOR).status == "denied", "not even a listing"


# ---------------------------------------------------------------- links that stay inside


def configmap(root: Path) -> None:
    """The layout of a Kubernetes ConfigMap volume: every file is a link through ..data."""
    write(root / "..2026_11_29_10_00_00.1" / "app.yaml", "db:\n  host: from-configmap\n")
    write(root / "..2026_11_29_10_00_00.1" / "tls.key", "not for you\n")
    (root / "..data").symlink_to("..2026_11_29_10_00_00.1")
    (root / "app.yaml").symlink_to("..data/app.yaml")
    (root / "tls.key").symlink_to("..data/tls.key")
    (root / "innocent.yaml").symlink_to("..data/tls.key")


def test_links_inside_a_root_are_refused_by_default(tmp_path: Path) -> None:
    configmap(tmp_path)
    ex = executor(c=ConfigRoot(path=tmp_path))
    result = read(ex, "c", "app.yaml")
    assert result.status == "denied" and "symbolic link" in result.error.message  # type: ignore[union-attr]
    assert read(ex, "c").data["withheld"]["app.yaml"] == "symbolic link (not followed)"


def test_follow_symlinks_reads_a_configmap_and_still_refuses_keys(tmp_path: Path) -> None:
    configmap(tmp_path)
    ex = executor(c=ConfigRoot(path=tmp_path, follow_symlinks=True))
    assert read(ex, "c", "app.yaml", "db.host").data["value"] == "from-configmap"
    listing = read(ex, "c").data
    assert listing["files"] == ["app.yaml"]
    assert set(listing["withheld"]) == {"innocent.yaml", "tls.key"}
    renamed = read(ex, "c", "innocent.yaml")
    assert renamed.status == "denied" and "'*.key'" in renamed.error.message  # type: ignore[union-attr]
    assert "not for you" not in renamed.render()


def test_a_single_file_root_that_is_a_link_says_which_setting_to_change(tmp_path: Path) -> None:
    configmap(tmp_path)
    result = read(executor(c=ConfigRoot(path=tmp_path / "app.yaml")), "c")
    assert result.status == "denied", result
    assert "set `follow_symlinks: true` for config root 'c'" in result.error.hint  # type: ignore[union-attr]
    assert "without path" not in result.error.hint  # type: ignore[union-attr]
    followed = read(executor(c=ConfigRoot(path=tmp_path / "app.yaml", follow_symlinks=True)), "c", key="db.host")
    assert followed.data["value"] == "from-configmap"


def test_a_single_file_root_on_a_linked_key_is_refused_as_a_key(tmp_path: Path) -> None:
    configmap(tmp_path)
    result = read(executor(c=ConfigRoot(path=tmp_path / "tls.key")), "c")
    assert result.status == "denied" and "'*.key'" in result.error.message  # type: ignore[union-attr]


def test_a_link_out_of_the_root_names_the_path_asked_for_not_its_target(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(tmp_path / "elsewhere" / "secret.yaml", "password: x\n")
    root.mkdir()
    (root / "sub").symlink_to("../elsewhere")
    result = read(executor(c=ConfigRoot(path=root, follow_symlinks=True)), "c", "sub/secret.yaml")
    message = result.error.message  # type: ignore[union-attr]
    assert result.status == "denied" and "'sub/secret.yaml' in config root 'c'" in message, message
    assert "outside the root" in message and "elsewhere" not in result.render()


# ---------------------------------------------------------------- hard links


def test_a_hard_linked_file_is_refused_unless_the_root_allows_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "app.yaml", "db:\n  host: pg-1\n")
    write(tmp_path / "outside" / "secret.yaml", "password: hunter2-not-shown\n")
    os.link(tmp_path / "outside" / "secret.yaml", root / "innocent.yaml")
    ex = executor(c=ConfigRoot(path=root), open=ConfigRoot(path=root, allow_hardlinks=True))
    for key in (None, "password"):
        refused = read(ex, "c", "innocent.yaml", key)
        assert refused.status == "denied", refused
        assert "'innocent.yaml' in config root 'c'" in refused.error.message  # type: ignore[union-attr]
        assert "`allow_hardlinks: true` for config root 'c'" in refused.error.hint  # type: ignore[union-attr]
        assert "hunter2" not in refused.render() and "secret.yaml" not in refused.render()
        assert str(tmp_path) not in refused.render()
    listing = read(ex, "c").data
    assert listing["files"] == ["app.yaml"] and "hard link" in listing["withheld"]["innocent.yaml"]
    assert read(ex, "open", "innocent.yaml").data["content"] == "password: [REDACTED:secret-value]\n"
    assert read(ex, "open").data["files"] == ["app.yaml", "innocent.yaml"]


def test_a_hard_link_between_two_names_inside_the_root_is_refused_too(tmp_path: Path) -> None:
    """opsbot cannot tell where a file's other names are, so it does not guess that they are inside."""
    write(tmp_path / "app.yaml", "a: 1\n")
    os.link(tmp_path / "app.yaml", tmp_path / "copy.yaml")
    ex = executor(c=ConfigRoot(path=tmp_path), single=ConfigRoot(path=tmp_path / "app.yaml"))
    assert read(ex, "c", "app.yaml").status == "denied" and read(ex, "c", "copy.yaml").status == "denied"
    single = read(ex, "single")
    assert single.status == "denied" and "allow_hardlinks" in single.error.hint  # type: ignore[union-attr]
    (tmp_path / "copy.yaml").unlink()
    assert read(ex, "c", "app.yaml").ok and read(ex, "single").ok


def test_a_file_opsbot_may_not_read_is_named(conf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def refusing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == "app.yaml":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    result = read(executor(c=ConfigRoot(path=conf)), "c", "app.yaml")
    message = result.error.message  # type: ignore[union-attr]
    assert result.status == "denied" and "read 'app.yaml' in config root 'c' (Permission denied)" in message
    assert str(conf) not in result.render()


def test_a_fifo_root_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    begun = time.monotonic()
    result = read(executor(c=ConfigRoot(path=tmp_path / "pipe.yaml")), "c")
    assert time.monotonic() - begun < 2 and result.status == "denied"


# ---------------------------------------------------------------- the sample and the direct command


@pytest.fixture(scope="module")
def sample_ops() -> tuple[Settings, Executor]:
    settings = Settings.load(SAMPLE_CONFIG)
    return settings, Executor(Registry(ops_tools(settings.policy)), RetryPolicy(timeout_s=5, retries=0))


def test_the_sample_shows_its_refusals(sample_ops: tuple[Settings, Executor]) -> None:
    _, ex = sample_ops
    listing = read(ex, "checkout")
    assert listing.data["files"] == ["checkout.yaml"]
    assert set(listing.data["withheld"]) == {"checkout.env", "checkout-tls.pem"}
    for path in ("checkout.env", "checkout-tls.pem", "../payments.yaml", "payments.yaml"):
        result = read(ex, "checkout", path)
        assert result.status in ("denied", "not_found"), result
        assert "sample-" not in result.render() and "BEGIN CERTIFICATE" not in result.render()
    assert read(ex, "checkout", "checkout.yaml", "upstreams.payments.timeout_ms").data["value"] == 2000


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        ("config checkout", {"name": "checkout"}),
        ("config checkout/checkout.yaml", {"name": "checkout", "path": "checkout.yaml"}),
        ("config checkout/checkout.yaml http.port", {"name": "checkout", "path": "checkout.yaml", "key": "http.port"}),
        ("config payments db.primary.pool_size", {"name": "payments", "key": "db.primary.pool_size"}),
    ],
)
def test_the_config_command_names_a_root_and_a_path_in_it(
    sample_ops: tuple[Settings, Executor], text: str, arguments: dict[str, str]
) -> None:
    parsed = parse_command(sample_ops[0].policy, text)
    assert isinstance(parsed, ToolCall) and json.loads(parsed.arguments) == arguments


def test_the_config_command_refuses_an_unknown_root(sample_ops: tuple[Settings, Executor]) -> None:
    parsed = parse_command(sample_ops[0].policy, "config nginx/nginx.conf")
    assert isinstance(parsed, NotACommand) and "known config roots: checkout, payments" in parsed.why


STRUCTURED_SECRETS = {
    "block.yaml": (
        "db:\n  password: |\n    correct horse\n    battery staple\n  user: app\n",
        ["correct horse", "battery staple"],
    ),
    "list.yaml": ("passwords:\n  - aaaa1111\n  - bbbb2222\nuser: app\n", ["aaaa1111", "bbbb2222"]),
    "anchor.yaml": ("anchors:\n  x: &p hunter2secret\ndb:\n  password: *p\n", ["hunter2secret"]),
    "split.json": ('{"db": {"password":\n   "jsonsecret99", "host": "h"}}\n', ["jsonsecret99"]),
    "docker.json": ('{"auths": {"reg.example.com": {"auth": "dXNlcjpwYXNzd29yZA=="}}}\n', ["dXNlcjpwYXNzd29yZA=="]),
    "kubeconfig.yaml": (
        "users:\n- name: u\n  user:\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=\n",
        ["LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo="],
    ),
}


@pytest.mark.parametrize("name", sorted(STRUCTURED_SECRETS))
def test_a_whole_file_read_hides_secrets_only_its_structure_shows(tmp_path: Path, name: str) -> None:
    from opsbot.tools.configs import read_config_tool

    text, secrets = STRUCTURED_SECRETS[name]
    (tmp_path / name).write_text(text)
    executor = Executor(Registry([read_config_tool(Policy(config_files={"t": ConfigRoot(path=tmp_path)}))]))
    result = executor.run_one(ToolCall("1", "read_config", json.dumps({"name": "t", "path": name}))).result
    assert result.ok
    for secret in secrets:
        assert secret not in result.render()
    assert "[REDACTED:" in result.data["content"]
