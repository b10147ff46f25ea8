"""The reviewer web UI: ``tht serve`` (ARCHITECTURE §5, docs/web.md, docs/security.md).

Server-rendered pages (Jinja2, autoescaped) with one small local script for live updates; every
asset is served from this package under a strict Content-Security-Policy (no inline script or
style, no other origin). Every action goes through the same functions as the CLI
(:mod:`tht.reviewer_actions`), on the state the kernel folds from the verified ledger.

Who answers: the signed-in reviewer of the browser session (:mod:`tht.web.auth`) — a token in
solo mode (:mod:`tht.web.tokens`), the reviewer key's passphrase in signed mode, the key then held
unlocked in this process's memory for that browser session only, so each answer is a signed human
event. The JSON API (:mod:`tht.web.api`) takes ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernel.errors import PolicyError, ThtError, UsageError
from tht.web.auth import BrowserSession, Sessions, Throttle

__all__ = ["WebContext", "create_app", "http_status"]

COOKIE = "tht_session"
PRE_COOKIE = "tht_pre"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
MAX_FORM_BYTES = 256 * 1024
#: what a redirect after an action may say (a fixed text per code: never reflected input)
DONE = {
    "answered": "Your answer is recorded.",
    "retracted": "The decision is retracted.",
    "skipped": "The stage is skipped.",
    "reopened": "The stage is reopened; later results are stale.",
    "paused": "The session is paused.",
    "resumed": "The session is resumed.",
    "finalized": "The session is finalized.",
}


def http_status(err: ThtError) -> int:
    """An exit code (ARCHITECTURE §5) as an HTTP status."""
    return {2: 400, 3: 404, 4: 409, 5: 403, 6: 503, 7: 423}.get(err.exit_code, 500)


@dataclass
class WebContext:
    """What one server process holds: the workspace, its browser sessions, the write lock."""

    root: Path
    sessions: Sessions = field(default_factory=Sessions)
    throttle: Throttle = field(default_factory=Throttle)
    write_lock: threading.Lock = field(default_factory=threading.Lock)
    templates: Any = None

    def app_for(self, browser: BrowserSession | None) -> Any:
        """The composed App for one request; in signed mode only ``browser``'s unlocked key
        signs, and only that reviewer's events."""
        from tht.composition import open_app

        def unlock(reviewer: str) -> Any:
            key = browser.key if browser is not None else None
            if key is None or key.reviewer != reviewer:
                raise PolicyError(
                    "this workspace records signed human decisions: sign in to the page with "
                    "your reviewer key's passphrase (a token cannot sign); nothing was recorded"
                )
            return key

        return open_app(self.root, unlock=unlock)

    def signed_mode(self) -> bool:
        from kernel.workspace import open_workspace
        from tht.composition import trust_of

        return trust_of(open_workspace(self.root)).signed

    def tokens(self) -> Any:
        from kernel.workspace import open_workspace
        from tht.web.tokens import TokenStore

        return TokenStore(open_workspace(self.root).state_dir)


def _templates() -> Any:
    from jinja2 import Environment, PackageLoader, select_autoescape

    return Environment(
        loader=PackageLoader("tht.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


class _Refused(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


def create_app(root: Path, *, hosts: tuple[str, ...] = ()) -> Starlette:
    """The ASGI app serving the workspace at ``root``."""
    from tht.web import api, pages

    ctx = WebContext(root=root, templates=_templates())
    routes = [*pages.routes(ctx), *api.routes(ctx), Route("/healthz", _health)]
    allowed = sorted({"127.0.0.1", "localhost", "::1", "[::1]", *hosts})
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=allowed),
        ],
        exception_handlers={404: _not_found, 405: _not_allowed, _Refused: _refused},
    )
    app.state.ctx = ctx
    return app


_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
)


