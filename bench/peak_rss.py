"""Run a command as a child and report that child's own peak RSS, CPU time and wall time.

    python -S bench/peak_rss.py REPORT.json COMMAND [ARGS...]

Writes {"wall": s, "peak_rss_mb": MB, "cpu": s, "returncode": n} to REPORT.json (CPU is user +
system, of the command and any children it waited for) and exits with the command's exit code.

Why a wrapper: on Linux a process's max RSS starts from what it had mapped when it was created:
a forked child starts with its parent's current RSS, and one started by `subprocess` (vfork)
with its parent's *peak*. A measuring process that has grown would inflate every figure. This one
stays small and creates the child with a plain fork, so the figure is the command's own, with a
floor of this wrapper's RSS (about 8 MB with `-S`).
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> int:
    report, command = sys.argv[1], sys.argv[2:]
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    with open(report, "w") as handle:
        json.dump({"wall": wall, "peak_rss_mb": usage.ru_maxrss / 1024, "cpu": usage.ru_utime + usage.ru_stime, "returncode": code}, handle)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
