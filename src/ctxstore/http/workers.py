"""Worker processes that end with their parent, however the parent ends.

``ctxstore serve --workers N`` runs a supervisor whose workers share its listening
socket.  When the supervisor is killed (SIGKILL, the OOM killer), nothing tells the
workers: they keep the port, and a restart fails with "Address already in use".  On
Linux each worker asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``),
so it stops accepting at once, finishes its requests in flight and exits.  Elsewhere a
thread watches the parent's pid instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import multiprocessing
import os
import signal
import sys
import threading

log = logging.getLogger("ctxstore.http")

_PR_SET_PDEATHSIG = 1
#: How often the portable watch looks at the parent (seconds).
_WATCH_INTERVAL = 1.0


def end_with_parent() -> None:
    """In a worker process (a no-op in a process nobody spawned): SIGTERM to itself
    once its parent is gone."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.pid is None:
        return
    if not _ask_the_kernel():
        threading.Thread(
            target=_watch, args=(parent.pid,), name="ctxstore-parent-watch", daemon=True
        ).start()
    # The parent may have died before the request above: the signal would never come.
    if os.getppid() != parent.pid:
        _terminate()


def _ask_the_kernel() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        threading.Event().wait(_WATCH_INTERVAL)
    _terminate()


def _terminate() -> None:
    log.warning("the supervisor process is gone: this worker stops")
    os.kill(os.getpid(), signal.SIGTERM)
