"""An engine that answers as NeMo RL's vLLM HTTP server does (NVIDIA-NeMo/RL 7ea279ab,
`nemo_rl/models/generation/vllm/vllm_worker_async.py`, `_setup_vllm_server`): a FastAPI app with
`POST /v1/chat/completions` and `POST /tokenize` and FastAPI's own docs routes, so no `GET /health`
(404), and 405 for another method on a route it has. The two POST routes are sampled by a dry-run
policy behind it. Written from that behaviour, not from its code.

Its chat route also refuses what NeMo RL's on-policy check refuses (the asserts before
`create_chat_completion` in `_setup_vllm_server`'s chat handler): a `top_k` other than unset or -1,
an unset `top_p`, or a (temperature, top_p) that is neither the run's train nor its validation
profile. An assert there is an unhandled error, so the answer is a 500."""

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


# (temperature, top_p) of NeMo RL's generation config: the train profile and the validation one.
Profile = tuple[float, float]


def off_policy(request: dict[str, object], train: Profile, val: Profile) -> str | None:
    """Why NeMo RL's server would refuse this chat request's sampling, or None."""
    if request.get("top_k") not in (None, -1):
        return f"Top k sampling parameter must be unset, empty, or -1. Got `{request.get('top_k')}`"
    if request.get("top_p") is None:
        return "top_p must be set explicitly on NeMo-RL requests"
    asked = (request.get("temperature"), request["top_p"])  # vLLM leaves an unset temperature None
    if asked not in (train, val):
        return f"request sampling {asked} matches neither the train sampling params {train} nor the validation ones {val}"
    return None


@contextmanager
def nemo_rl_shaped(policy_url: str, train: Profile, val: Profile, refused: list[str]) -> Iterator[str]:
    """Yields the base URL of a NeMo RL-shaped server in front of ``policy_url``, serving the
    ``train`` and ``val`` sampling profiles; each chat call it refuses adds its reason to ``refused``."""

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
            if self.route() == "/v1/chat/completions":
                why = off_policy(json.loads(body or b"{}"), train, val)
                if why:
                    refused.append(why)
                    return self.answer(500, b"Internal Server Error", "text/plain; charset=utf-8")
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
