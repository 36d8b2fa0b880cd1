"""The documents stay true and whole: README is short, the configuration reference is what the
models say, the pictures script still draws a real session, and no link leads nowhere."""

from __future__ import annotations

import html
import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, *sorted(DOCS.glob("*.md")), ROOT / "deploy" / "README.md"]


def script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_fits_on_a_few_screens() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move reference material to docs/"


def test_readme_holds_no_benchmark_log_or_test_timings() -> None:
    """Dated figures live in docs/benchmarks.md; README says what opsbot does, not how fast it was."""
    text = README.read_text(encoding="utf-8")
    for figure in ("tests/bench", "2-core", "slow day", "quick day", "took ", " min ", "median"):
        assert figure not in text, figure


def test_the_quick_start_commands_are_the_ones_ci_runs() -> None:
    quick = README.read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", quick, re.S)
    assert block is not None
    commands = [line.split("#")[0].strip() for line in block[1].splitlines()]
    assert commands == ["make chat", "make test"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == "make test"  # .ci/run: "exactly the README's test command"


def _installs(target: str, tmp_path: Path) -> list[str]:
    """The pip installs `make <target>` runs on a fresh machine (a `.venv` not made yet)."""
    done = subprocess.run(
        ["make", "-n", "-B", target, f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [line for line in done.stdout.splitlines() if " install " in line and "--upgrade pip" not in line]


def test_make_chat_installs_only_what_opsbot_needs(tmp_path: Path) -> None:
    """The test toolchain (pytest, mypy, ruff, build tools, PyPI's config and tools) is `make test`'s."""
    chat = _installs("chat", tmp_path)
    assert chat == [f"{tmp_path / 'venv'}/bin/pip install --quiet -e ."], chat
    assert any("-e '.[test]'" in line for line in _installs("test", tmp_path))


def test_the_configuration_reference_is_what_the_models_say() -> None:
    expected = script("gen_config_reference").reference()
    written = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert written == expected, "docs/configuration.md has drifted: run .venv/bin/python docs/gen_config_reference.py"


def test_the_configuration_reference_has_every_field_with_a_description() -> None:
    generator = script("gen_config_reference")
    text = generator.reference()
    for _, _, model, _ in generator.SECTIONS:
        for name in model.model_fields:
            assert re.search(rf"^\| `{name}`", text, re.M), f"{model.__name__}.{name}"
    for row in re.findall(r"^\| `.*\|$", text, re.M):
        assert not row.endswith("|  |"), row  # a field without a description


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    counts: dict[str, int] = {}
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        slug = _slug(line.lstrip("#"))
        n = counts.get(slug, 0)
        counts[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def links(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    text = re.sub(r"`[^`\n]*`", "", text)  # an example in code, `[t](url)`, is no link
    return [target for target in _LINK.findall(text) if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target} (no such heading in {file.relative_to(ROOT)})")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_the_link_checker_knows_githubs_anchors() -> None:
    assert _slug(" `http`: `opsbot serve --http`") == "http-opsbot-serve---http"
    assert _slug(" `policy.config_files.<name>`: config roots") == "policyconfig_filesname-config-roots"
    assert _slug(" Delivery: exactly one answer, nothing lost") == "delivery-exactly-one-answer-nothing-lost"
    assert _slug(" Multi-line entries (stack traces)") == "multi-line-entries-stack-traces"
    assert _slug(" A runbook's `triggers[]`") == "a-runbooks-triggers"


def svg_lines(svg: str) -> list[str]:
    """The text rich's SVG export draws, a line per row."""
    rows: dict[float, list[str]] = {}
    for found in re.finditer(r'<text[^>]*\by="([\d.]+)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(float(found[1]), []).append(html.unescape(found[2]).replace("\xa0", " "))
    return ["".join(parts) for _, parts in sorted(rows.items())]


def test_the_pictures_are_drawn_from_a_real_session(tmp_path: Path) -> None:
    chat, slack = script("make_pictures").main(tmp_path)

    screen = svg_lines(chat.read_text(encoding="utf-8"))
    assert any(line.startswith("you> why is checkout throwing 502s?") for line in screen), screen
    steps = [line.strip() for line in screen if "step " in line and "→" in line]
    assert steps[0].startswith('✓ step 1: query_logs (service="checkout", level="ERROR", since="2h") → ok: 38 matching')
    assert steps[1].startswith('✓ step 2: query_logs (service="payments"')
    assert steps[2].startswith('✓ step 2: read_config (name="payments", key="db.primary.pool_size") → ok')
    assert any("checkout's 502s come from payments timing out." in line for line in screen)
    assert any(line.strip().startswith("(answered · 3 step(s) · 3 model call(s)") for line in screen), screen

    thread = svg_lines(slack.read_text(encoding="utf-8"))
    assert any("✓ 1. `query_logs` service=checkout level=ERROR since=2h → ok: 38 matching" in line for line in thread)
    assert any("3 step(s) · 3 model call(s)" in line for line in thread), thread


def test_the_readme_shows_the_pictures_the_script_draws() -> None:
    text = README.read_text(encoding="utf-8")
    assert "](docs/images/chat.svg)" in text and "docs/images/slack.svg" in text
    for name in ("chat.svg", "slack.svg"):
        svg = (DOCS / "images" / name).read_text(encoding="utf-8")
        assert "why is checkout throwing 502s?" in html.unescape(svg).replace("\xa0", " ")


def test_the_alert_rules_operations_shows_are_the_ones_promtool_checks() -> None:
    """docs/operations.md's three rules are tests/fixtures/prometheus/opsbot-rules.yaml, which
    tests/test_metrics.py checks with `promtool check rules`."""
    text = (DOCS / "operations.md").read_text(encoding="utf-8")
    shown = re.search(r"```yaml\n(groups:.*?)```", text.split("Three alert rules worth having", 1)[1], re.S)
    fixture = (ROOT / "tests" / "fixtures" / "prometheus" / "opsbot-rules.yaml").read_text(encoding="utf-8")
    assert shown is not None
    assert shown[1] == "".join(line for line in fixture.splitlines(keepends=True) if not line.startswith("#"))
