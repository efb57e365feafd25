"""An engine that answers as NeMo RL's vLLM HTTP server does (NVIDIA-NeMo/RL 7ea279ab,
`nemo_rl/models/generation/vllm/vllm_worker_async.py`, `_setup_vllm_server`): a FastAPI app with
`POST /v1/chat/completions` and `POST /tokenize` and FastAPI's own docs routes, so no `GET /health`
(404), and 405 for another method on a route it has. The two POST routes are sampled by a dry-run
policy behind it. Written from that behaviour, not from its code."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

POSTS = frozenset({"/v1/chat/completions", "/tokenize"})
GETS = frozenset({"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
HOP_BY_HOP = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding"})


@contextmanager
def nemo_rl_shaped(policy_url: str) -> Iterator[str]:
    """Yields the base URL of a NeMo RL-shaped server in front of ``policy_url``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: object) -> None:
            pass

        def answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def route(self) -> str:
            return self.path.split("?", 1)[0]

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.route() not in POSTS:
                return self.refuse()
            # Every header as sent (the proxy's session header among them: a real engine ignores it,
            # the dry-run policy picks its script alternative by it), bar the connection's own.
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            ask = urllib.request.Request(policy_url + self.route(), data=body, method="POST", headers=headers)
            try:
                with urllib.request.urlopen(ask, timeout=120) as got:
                    self.answer(got.status, got.read(), got.headers.get("content-type", "application/json"))
            except urllib.error.HTTPError as err:
                self.answer(err.code, err.read(), err.headers.get("content-type", "application/json"))

        def do_GET(self) -> None:
            if self.route() in GETS:
                return self.answer(200, json.dumps({"openapi": "3.1.0", "paths": {}}).encode())
            self.refuse()

        def refuse(self) -> None:
            if self.route() in POSTS | GETS:
                return self.answer(405, b'{"detail":"Method Not Allowed"}')
            self.answer(404, b'{"detail":"Not Found"}')

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