class SecurityHeaders:
    """Every response carries the CSP and its companions; ``no-store`` unless it says."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in
                           {name for name, _ in _HEADERS}]  # fmt: skip
                headers.extend(_HEADERS)
                if not any(k.lower() == b"cache-control" for k, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


async def _health(request: Request) -> Response:
    return PlainTextResponse("ok")


async def _not_found(request: Request, exc: Exception) -> Response:
    ctx: WebContext = request.app.state.ctx
    return render(ctx, request, "error.html", status=404, heading="Not found",
                  message="There is nothing at this address.")  # fmt: skip


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, _Refused)
    return exc.response


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return PlainTextResponse("method not allowed", status_code=405)


# ---------------------------------------------------------------------------------- helpers


def browser_session(ctx: WebContext, request: Request) -> BrowserSession | None:
    return ctx.sessions.get(request.cookies.get(COOKIE))


def render(
    ctx: WebContext,
    request: Request,
    template: str,
    *,
    status: int = 200,
    browser: BrowserSession | None = None,
    **values: Any,
) -> HTMLResponse:
    from kernel.workspace import open_workspace

    try:
        name = open_workspace(ctx.root).root.name
    except ThtError:
        name = ctx.root.name
    signed = values.pop("signed_mode", None)
    if signed is None and browser is not None:  # the header's "signing" badge: a key is held
        signed = browser.key is not None
    body = ctx.templates.get_template(template).render(
        workspace_name=name,
        reviewer=browser.reviewer if browser else None,
        csrf=browser.csrf if browser else "",
        signed_mode=signed,
        **values,
    )
    return HTMLResponse(body, status_code=status)


def signin_page(
    ctx: WebContext, request: Request, *, status: int = 401, error: str | None = None
) -> HTMLResponse:
    """The sign-in form (401 where a page needed a signed-in reviewer), with a fresh
    double-submit value against login CSRF."""
    pre = secrets.token_urlsafe(24)
    response = render(ctx, request, "signin.html", status=status, error=error, pre=pre,
                      signed_mode=ctx.signed_mode())  # fmt: skip
    response.set_cookie(PRE_COOKIE, pre, httponly=True, samesite="strict", path="/signin")
    return response


def require_browser(ctx: WebContext, request: Request) -> BrowserSession:
    """The signed-in reviewer, else the sign-in page (401). A session that signed in with a
    token ends as soon as that token is revoked."""
    found = browser_session(ctx, request)
    revoked = found is not None and found.token_sha256 is not None
    if found is not None and revoked and not ctx.tokens().holds(str(found.token_sha256)):
        ctx.sessions.close(found.id)
        found = None
    if found is None:
        raise _Refused(signin_page(ctx, request))
    return found


def same_origin(request: Request) -> bool:
    """A state-changing request from a page of this server (``Origin``, when the browser
    sends one, names this host)."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    host = request.headers.get("host", "")
    return origin.split("://", 1)[-1] == host


async def checked_form(ctx: WebContext, request: Request, browser: BrowserSession) -> Any:
    """The form of a state-changing request: bounded, same origin, with the session's CSRF."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_FORM_BYTES):
        raise _Refused(error_page(ctx, request, UsageError("the form is too large"), browser))
    form = await request.form(max_files=0, max_fields=200)
    if not same_origin(request) or not browser.csrf_ok(_text(form.get("csrf"))):
        message = (
            "This form did not come from this page (CSRF check failed); nothing was "
            "recorded. Reload the page and try again."
        )
        page = render(
            ctx, request, "error.html", status=403, browser=browser, heading="Refused",
            message=message,
        )  # fmt: skip
        raise _Refused(page)
    return form


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def error_page(
    ctx: WebContext,
    request: Request,
    err: ThtError,
    browser: BrowserSession | None,
    *,
    status: int | None = None,
    back: str = "/",
) -> HTMLResponse:
    code = status or http_status(err)
    heading = {400: "Not accepted", 403: "Refused", 404: "Not found", 409: "Too late",
               423: "Integrity problem", 503: "Unavailable"}.get(code, "Error")  # fmt: skip
    return render(ctx, request, "error.html", status=code, browser=browser, heading=heading,
                  message=err.message, back=back)  # fmt: skip


async def in_thread(ctx: WebContext, work: Callable[[], Any], *, write: bool = False) -> Any:
    """Kernel work off the event loop; writes one at a time in this process (across
    processes the kernel's expected-last-seq append decides)."""
    if not write:
        return await run_in_threadpool(work)

    def locked() -> Any:
        with ctx.write_lock:
            return work()

    return await run_in_threadpool(locked)
