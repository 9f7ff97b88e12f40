"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for the opt-in LLM and embedding paths.

It runs the real ``openai`` client code against a real socket, with replies the test chooses.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    """Records request bodies. Chat replies come from ``replies`` (a string, or an HTTP status);
    embeddings are deterministic pseudo-vectors of ``dims`` numbers per input."""

    def __init__(self, dims: int = 8) -> None:
        self.dims = dims
        self.requests: list[dict] = []
        self.replies: list[str | int] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _vector(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [b / 255 - 0.5 for b in digest[: self.dims]]

    def _respond(self, path: str, body: dict) -> tuple[int, dict | None]:
        if path.endswith("/embeddings"):
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = [{"object": "embedding", "index": i, "embedding": self._vector(t)}
                    for i, t in enumerate(inputs)]
            return 200, {"object": "list", "data": data, "model": body["model"],
                         "usage": {"prompt_tokens": 0, "total_tokens": 0}}
        reply = self.replies.pop(0) if self.replies else 500
        if isinstance(reply, int):
            return reply, None
        return 200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": reply}}]}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                status, payload = fake._respond(self.path, body)
                data = json.dumps(payload).encode() if payload is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
