"""The JSON API beside the pages (ARCHITECTURE §5), for scripts, with
``Authorization: Bearer <token>`` (``tht serve token add``):

- ``GET /api/sessions`` — as ``tht session list --json``;
- ``GET /api/sessions/{id}`` — as ``tht session status --json``;
- ``POST /api/sessions/{id}/reviews/{seq}/answer`` with ``{"choose": [...]}`` or
  ``{"approve": true}`` / ``{"reject": true}`` and an optional ``"rationale"`` — as
  ``tht review answer --json``.

401 without a valid token, 403 for a token of another workspace (and for an answer the policy
refuses, e.g. a token in signed mode, which cannot sign), 404 unknown session or seq, 409 a stale
answer (the review was answered or closed meanwhile). Errors are ``{"error": {"code",
"exit_code", "message"}}``, the CLI's ``--json`` error shape. Cookies are never read here: a
request's only credential is its header, so no page of another site can make one (no CSRF).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kernel.errors import NotFoundError, ThtError, UsageError
from tht.web.app import WebContext, http_status, in_thread

__all__ = ["routes"]

MAX_BODY = 64 * 1024


def routes(ctx: WebContext) -> list[Route]:
    def bind(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                reviewer = await _reviewer(ctx, request)
                result: Response = await handler(ctx, request, reviewer)
            except _Denied as denied:
                return _error(denied.status, denied.code, denied.message)
            except ThtError as err:
                return _error(http_status(err), err.code, err.message, err.exit_code)
            return result

        return endpoint

    return [
        Route("/api/sessions", bind(list_sessions), methods=["GET"]),
        Route("/api/sessions/{sid}", bind(session_status), methods=["GET"]),
        Route("/api/sessions/{sid}/reviews/{seq:int}/answer", bind(answer), methods=["POST"]),
    ]


class _Denied(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        self.status, self.code, self.message = status, code, message


def _error(status: int, code: str, message: str, exit_code: int | None = None) -> JSONResponse:
    body = {"error": {"code": code, "exit_code": exit_code or {401: 5, 403: 5}.get(status, 2),
                      "message": message}}  # fmt: skip
    headers = {"WWW-Authenticate": 'Bearer realm="tht"'} if status == 401 else None
    return JSONResponse(body, status_code=status, headers=headers)


async def _reviewer(ctx: WebContext, request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _Denied(401, "unauthorized", "a token is required: Authorization: Bearer <token>")
    found = await in_thread(ctx, lambda: ctx.tokens().check(token.strip()))
    if found.problem == "other_workspace":
        raise _Denied(403, "forbidden", "this token belongs to another workspace")
    if found.reviewer is None:
        raise _Denied(401, "unauthorized", "unknown or revoked token")
    return str(found.reviewer)


async def list_sessions(ctx: WebContext, request: Request, reviewer: str) -> Response:
    from tht.session_views import session_rows

    rows = await in_thread(ctx, lambda: session_rows(ctx.app_for(None)))
    return JSONResponse(rows)


def _existing(ctx: WebContext, sid: str) -> Any:
    app = ctx.app_for(None)
    if not app.kernel.store.exists(sid):
        raise NotFoundError(f"session {sid} does not exist in this workspace")
    return app


async def session_status(ctx: WebContext, request: Request, reviewer: str) -> Response:
    from tht.session_views import status_body

    sid = str(request.path_params["sid"])
    body = await in_thread(ctx, lambda: status_body(_existing(ctx, sid), sid)[0])
    return JSONResponse(body)


def _answer_body(raw: bytes) -> tuple[tuple[str, ...], bool, bool, str]:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        raise UsageError("the body is not JSON") from err
    if not isinstance(data, dict):
        raise UsageError('the body must be an object: {"choose": [...]} or {"approve": true}')
    unknown = sorted(set(data) - {"choose", "approve", "reject", "rationale"})
    if unknown:
        raise UsageError(f"unknown field(s): {', '.join(unknown)}")
    choose = data.get("choose", [])
    if not isinstance(choose, list) or not all(isinstance(c, str) and c for c in choose):
        raise UsageError("choose: expected a list of option ids")
    approve, reject = data.get("approve", False), data.get("reject", False)
    if not isinstance(approve, bool) or not isinstance(reject, bool):
        raise UsageError("approve / reject: expected true or false")
    rationale = data.get("rationale", "")
    if not isinstance(rationale, str) or len(rationale) > 4000:
        raise UsageError("rationale: expected text (at most 4000 characters)")
    if sum((bool(choose), approve, reject)) != 1:
        raise UsageError('give exactly one of "choose", "approve": true, "reject": true')
    return tuple(choose), approve, reject, rationale


async def answer(ctx: WebContext, request: Request, reviewer: str) -> Response:
    from tht.web.pages import checked_answer

    sid = str(request.path_params["sid"])
    seq = int(request.path_params["seq"])
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise UsageError(f"the body is larger than {MAX_BODY} bytes")
    choose, approve, reject, rationale = _answer_body(raw)

    def work() -> Any:
        return checked_answer(
            _existing(ctx, sid), sid, seq, actor=reviewer, choose=choose, approve=approve,
            reject=reject, rationale=rationale,
        )  # fmt: skip

    body = await in_thread(ctx, work, write=True)
    if isinstance(body, str):
        raise _Denied(409, "conflict", body)
    return JSONResponse(body)
