"""One tool call in a fresh process, and what it cost: for tests/test_resource_bombs.py.

    python -m tests.bomb_driver < request.json

The request is JSON: {"policy": <a Policy, as the operator's YAML gives it>, "calls": [{"tool":
name, "arguments": {...}}, ...]}. Each call goes through the Executor and the Registry of the
policy's ops tools, as the model's calls do (arguments parsed and validated, the tool run on its
own thread under a timeout, the result redacted and made inert). One JSON line is printed: each
result as the model sees it (with its status) and its wall time, and the process's peak resident
set (VmHWM) before the first call (the imports, the policy and the executor) and after the last.

A process of its own: a peak never goes down, so a peak read in the test process would hold
whatever the suite did before; here the growth is the calls' alone (the largest of them, when
there are several).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

from opsbot.config.policy import Policy
from opsbot.tools.base import Registry
from opsbot.tools.catalog import ops_tools
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall

# RetryPolicy's own default: what a tool without a timeout of its own (query_logs on files,
# read_config) gets in production. No retries: one call is measured.
EXECUTOR_TIMEOUT_S = 30.0


def peak_mb() -> float:
    """This process's peak resident set so far, in MiB: VmHWM, the high-water mark of the address
    space exec gave it. Not ru_maxrss: Linux carries that over from the process that forked it
    (here the test run, 136 MB at the time), so every call of a small child read as growing by 0."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # no procfs: the best there is


def call(executor: Executor, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The call as the model makes it, and its result as the model sees it, with its status."""
    outcome = executor.run_one(ToolCall("bomb", tool, json.dumps(arguments)))
    result: dict[str, Any] = outcome.result.model_dump(mode="json")
    result["status"] = outcome.result.status.value
    return result


def main() -> None:
    request = json.load(sys.stdin)
    policy = Policy.model_validate(request["policy"])
    executor = Executor(Registry(ops_tools(policy)), RetryPolicy(timeout_s=EXECUTOR_TIMEOUT_S, retries=0))
    baseline = peak_mb()
    calls = []
    for asked in request["calls"]:
        begun = time.monotonic()
        result = call(executor, asked["tool"], asked["arguments"])
        calls.append({"result": result, "seconds": time.monotonic() - begun})
    print(json.dumps({"calls": calls, "baseline_mb": baseline, "peak_mb": peak_mb()}))


if __name__ == "__main__":
    main()
