"""The wheel is complete: built from a copy of the sources, installed into a fresh virtualenv
outside the checkout, it runs `--version`, `check-config`, `ask "services"` and a `logs` direct
command on the bundled sample from there, with nothing of the checkout on its path.

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
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.version import VERSION

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("bot", "tools", "config", "pyproject.toml", "README.md")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The `bin` directory of a fresh virtualenv with the wheel installed, and nothing else of opsbot."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    run(
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
        "import bot, config.settings as s; print(bot.__file__); print(s.SAMPLE_CONFIG)",
        cwd=tmp_path,
    )
    package, sample = where.stdout.splitlines()
    assert package.startswith(str(installed.parent)) and not package.startswith(str(ROOT))
    assert Path(sample).is_file() and sample.startswith(str(installed.parent))


def test_version_check_config_and_direct_commands_work_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    version = opsbot(installed, "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == f"opsbot {VERSION}"

    sample = run(
        str(installed / "python"), "-c", "from config.settings import SAMPLE_CONFIG as s; print(s)", cwd=tmp_path
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
        "from bot.eval import load_suite; s = load_suite('builtin'); print(len(s.scenarios)); "
        "import bot.eval.suite as m; print(m.BUILTIN)",
        cwd=tmp_path,
    )
    count, where = found.stdout.split()
    assert int(count) >= 20 and where.startswith(str(installed.parent))
