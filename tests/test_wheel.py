"""The wheel is complete: built from a copy of the sources, installed into a fresh virtualenv
outside the checkout, it runs `--version`, `check-config`, `ask "services"` and a `logs` direct
command on the bundled sample from there, with nothing of the checkout on its path. It is one
import package, `opsbot`: installed beside PyPI's `config` and `tools` packages, and used from a
project with its own `config/` and `tools/`, opsbot and their modules all work.

A fresh virtualenv would download the dependencies from PyPI on every run; this one finds them
in the test's own environment instead (one path line), which holds opsbot only as an editable
install of the checkout, and an editable install is never seen through a path line: what runs
is the wheel's copy, and the test checks that it is."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from opsbot.bot.version import VERSION

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("bot", "tools", "config", "pyproject.toml", "README.md", "LICENSE")


class Built(NamedTuple):
    wheel: Path
    log: str  # what the build printed


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The wheel, built from a copy of what the repository ships."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    done = run(
        sys.executable,
        "-m",
        "build",
        "--wheel",
        "--no-isolation",
        "--outdir",
        str(work / "dist"),
        str(source),
        cwd=work,
    )
    [wheel] = (work / "dist").glob("opsbot-*.whl")
    return Built(wheel, done.stdout + done.stderr)


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The `bin` directory of a fresh virtualenv with the wheel installed, and nothing else of opsbot."""
    work = tmp_path_factory.mktemp("env")
    wheel = built.wheel
    assert_one_package(wheel)
    env_dir = work / "env"
    venv.create(env_dir, with_pip=False)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env_dir), "platbase": str(env_dir)}))
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    python = env_dir / "bin" / "python"
    run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "--no-deps",
        "--no-index",
        "--quiet",
        str(wheel),
        cwd=work,
    )
    yield env_dir / "bin"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, f"{' '.join(args)}\n{done.stdout}\n{done.stderr}"
    return done


def opsbot(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "opsbot"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )


def test_the_installed_wheel_is_what_runs(installed: Path, tmp_path: Path) -> None:
    where = run(
        str(installed / "python"),
        "-c",
        "import opsbot.bot as bot, opsbot.config.settings as s; print(bot.__file__); print(s.SAMPLE_CONFIG)",
        cwd=tmp_path,
    )
    package, sample = where.stdout.splitlines()
    assert package.startswith(str(installed.parent)) and not package.startswith(str(ROOT))
    assert Path(sample).is_file() and sample.startswith(str(installed.parent))


def test_version_check_config_and_direct_commands_work_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    version = opsbot(installed, "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == f"opsbot {VERSION}"

    sample = run(
        str(installed / "python"), "-c", "from opsbot.config.settings import SAMPLE_CONFIG as s; print(s)", cwd=tmp_path
    )
    checked = opsbot(installed, "check-config", sample.stdout.strip(), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "ok – 3 service(s)" in checked.stdout and "3 runbook(s)" in checked.stdout

    services = opsbot(installed, "ask", "services", cwd=tmp_path)
    assert services.returncode == 0, services.stderr
    assert all(name in services.stdout for name in ("checkout", "payments", "auth", "restart"))

    logs = opsbot(installed, "ask", "logs checkout ERROR since=9999h", cwd=tmp_path)
    assert logs.returncode == 0, logs.stderr
    assert " ERROR " in logs.stdout and "Traceback" not in logs.stderr


def test_the_builtin_eval_suite_is_in_the_wheel(installed: Path, tmp_path: Path) -> None:
    found = run(
        str(installed / "python"),
        "-c",
        "from opsbot.bot.eval import load_suite; s = load_suite('builtin'); print(len(s.scenarios)); "
        "import opsbot.bot.eval.suite as m; print(m.BUILTIN)",
        cwd=tmp_path,
    )
    count, where = found.stdout.split()
    assert int(count) >= 20 and where.startswith(str(installed.parent))


def test_the_build_warns_of_nothing_and_the_license_is_an_spdx_expression(built: Built) -> None:
    """setuptools stops building a license given as a table on 2027-02-18; it says so in a warning."""
    assert "warning" not in built.log.lower(), built.log
    with zipfile.ZipFile(built.wheel) as archive:
        metadata = archive.read(f"opsbot-{VERSION}.dist-info/METADATA").decode()
        names = archive.namelist()
    assert "License-Expression: MIT" in metadata.splitlines()
    assert f"opsbot-{VERSION}.dist-info/licenses/LICENSE" in names


def assert_one_package(wheel: Path) -> None:
    """The wheel holds `opsbot/` and its metadata only, and every package of the checkout."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"opsbot", f"opsbot-{VERSION}.dist-info"}, tops
    packages = {
        f"opsbot/{init.parent.relative_to(ROOT)}"
        for top in ("bot", "tools", "config")
        for init in (ROOT / top).rglob("__init__.py")
    }
    missing = {package for package in packages if f"{package}/__init__.py" not in names}
    assert not missing, f"packages missing from [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


# A project of the user's with its own `config` and `tools` packages, using opsbot's Python API
# (docs/python-api.md) beside them; PyPI's `config` and `tools` are installed in the environment too.
USER_PROJECT = {
    "config/__init__.py": "NAME = 'the user config'\n",
    "tools/__init__.py": "NAME = 'the user tools'\n",
    "main.py": """
import config, tools
from opsbot.bot.build import build_agent
from opsbot.config.settings import SAMPLE_CONFIG, Settings
from opsbot.config.policy import Policy

settings = Settings.load(SAMPLE_CONFIG)
agent = build_agent(settings)
print(config.NAME, tools.NAME, isinstance(settings.policy, Policy), sorted(settings.policy.services))
""",
}


def test_opsbot_lives_beside_pypis_config_and_tools_and_a_projects_own(installed: Path, tmp_path: Path) -> None:
    python = str(installed / "python")
    pypi = run(python, "-c", "import config, tools; print(config.Config.__name__, tools.__version__)", cwd=tmp_path)
    assert pypi.stdout.split()[0] == "Config", "PyPI's `config` is the one installed, untouched"
    assert opsbot(installed, "ask", "services", cwd=tmp_path).returncode == 0

    project = tmp_path / "project"
    for name, text in USER_PROJECT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    used = run(python, "main.py", cwd=project)
    assert used.stdout.strip() == "the user config the user tools True ['auth', 'checkout', 'payments']"
    services = opsbot(installed, "ask", "services", cwd=project)
    assert services.returncode == 0 and "checkout" in services.stdout, services.stderr
