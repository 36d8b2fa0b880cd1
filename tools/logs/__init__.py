"""query_logs: the newest matching entries of a service's log files, read from the end. An entry
is a line with the lines that continue it, such as its stack trace (entries.py): filters judge
it whole, counts count it once, and the result shows it whole (a long one cut, the cut said).

A query runs over the service's files (globs and rotated siblings) newest data first. Plain files
are read backwards in blocks and .gz files are streamed forwards (gzip cannot be read backwards).
Each block is searched as a whole, at C speed, for lines that may match (a level word, the
substring, the regex); only those lines are checked one by one, so sparse matches in a huge file
cost little more than reading it. Time filters judge a block by its first and last timestamps, so
only blocks at the edges of the range are looked at line by line, and a plain file whose newest
lines are after `until` is bisected to where `until` is instead of being read down to it.

Every scan is capped in bytes read and wall time; a capped scan still answers and says that its
count is a lower bound. A regex refused for its shape (nested repetition, overlapping literal
alternatives under a repeat such as (a|aa)+) never runs. The query has one deadline (SCAN_SECONDS):
every regex search is boxed by min(REGEX_SEARCH_SECONDS, what is left) and the line loop checks it.
A single search past REGEX_SEARCH_SECONDS ends the query with a `timeout` result; running out of
the deadline answers with what was found ("at least"), or `timeout` (not retryable) if a regex
had found nothing yet.

Files: files.py opens each file with O_NONBLOCK|O_CLOEXEC, and O_NOFOLLOW except for a path
written out in the policy (the operator's word; followed), then requires by fstat the regular
file that was listed. The modules: args (what the model gives), filters (the query made ready
for matching), time (since/until, timestamps), entries (which lines continue an entry), levels
(the level names, their spellings and numbers: parse_level for a level someone gives, level
words in lines), match (levels, substring, regex), files (discovery, safe open, readers), scan
(the scan and its caps), sources (journald, log_command), query (the tool and the result). The
rest of opsbot imports the names below from here.

Two more sources (config/policy/services.py has their format), both run through tools/runner.py
(no shell, no stdin, minimal environment, process group killed on timeout, output capped):

- `journald` units: one run of
  `journalctl --no-pager --quiet --output=short-iso-precise --reverse --lines=JOURNAL_ENTRIES
  --unit=U... [--since=@EPOCH] [--until=@EPOCH] [--priority=err|warning|info|debug]`.
  The minimum level is journald's own priority (the short output shows none, so level words in
  the text are not looked for); since/until are passed to journalctl and checked again on each
  line's timestamp, with substring and regex, by the same matcher as files. The output is read
  newest entry first and only its head is kept (`Sandbox(keep="head")`), so a cap drops the
  oldest entries, never a stretch in the middle; entries (with their indented continuation
  lines) are then put back in time order. journalctl is found on the fixed system PATH when the
  tool is built (`query_logs_tool(policy, journalctl=...)` names another binary: tests only).
- `log_command`: a command of `policy.commands`, prepared by the run_command machinery
  (`CommandBook`: access, typed parameters, resolved executable) and run with its own timeout
  and output cap, keeping the tail (its output is oldest first). Contract: query_logs fills the
  parameter `since` with the query's since as whole seconds before now plus `s` (`7200s`) and
  `lines` with how many newest lines to fetch (the parameter's max, at most COMMAND_LINES);
  other parameters take their defaults. The asker needs the service's and the command's access;
  a missing, `risk: write` or unfillable command is found when the tool is built and answered
  with `unavailable` (Policy does not check it yet). Every filter, level words included, is
  opsbot's own, as for files.

A failing run is `unavailable` with a short excerpt of what it printed (redacted), a run past
its timeout is `timeout`. With several sources, each is read on its own, their lines are merged
by timestamp (an untimed line keeps its place after the line before it) and the newest `limit`
shown; a failing source is a note as long as another one answered.
"""

from ..durations import duration_seconds
from .args import QueryLogsArgs
from .files import log_files
from .levels import LEVELS, Level, misspelling_of, parse_level
from .query import query_logs, query_logs_tool
from .sources import Readers, readers_for
from .time import TIME_HINT, time_arg

__all__ = [
    "LEVELS",
    "Level",
    "QueryLogsArgs",
    "Readers",
    "TIME_HINT",
    "duration_seconds",
    "log_files",
    "misspelling_of",
    "parse_level",
    "query_logs",
    "query_logs_tool",
    "readers_for",
    "time_arg",
]
