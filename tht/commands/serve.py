"""``tht serve [--host H] [--port P]`` and ``tht serve token add | list | revoke`` (docs/web.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation

app = typer.Typer(
    help="The reviewer web UI: `tht serve` runs it; `tht serve token` manages sign-in tokens.",
    invoke_without_command=True,
)
token_app = typer.Typer(help="Reviewer sign-in tokens (solo mode, without signed decisions).")
app.add_typer(token_app, name="token")

ReviewerArg = Annotated[str, typer.Argument(help="The reviewer: human:<id>.")]
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@app.callback()
def serve(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (default: loopback only).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port (0: any free port).")] = 8765,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Serve the reviewer pages and the JSON API for this workspace until interrupted."""
    if ctx.invoked_subcommand is not None:
        return
    import socket

    from kernel.errors import UnavailableError, UsageError
    from kernel.workspace import open_workspace

    inv = invocation(workspace, json_, debug)
    root = open_workspace(inv.workspace).root  # not a workspace: exit 3 before binding
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: expected 0-65535")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise UnavailableError(f"cannot listen on {host}:{port}: {err.strerror or err}") from err
    sock.listen(128)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/"
    if host not in LOOPBACK:
        inv.note(
            f"warning: listening on {host}, not loopback: anyone who can reach it can try to "
            "sign in, and nothing here is encrypted (put TLS in front)"
        )
    inv.emit({"url": url, "workspace": str(root)}, f"tht serve: {url} (workspace {root})")
    import sys

    sys.stdout.flush()
    import uvicorn

    from tht.web.app import create_app

    config = uvicorn.Config(
        create_app(root, hosts=(host,)),
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        timeout_graceful_shutdown=2,
    )
    uvicorn.Server(config).run(sockets=[sock])


@token_app.command("add")
def token_add(
    reviewer: ReviewerArg,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """A new sign-in token for REVIEWER, printed once (stored hashed; human-only)."""
    from kernel.workspace import open_workspace
    from tht.commands._common import human_actor
    from tht.composition import clock_from_env
    from tht.web.tokens import TokenStore

    inv = invocation(workspace, json_, debug)
    who = human_actor(reviewer, label="REVIEWER")
    ws = open_workspace(inv.workspace)
    from kernel.clock import format_ts

    created = format_ts(clock_from_env(ws.state_dir).now())
    record, token = TokenStore(ws.state_dir).add(who, created=created)
    inv.emit(
        {"reviewer": who, "token": token, "id": record.id},
        f"token for {who} (shown once; `tht serve token revoke {who}` withdraws it):\n{token}",
    )


@token_app.command("list")
def token_list(
    workspace: WorkspaceOpt = None, json_: JsonOpt = False, debug: DebugOpt = False
) -> None:
    """The tokens of this workspace: id, reviewer, created (never the tokens themselves)."""
    from kernel.workspace import open_workspace
    from tht.web.tokens import TokenStore

    inv = invocation(workspace, json_, debug)
    records = TokenStore(open_workspace(inv.workspace).state_dir).records()
    rows = [{"id": r.id, "reviewer": r.reviewer, "created": r.created} for r in records]
    if inv.json or not rows:
        inv.emit(rows, "no tokens")
        return
    from tht.render import render_table

    inv.emit(rows, render_table(["id", "reviewer", "created"], [list(r.values()) for r in rows]))


@token_app.command("revoke")
def token_revoke(
    reviewer: ReviewerArg,
    token_id: Annotated[
        str | None, typer.Option("--id", help="Only this token (default: all of REVIEWER's).")
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Withdraw REVIEWER's tokens (a running server refuses them at once; human-only)."""
    from kernel.workspace import open_workspace
    from tht.commands._common import human_actor
    from tht.web.tokens import TokenStore

    inv = invocation(workspace, json_, debug)
    who = human_actor(reviewer, label="REVIEWER")
    gone = TokenStore(open_workspace(inv.workspace).state_dir).revoke(who, token_id=token_id)
    inv.emit(
        {"reviewer": who, "revoked": [r.id for r in gone]},
        f"revoked {len(gone)} token(s) of {who}",
    )
