"""Run a command as a child and print its peak resident memory (VmHWM) to stderr as `peak_mb=N`."""

from __future__ import annotations

import resource
import subprocess
import sys


def main() -> int:
    proc = subprocess.run(sys.argv[1:])
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"peak_mb={peak_kb / 1024:.1f}", file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
