"""One MCP server per role: ``python -m bureau mcp --case <id> --role <role>`` (issue 23 §2).

An agent host that speaks the Model Context Protocol gets the same tools as ``agent.tools()``,
over stdio. The identity is bound when the process starts (the command line, or
``BUREAU_MCP_CASE`` / ``BUREAU_MCP_ROLE`` in its environment) and held as an
:class:`~bureau.service.agent.Agent` handle: no tool schema has a field that names a role, a
case or a user, so a model that obeys any text it reads has no field to put another identity
into. Many memory tool servers take ``user_id`` / ``agent_id`` as tool arguments and so let the
model pick whose memory it reads; one process per principal is the convention that holds.

Built on the official ``mcp`` package's low-level :class:`mcp.server.Server`, because its
higher-level server silently drops an argument the schema does not name: here the raw
arguments go to the handle's ``call_tool``, which refuses any field it was not offered (the
schemas also say ``additionalProperties: false``, so a validating client refuses first). A
refused call comes back as an MCP tool error the model can read, and changes nothing.

A tool call's arguments are parsed by the handle with a depth and a size limit (see
:mod:`bureau.agents.tools`). Over stdio, a message nested deeper than the ``mcp`` transport
parses (about 200 levels: pydantic's JSON parser) would never reach the handle: the transport
drops the line, the request gets no answer and the client waits for ever. So each line from
the client is first cut to :data:`WIRE_DEPTH` levels (what lies deeper becomes ``[]``): the
message parses, the request keeps its id, and the handle refuses the still too deep arguments
with its usual error result.

The ``mcp`` package is an optional extra (``pip install 'bureau[mcp]'``); the core course does
not need it.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import AsyncIterable, AsyncIterator
from typing import TYPE_CHECKING, Any

from .agents.tools import MAX_ARGUMENT_DEPTH, json_depth, json_structure
from .errors import ConfigurationError

if TYPE_CHECKING:
    from mcp.server import Server

    from .service.agent import Agent

CASE_ENV = "BUREAU_MCP_CASE"
ROLE_ENV = "BUREAU_MCP_ROLE"
SERVER_NAME = "bureau"
WIRE_DEPTH = 64
"""Deepest nesting a line from the client keeps (the envelope takes 3 levels: deeper than the
tools' limit, shallower than what the transport's parser accepts)."""
assert MAX_ARGUMENT_DEPTH + 3 < WIRE_DEPTH < 190


def cut_deep(line: str, depth: int = WIRE_DEPTH) -> str:
    """``line`` with every array or object nested deeper than ``depth`` replaced by ``[]``
    (strings skipped, one pass, no recursion); a line within ``depth`` comes back as it is."""
    if line.count("[") + line.count("{") <= depth or json_depth(line) <= depth:
        return line
    out: list[str] = []
    level = 0
    skipping = 0  # > 0: inside a cut value, its own nesting level
    for ch, structural in json_structure(line):
        if structural and ch in "[{":
            if skipping:
                skipping += 1
                continue
            if level == depth:
                skipping = 1
                out.append("[]")
                continue
            level += 1
        elif structural and ch in "]}":
            if skipping:
                skipping -= 1
                continue
            level -= 1
        if not skipping:
            out.append(ch)
    return "".join(out)


class _CutLines:
    """The client's lines, each through :func:`cut_deep` (what ``stdio_server`` reads)."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines

    def __aiter__(self) -> AsyncIterator[str]:
        return self._cut()

    async def _cut(self) -> AsyncIterator[str]:
        async for line in self._lines:
            yield cut_deep(line)


def _mcp() -> tuple[Any, Any]:
    """The ``mcp`` package's server class and types, or a typed error naming the extra."""
    try:
        import mcp_types
        from mcp.server import Server
    except ImportError as exc:  # pragma: no cover - the extra is installed in every test venv
        raise ConfigurationError(
            f"The MCP server needs the 'mcp' package ({exc}).",
            "Install the extra: pip install 'bureau[mcp]'.") from None
    return Server, mcp_types


def identity(case: str | None, role: str | None) -> tuple[str, str]:
    """Case and role from the command line, else from the environment; both are required.

    Read once, when the server starts: nothing a client sends later can change them.
    """
    case = case or os.environ.get(CASE_ENV) or None
    role = role or os.environ.get(ROLE_ENV) or None
    if not case or not role:
        raise ConfigurationError(
            "An MCP server serves one role of one case, named when it starts.",
            f"Pass --case and --role (or set {CASE_ENV} and {ROLE_ENV}).")
    return case, role


def build_server(agent: Agent) -> Server:
    """An MCP server whose tools are ``agent``'s: listed from ``agent.tools()``, run by
    ``agent.call_tool`` with the raw arguments the client sent.

    Calls run on the event loop's thread, one at a time: the bureau's store and ledger
    connections are per process and per thread, and a stdio server has one client.
    """
    server_cls, types = _mcp()
    tools = [types.Tool(name=f["name"], description=f["description"],
                        input_schema=f["parameters"])
             for f in (t["function"] for t in agent.tools())]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        # ``params.arguments`` is exactly what the client sent: nothing filtered, nothing
        # added. The handle refuses an unknown tool or an argument it did not offer.
        out = agent.call_tool(params.name, params.arguments or {})
        text = json.dumps(out.get("result") if out["ok"] else
                          {"error": out["error"], "message": out["message"]}, default=str)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=out, is_error=not out["ok"])

    return server_cls(SERVER_NAME, version=_version(),
                      instructions=f"The memory tools of role {agent.name!r} of case "
                                   f"{agent.case_id!r}. You act as this role only.",
                      on_list_tools=list_tools, on_call_tool=call_tool)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bureau")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "0"


def serve_stdio(case_id: str | None = None, role: str | None = None) -> int:
    """Open the bureau, hold the role's handle and serve it over stdin/stdout until the client
    closes. Nothing is written to stdout but the protocol."""
    import anyio
    from mcp.server.stdio import stdio_server

    from .service import Bureau

    case_id, role = identity(case_id, role)
    agent = Bureau.open().case(case_id).agent(role)  # an unknown case or role stops here
    server = build_server(agent)

    # The protocol's stdin, read through the cut; fd 0 itself then reads the null device (as
    # stdio_server does for the stdin it claims), so nothing else consumes the client's bytes.
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    stdin = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire, "rb"), encoding="utf-8",
                                             errors="replace"))

    async def main() -> None:
        async with stdio_server(stdin=_CutLines(stdin)) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    return 0


__all__ = ["CASE_ENV", "ROLE_ENV", "WIRE_DEPTH", "build_server", "cut_deep", "identity",
           "serve_stdio"]
