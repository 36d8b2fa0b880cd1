"""`slack.link_domains`: host names, compared as Slack links are (lower case, punycode, no trailing
dot); anything else (a URL, a wildcard, a port, a whole top-level domain) is refused with what to
write instead, from YAML (with its line) and from the environment alike."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from opsbot.config.check import ConfigError
from opsbot.config.settings import Settings, SlackSettings, load_file_config


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("OPSBOT_"):
            monkeypatch.delenv(name, raising=False)


def test_none_are_listed_unless_set() -> None:
    assert SlackSettings().link_domains == frozenset()


def test_names_are_kept_as_links_compare_them() -> None:
    given = ["Grafana.ACME.com.", " wiki.acme.com ", "bücher.example", "10.0.0.5"]
    assert SlackSettings(link_domains=given).link_domains == {
        "grafana.acme.com",
        "wiki.acme.com",
        "xn--bcher-kva.example",
        "10.0.0.5",
    }


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("https://grafana.acme.com/d/checkout", "write the host alone, e.g. grafana.acme.com"),
        ("grafana.acme.com/d/checkout", "write the host alone, e.g. grafana.acme.com"),
        ("*.acme.com", "write the host alone, e.g. acme.com (its subdomains are included)"),
        ("grafana.acme.com:3000", "write the host alone, e.g. grafana.acme.com"),
        ("oncall@acme.com", "write the host alone, e.g. acme.com"),
        ("http://[::1", "write the host alone, e.g. its host"),
        ("acme_com", "is not a valid host name"),
        ("-acme.com", "is not a valid host name"),
        ("", "is not a valid host name"),
        ("com", "a whole top-level domain, so every host under it would stay clickable"),
    ],
)
def test_anything_but_a_host_name_is_refused_saying_what_to_write(given: str, said: str) -> None:
    with pytest.raises(ValidationError) as refused:
        SlackSettings(link_domains=[given])
    assert said in str(refused.value)


def test_a_bad_name_in_the_yaml_file_is_reported_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "opsbot.yaml"
    text = """
        slack:
          link_domains:
            - grafana.acme.com
            - https://wiki.acme.com/runbooks
    """
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_file_config(path)
    [problem] = refused.value.problems
    assert problem.path == "slack.link_domains" and problem.where == f"{path}:2"
    assert "e.g. wiki.acme.com" in str(problem)


def test_the_environment_sets_them_as_a_json_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPSBOT_SLACK__LINK_DOMAINS", '["Grafana.acme.com", "wiki.acme.com"]')
    assert Settings().slack.link_domains == {"grafana.acme.com", "wiki.acme.com"}
    monkeypatch.setenv("OPSBOT_SLACK__LINK_DOMAINS", '["*.acme.com"]')
    with pytest.raises(ValidationError, match=r"e\.g\. acme\.com"):
        Settings()
