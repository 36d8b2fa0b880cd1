"""What a config that loads would still fail at when it is used, found from the config (and this
host's filesystem) alone, each at the key path where the file says it; `opsbot check-config`
prints them with their lines. What needs the tools' own rules (log file discovery, the programs'
search path) or the model client is checked in bot/config_check.py.

- A config root whose path does not exist on this host, is neither a directory nor a regular
  file, or is a symbolic link its root does not follow: read_config fails for it every time.
- A log command whose `since` or `lines` query_logs cannot fill (config/policy/services.py says
  how it fills them): `since` without a default fails every query that gives no since, one
  refusing whole seconds (`7200s`) the queries that give one; a `lines` that is no integer range
  refuses the count query_logs asks for.
- A runbook written in the policy itself (runbooks_dir's files are checked as they load) whose
  steps name commands, services or config roots the policy does not declare.

All of these are errors: each makes a tool fail whenever it is used, and nothing but the config
(or installing what it names) changes that.
"""

from __future__ import annotations

import os
import stat

from .check import Located
from .policy import Command, ConfigRoot, Policy
from .runbooks import policy_problems

# The form query_logs gives a log command's `since`: whole seconds before now, with an `s`.
SINCE_EXAMPLE = "7200s"


def runtime_problems(policy: Policy) -> list[Located]:
    """Everything above for `policy`, as loaded from one file (paths resolved, runbooks_dir not merged)."""
    return [
        *(problem for name, root in policy.config_files.items() for problem in _root_problems(name, root)),
        *_log_command_problems(policy),
        *(
            (("policy", "runbooks", name, *loc), message)
            for name, runbook in policy.runbooks.items()
            for loc, message in policy_problems(runbook, policy)
        ),
    ]


def _root_problems(name: str, root: ConfigRoot) -> list[Located]:
    where: tuple[int | str, ...] = ("policy", "config_files", name, "path")
    try:
        info = os.lstat(root.path)
        if stat.S_ISLNK(info.st_mode):
            followed = os.stat(root.path)  # a directory root may be a link: it is opened as the operator wrote it
            if not stat.S_ISDIR(followed.st_mode) and not root.follow_symlinks:
                return [
                    (
                        where,
                        f"{root.path} is a symbolic link, which this root does not follow: set "
                        "follow_symlinks: true, or name the file it points to",
                    )
                ]
            info = followed
    except OSError as exc:
        return [(where, f"{root.path} {_os_problem(exc)}, so read_config cannot read config root '{name}'")]
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        return [(where, f"{root.path} is neither a directory nor a regular file; a config root is one of the two")]
    return []


def _os_problem(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "does not exist on this host"
    return f"cannot be looked at ({exc.strerror})"


def _log_command_problems(policy: Policy) -> list[Located]:
    users: dict[str, list[str]] = {}
    for service_name, service in policy.services.items():
        if service.log_command is not None and service.log_command in policy.commands:
            users.setdefault(service.log_command, []).append(service_name)
    found: list[Located] = []
    for name, services in users.items():
        whose = f"the log command of {', '.join(services)}"
        for param_name, problem in _unfillable(policy.commands[name]):
            found.append((("policy", "commands", name, "params", param_name), f"{whose}: {problem}"))
    return found


def _unfillable(spec: Command) -> list[tuple[str, str]]:
    """The parameters of a log command query_logs fills (config/policy/services.py) that it cannot."""
    params = spec.params
    found: list[tuple[str, str]] = []
    since = params.get("since")
    if since is not None and since.required:
        found.append(
            (
                "since",
                'since has no default, so every query that gives no since fails; give it one, e.g. default: "86400s"',
            )
        )
    if since is not None:
        try:
            since.check(SINCE_EXAMPLE)
        except ValueError as exc:
            found.append(
                (
                    "since",
                    f"since refuses what query_logs fills it with, whole seconds and an s as "
                    f"kubectl's --since reads ({exc}), so a query that gives since fails",
                )
            )
    lines = params.get("lines")
    if lines is not None and lines.kind != "int":
        found.append(
            (
                "lines",
                "lines is not an integer range, but query_logs fills it with a count of lines "
                "up to its max: declare it with min and max",
            )
        )
    return found
