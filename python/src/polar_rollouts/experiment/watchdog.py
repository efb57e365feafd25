"""The experiment's watchdog (``stack.Watchdog``): reads process-group ids from stdin, one a line;
at end of file (the experiment's process is gone, its pipe closed by the kernel) it stops every
group: SIGTERM, up to ``argv[1]`` seconds (20) for them to exit (vLLM stops its engine core, polar serve its sessions),
then SIGKILL. A ``release`` line (a normal stop, the groups already stopped) ends it quietly."""

from __future__ import annotations

import os
import signal
import sys
import time


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def stop_groups(groups: list[int], grace_s: float = 20.0) -> None:
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(g) for g in groups):
        time.sleep(0.2)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main() -> int:
    # Ctrl-C reaches the terminal's process group, not this session; ignore it anyway, so only
    # the pipe decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    groups: list[int] = []
    for line in sys.stdin:
        word = line.strip()
        if word == "release":
            return 0
        if word.isdigit():
            groups.append(int(word))
    stop_groups(groups, float(sys.argv[1]) if len(sys.argv) > 1 else 20.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
