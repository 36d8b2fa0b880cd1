"""run_command: one of the operator's fixed diagnostic commands, by name, without a shell.

The model names a command; it never sends a command line. The process gets no stdin, a minimal
environment with pagers disabled, its own process group (killed whole on timeout) and an
output cap.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

from pydantic import BaseModel, ConfigDict, Field

from config.policy import Command, Policy, Principal
from tools.base import ErrorType, Tool, ToolResult

MINIMAL_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "SYSTEMD_PAGER": "cat",
}


class RunCommandArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(description="command name, as listed by list_services")


def run_command_tool(policy: Policy) -> Tool:
    # Executables are resolved once, at load time, so PATH changes later cannot swap them.
    resolved = {name: shutil.which(spec.argv[0]) for name, spec in policy.commands.items()}

    def run(args: RunCommandArgs, principal: Principal | None) -> ToolResult:
        spec = policy.commands.get(args.command)
        if spec is None:
            return ToolResult.unknown("command", args.command, policy.commands)
        executable = resolved[args.command]
        if executable is None:
            return ToolResult.failure(
                ErrorType.unavailable,
                f"{spec.argv[0]!r} is not installed on the opsbot host",
                hint="tell the user; another command may show the same thing",
            )
        return execute([executable, *spec.argv[1:]], spec)

    return Tool(
        name="run_command",
        description="Run one allowlisted diagnostic command by name and return its exit code and output.",
        args_model=RunCommandArgs,
        run=run,  # type: ignore[arg-type]
    )


def execute(argv: list[str], spec: Command) -> ToolResult:
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=MINIMAL_ENV,
        start_new_session=True,
        close_fds=True,
    )
    try:
        output, _ = process.communicate(timeout=spec.timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return ToolResult.failure(
            ErrorType.timeout,
            f"{argv[0]} did not finish within {spec.timeout_s:g}s and was killed",
            hint="the host may be overloaded; try another command or later",
        )
    text = output[: spec.max_output_bytes].decode("utf-8", errors="replace")
    result = {"exit_code": process.returncode, "output": text}
    if len(output) > spec.max_output_bytes:
        result["note"] = f"output cut at {spec.max_output_bytes:,} of {len(output):,} bytes"
    return ToolResult.success(result)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    # A process that escaped into its own session may still hold the pipe: do not wait for it.
    if process.stdout is not None:
        process.stdout.close()
    process.wait(timeout=5)
