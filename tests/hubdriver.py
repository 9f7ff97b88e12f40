"""Drives a JupyterHub through its REST API and a kernel's websocket, as a learner's browser
would, for tests/test_hub.py (and by hand: see hub/README.md).

A small client of our own rather than a browser: the test needs to start two learners' servers,
run a lesson's code cells in each and read what each kernel printed, which the hub's API and the
Jupyter kernel protocol give directly.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import requests
import websocket


@dataclass
class Hub:
    url: str  # http://127.0.0.1:PORT
    token: str

    def _api(self, method: str, path: str, **kw) -> requests.Response:
        r = requests.request(method, f"{self.url}/hub/api{path}", timeout=60,
                             headers={"Authorization": f"token {self.token}"}, **kw)
        return r

    def start(self, user: str, timeout: float = 180) -> None:
        """Create the user (if new) and start its server; wait until the hub says it is ready."""
        r = self._api("POST", f"/users/{user}")
        if r.status_code not in (201, 409):
            r.raise_for_status()
        r = self._api("POST", f"/users/{user}/server")
        if r.status_code not in (201, 202, 400):
            raise RuntimeError(f"starting {user}'s server: HTTP {r.status_code} {r.text[:300]}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            model = self._api("GET", f"/users/{user}").json()
            server = (model.get("servers") or {}).get("", {})
            if server.get("ready"):
                return
            time.sleep(0.5)
        raise TimeoutError(f"{user}'s server was not ready in {timeout:.0f} s")

    def stop(self, user: str) -> None:
        self._api("DELETE", f"/users/{user}/server")

    def kernel(self, user: str) -> Kernel:
        base = f"{self.url}/user/{user}"
        r = requests.post(f"{base}/api/kernels", json={"name": "python3"}, timeout=60,
                          headers={"Authorization": f"token {self.token}"})
        r.raise_for_status()
        kid = r.json()["id"]
        ws_url = base.replace("http://", "ws://") + f"/api/kernels/{kid}/channels"
        ws = websocket.create_connection(ws_url, timeout=300,
                                         header=[f"Authorization: token {self.token}"])
        return Kernel(ws)


@dataclass
class Kernel:
    ws: websocket.WebSocket

    def run(self, code: str, timeout: float = 300) -> tuple[str, str | None]:
        """Execute ``code``; return (everything it printed or displayed as text, error or None)."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                       "session": uuid.uuid4().hex, "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
        }))
        out: list[str] = []
        error: str | None = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                out.append(content["data"].get("text/plain", ""))
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out), error
        raise TimeoutError("the kernel did not finish in time")

    def run_notebook(self, path: Path, parameters: str = "") -> list[str]:
        """Run a lesson's code cells in order, as "Run all" would; return the errors met."""
        nb = json.loads(path.read_text(encoding="utf-8"))
        errors = []
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            if "parameters" in cell.get("metadata", {}).get("tags", []) and parameters:
                source += "\n" + parameters
            _, err = self.run(source)
            if err:
                errors.append(err)
                break
        return errors

    def close(self) -> None:
        self.ws.close()
