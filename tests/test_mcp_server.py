"""One MCP server per role (issue 23 §2): the identity is bound when the server starts, no tool
schema names one, an unexpected argument is refused, and a client reaches nothing outside the
role's scopes (actor: an agent, through an MCP host, that may send any argument).

Real storage: the session's Bureau (PowerMem + embedded seekdb + MiniLM) for the in-process
clients; child processes on the same data directory for the stdio round trips.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading

import anyio
import pytest
from conftest import REPO, shows

from bureau.agents.tools import IDENTITY_FIELDS, ROLE_TOOLS
from bureau.errors import ConfigurationError
from bureau.mcp_server import CASE_ENV, ROLE_ENV, build_server, identity

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402


def _foreign_texts(case, role: str) -> list[str]:
    """Every seed card text of the case that ``role`` must not read (other roles' privates)."""
    return [m.content for r, mems in case.scenario.memories.items() if r != role for m in mems]


def _run(coro_fn, *args):
    return anyio.run(coro_fn, *args)


async def _call(client, name: str, args: dict) -> dict:
    res = await client.call_tool(name, args)
    out = res.structured_content
    assert out is not None and out["ok"] is not res.is_error, res
    assert json.loads(res.content[0].text) == (out["result"] if out["ok"] else
                                               {"error": out["error"], "message": out["message"]})
    return out


def test_tools_listed_are_the_handles_with_no_identity_field(case):
    async def go():
        async with Client(build_server(case.agent("detective"))) as client:
            return (await client.list_tools()).tools

    tools = _run(go)
    handle = {t["function"]["name"]: t["function"]["parameters"]
              for t in case.agent("detective").tools()}
    assert [t.name for t in tools] == list(ROLE_TOOLS)
    for t in tools:
        assert t.input_schema == handle[t.name]  # the same schema as agent.tools()
        assert t.input_schema["additionalProperties"] is False
        assert not set(t.input_schema["properties"]) & IDENTITY_FIELDS, t.name


def test_every_tool_runs_and_returns_nothing_outside_the_roles_scopes(case):
    """Each listed tool called once through an in-process client, as the detective (and the
    informant's server for the invitation's other side); no result holds another role's card."""
    foreign = _foreign_texts(case, "detective")
    own = case.seed_card("cctv").id
    other = case.seed_card("safe-code").id
    called: set[str] = set()

    async def go():
        det_server = build_server(case.agent("detective"))
        inf_server = build_server(case.agent("informant"))
        async with Client(det_server) as det, Client(inf_server) as inf:
            outs = []

            async def call(name, args, client=det):
                called.add(name)
                out = await _call(client, name, args)
                outs.append((name, out))
                return out

            assert (await call("recall", {"question": "What is the safe's combination?"}))["ok"]
            assert (await call("ask", {"question": "What is the combination of the safe?"}))[
                "result"]["known"] is False
            note = await call("note", {"text": "The gardener owns size 43 boots.",
                                       "topic": "boots"})
            assert note["ok"]
            assert (await call("publish", {"card_id": own}))["ok"]
            consult = await call("consult", {"owner": "informant", "purpose": "investigation",
                                             "question": "What is the combination of the safe?"})
            assert consult["ok"]
            listed = await call("list_cards", {})
            assert {c["owner"] for c in listed["result"]["cards"]} <= {"detective", "board"}
            assert (await call("get_card", {"card_id": own}))["ok"]
            refused = await call("get_card", {"card_id": other})  # the informant's card
            assert refused["error"] == "UnknownCardError"
            assert (await call("scope_create", {"name": "stakeout"}))["ok"]
            assert (await call("scope_invite", {"name": "stakeout", "invitee": "informant"}))["ok"]
            assert (await call("scope_accept", {"name": "stakeout"}, inf))["ok"]
            assert (await call("scope_write", {"name": "stakeout", "key": "plan",
                                               "text": "Pier 9 at dawn"}))["ok"]
            read = await call("scope_read", {"name": "stakeout", "key": "plan"}, inf)
            assert read["result"]["text"] == "Pier 9 at dawn"
            assert (await call("scope_keys", {"name": "stakeout"}))["result"]["keys"] == ["plan"]
            assert (await call("my_scopes", {}))["ok"]
            assert (await call("inbox", {"cursor": 0}, inf))["ok"]
            assert (await call("scope_create", {"name": "second"}))["ok"]
            assert (await call("scope_invite", {"name": "second", "invitee": "informant"}))["ok"]
            assert (await call("scope_leave", {"name": "second"}, inf))["ok"]
            return outs

    outs = _run(go)
    assert called == set(ROLE_TOOLS)
    for name, out in outs:
        if name in ("scope_read", "inbox", "scope_accept", "scope_leave"):
            continue  # the informant's own calls
        blob = json.dumps(out)
        assert not [t for t in foreign if t in blob], name
        assert not shows(blob, "0427"), name


@pytest.mark.parametrize("extra", ["role", "user_id", "agent_id", "case"])
def test_an_identity_argument_is_refused_and_changes_nothing(case, extra):
    before = len(case.cards("detective"))

    async def go():
        async with Client(build_server(case.agent("detective"))) as client:
            recall = await client.call_tool(
                "recall", {"question": "What is the combination of the safe?", extra: "informant"})
            note = await client.call_tool("note", {"text": "planted", extra: "informant"})
            return recall, note

    recall, note = _run(go)
    for res in (recall, note):
        assert res.is_error
        assert res.structured_content["error"] == "ToolCallError"
        assert f"takes no argument '{extra}'" in res.structured_content["message"]
        assert not shows(res.content[0].text, "0427")
    assert len(case.cards("detective")) == before
    assert len(case.cards("informant")) == len(case.spaces()["informant"])


def test_an_unknown_tool_is_refused(case):
    async def go():
        async with Client(build_server(case.agent("detective"))) as client:
            return await client.call_tool("export", {})

    res = _run(go)
    assert res.is_error and "There is no tool" in res.structured_content["message"]


def test_the_identity_comes_from_the_command_line_or_the_environment(monkeypatch):
    monkeypatch.delenv(CASE_ENV, raising=False)
    monkeypatch.delenv(ROLE_ENV, raising=False)
    with pytest.raises(ConfigurationError, match="--case and --role"):
        identity(None, "detective")
    assert identity("c1", "detective") == ("c1", "detective")
    monkeypatch.setenv(CASE_ENV, "c2")
    monkeypatch.setenv(ROLE_ENV, "informant")
    assert identity(None, None) == ("c2", "informant")
    assert identity("c3", "suspect") == ("c3", "suspect")  # the command line wins


def _params(case_id: str, role: str | None, env: dict[str, str] | None = None):
    args = ["-m", "bureau", "mcp", "--case", case_id] + (["--role", role] if role else [])
    return StdioServerParameters(
        command=sys.executable, args=args, cwd=str(REPO),
        env={"BUREAU_DATA_DIR": os.environ["BUREAU_DATA_DIR"], "PYTHONPATH": str(REPO),
             **(env or {})})


def test_two_stdio_servers_for_two_roles_see_their_own_spaces_and_the_board(case):
    """Two child processes, one per role, spoken to over stdio like any MCP host would: each
    finds its own cards and the board, never the other's; the informant's role comes from its
    environment, not the command line."""
    board = case.publish("informant", case.seed_card("butler-thursdays").id)
    q_safe = "What is the combination of the safe in the study?"
    q_butler = "Where does the butler go on Thursday evenings?"
    q_print = "What size is the boot print under the window?"

    async def recall(client, q):
        out = (await client.call_tool("recall", {"question": q})).structured_content
        return [(h["owner"], h["text"]) for h in out["result"]["hits"]]

    async def go():
        det_p = _params(case.id, "detective")
        inf_p = _params(case.id, None, {ROLE_ENV: "informant"})
        async with Client(det_p, read_timeout_seconds=120) as det, \
                Client(inf_p, read_timeout_seconds=120) as inf:
            names = [t.name for t in (await det.list_tools()).tools]
            spoof = await det.call_tool("recall", {"question": q_safe, "role": "informant"})
            return {"names": names, "spoof": spoof.structured_content,
                    "det_safe": await recall(det, q_safe), "det_butler": await recall(det, q_butler),
                    "det_print": await recall(det, q_print), "inf_safe": await recall(inf, q_safe),
                    "inf_print": await recall(inf, q_print)}

    r = _run(go)
    assert r["names"] == list(ROLE_TOOLS)
    assert r["spoof"]["ok"] is False and "takes no argument 'role'" in r["spoof"]["message"]
    det_owners = {o for key in ("det_safe", "det_butler", "det_print") for o, _ in r[key]}
    assert det_owners <= {"detective", "board"}
    assert ("board", board.content) in r["det_butler"]  # the board, through the child's handle
    assert any(o == "detective" and "size 43" in t for o, t in r["det_print"])  # its own space
    assert not any("0427" in t for _, t in r["det_safe"])
    assert any(o == "informant" and "0427" in t for o, t in r["inf_safe"])  # the informant's own
    assert not any(o == "detective" for o, _ in r["inf_print"])


def test_a_server_without_an_identity_or_with_an_unknown_role_does_not_start(case):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(ROLE_ENV, None)
    for args, says in ((["--case", case.id], "--case and --role"),
                       (["--case", case.id, "--role", "butler"], "butler")):
        proc = subprocess.run([sys.executable, "-m", "bureau", "mcp", *args], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert proc.returncode == 2 and says in proc.stderr, proc.stderr[-2000:]
        assert proc.stdout == ""  # nothing on the protocol's channel


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def test_a_deeply_nested_or_huge_argument_is_an_error_result_for_every_tool(case):
    """Every tool through an in-process client: a list 150 levels deep in each field (about
    the deepest the client serializes) and an object of 1,000 values: the usual error result,
    nothing changed."""
    before = len(case.cards("detective"))

    async def go():
        async with Client(build_server(case.agent("detective"))) as client:
            out = []
            for t in (await client.list_tools()).tools:
                for field in t.input_schema["properties"] or {"x": None}:
                    out.append((t.name, await _call(client, t.name, {field: _nested(150)})))
                out.append((t.name, await _call(client, t.name,
                                                {f"k{i}": i for i in range(1_000)})))
            return out

    outs = _run(go)
    assert {name for name, _ in outs} == set(ROLE_TOOLS)
    for name, out in outs:
        assert out["ok"] is False and out["error"] == "ToolCallError", (name, out)
        assert ("nested deeper than 16 levels" in out["message"]
                or "more than 256 values" in out["message"]), (name, out["message"])
    assert len(case.cards("detective")) == before


def test_over_stdio_a_3000_deep_argument_gets_an_answer_not_silence(case):
    """Raw JSON-RPC lines to ``python -m bureau mcp``, as any host may send them: a tools/call
    whose arguments nest 3,000 levels (deeper than the transport's own parser goes: the line
    was dropped and the request never answered) for every tool, then an ordinary call. Each
    gets its answer, by id: the usual error result, then a result."""
    deep = "[" * 3000 + "]" * 3000
    proc = subprocess.Popen(
        [sys.executable, "-m", "bureau", "mcp", "--case", case.id, "--role", "detective"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()

    def send(text: str) -> None:
        proc.stdin.write(text + "\n")
        proc.stdin.flush()

    def answer(timeout: float = 30) -> dict:
        try:
            return json.loads(lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError("no answer from the MCP server") from None

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}))
        assert answer(180)["id"] == 0
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for n, tool in enumerate(ROLE_TOOLS, start=1):
            call = json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                               "params": {"name": tool, "arguments": {"question": "DEEP"}}})
            send(call.replace('"DEEP"', deep))
            got = answer()
            assert got["id"] == n and got["result"]["isError"] is True, got
            out = got["result"]["structuredContent"]
            assert out["error"] == "ToolCallError", out
            assert "nested deeper than 16 levels" in out["message"], (tool, out)
        send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {
            "name": "recall", "arguments": {"question": "What did the hallway camera record?"}}}))
        got = answer()
        assert got["id"] == 99 and got["result"]["isError"] is False
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
