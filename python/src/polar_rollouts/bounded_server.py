"""A threading HTTP server that holds a bounded number of connections and drops the ones that
send nothing or stall (issue 49 item 5).

``ThreadingHTTPServer`` gives every accepted connection a thread for as long as the peer keeps
it open: 500 connections that never sent a byte held 503 threads and 506 descriptors for good.
Here, before any byte of a request is read (so before any credential is checked):

- at most ``max_connections`` are held at once; one more is answered ``503`` and closed at once;
- a request's head must arrive within ``idle_s`` of the connection opening (or of the previous
  answer, on a kept-alive connection), and its body within ``idle_s`` plus a second per MB:
  a peer that sends nothing, or one byte at a time, is cut off then.

Only reading a request is bounded in time: a handler may then take as long as its work does
(NeMo Gym's ``/run`` waits for a whole session).
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_MAX_CONNECTIONS = 1024
DEFAULT_IDLE_SECONDS = 20.0
_BUSY = b"HTTP/1.1 503 too many connections\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class BoundedHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 makes a burst of connections wait a SYN retry (1 s+):
    # they are taken at once and then counted against the bound instead.
    request_queue_size = 1024

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        idle_s: float = DEFAULT_IDLE_SECONDS,
    ) -> None:
        if max_connections < 1 or idle_s <= 0:
            raise ValueError("max_connections must be >= 1 and idle_s > 0")
        super().__init__(address, handler)
        self.max_connections = max_connections
        self.idle_s = idle_s
        self.refused = 0  # connections over the bound
        self.dropped = 0  # connections cut off by the deadline (single stalled reads end by timeout)
        self._slots = threading.BoundedSemaphore(max_connections)
        self._deadlines: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        threading.Thread(target=self._reap, name="polar-idle-reaper", daemon=True).start()

    # -- the connection bound -----------------------------------------------------------------

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            try:
                request.setblocking(False)
                request.send(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            self.arm(request)
            super().process_request(request, client_address)
        except BaseException:
            self.disarm(request)
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.disarm(request)
            self._slots.release()

    # -- the read deadline ----------------------------------------------------------------------

    def arm(self, conn: socket.socket, extra_s: float = 0.0) -> None:
        """From now, ``conn`` must deliver what is being read within ``idle_s + extra_s``."""
        with self._lock:
            self._deadlines[conn] = time.monotonic() + self.idle_s + extra_s

    def disarm(self, conn: socket.socket) -> None:
        with self._lock:
            self._deadlines.pop(conn, None)

    def _reap(self) -> None:
        tick = min(1.0, self.idle_s / 4)
        while not self._closing.wait(tick):
            now = time.monotonic()
            with self._lock:
                late = [c for c, at in self._deadlines.items() if at <= now]
                for c in late:
                    del self._deadlines[c]
            for conn in late:
                self.dropped += 1
                try:
                    # The handler's blocked read returns: its thread ends and frees the slot.
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A peer cut off (by the reaper, or gone) breaks the handler's last write: not an error.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)

    def server_close(self) -> None:
        self._closing.set()
        super().server_close()


class BoundedHandler(BaseHTTPRequestHandler):
    """A handler whose request heads are read under the server's deadline; a subclass calls
    ``head_read()`` once it has the head and ``read_body(n)`` for the body."""

    server: BoundedHTTPServer

    def setup(self) -> None:
        super().setup()
        # Every single read or write also gives up after idle_s (a peer that stops reading).
        self.connection.settimeout(self.server.idle_s)

    def handle_one_request(self) -> None:
        self.server.arm(self.connection)
        try:
            super().handle_one_request()
        finally:
            self.server.disarm(self.connection)

    def head_read(self) -> None:
        self.server.disarm(self.connection)

    def read_body(self, length: int) -> bytes:
        self.server.arm(self.connection, extra_s=length / 1e6)
        try:
            return self.rfile.read(length)
        finally:
            self.server.disarm(self.connection)
