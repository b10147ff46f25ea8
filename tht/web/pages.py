"""The reviewer's pages: sign-in, the inbox, one session, its actions, live updates."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from kernel.errors import NotFoundError, PolicyError, ThtError, UsageError
from tht.web.app import (
    COOKIE,
    DONE,
    PRE_COOKIE,
    WebContext,
    browser_session,
    checked_form,
    error_page,
    in_thread,
    render,
    require_browser,
    same_origin,
    signin_page,
)

__all__ = ["checked_answer", "routes", "stale_reason"]

_SESSION = re.compile(r"^[0-9A-Z]{26}$")
_STAGE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_TEXT = 4000


def routes(ctx: WebContext) -> list[Route]:
    def bind(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                result: Response = await handler(ctx, request)
            except ThtError as err:  # bad input anywhere: its page and status, never a 500
                return error_page(ctx, request, err, browser_session(ctx, request))
            return result

        return endpoint

    return [
        Route("/signin", bind(signin_get), methods=["GET"]),
        Route("/signin", bind(signin_post), methods=["POST"]),
        Route("/signout", bind(signout), methods=["POST"]),
        Route("/", bind(inbox), methods=["GET"]),
        Route("/events", bind(inbox_events), methods=["GET"]),
        Route("/static/{name}", bind(static), methods=["GET"]),
        Route("/sessions/{sid}", bind(session_page), methods=["GET"]),
        Route("/sessions/{sid}/events", bind(session_events), methods=["GET"]),
        Route("/sessions/{sid}/reviews/{seq:int}/answer", bind(answer), methods=["POST"]),
        Route("/sessions/{sid}/decisions/{seq:int}/retract", bind(retract), methods=["POST"]),
        Route("/sessions/{sid}/stages/{stage}/{verb}", bind(stage_action), methods=["POST"]),
        Route("/sessions/{sid}/lifecycle/{verb}", bind(lifecycle), methods=["POST"]),
    ]


# ---------------------------------------------------------------------------------- sign-in


async def signin_get(ctx: WebContext, request: Request) -> Response:
    if browser_session(ctx, request) is not None:
        return RedirectResponse("/", status_code=303)
    page: Response = await in_thread(ctx, lambda: signin_page(ctx, request, status=200))
    return page


async def signin_post(ctx: WebContext, request: Request) -> Response:
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > 16 * 1024):
        return signin_page(ctx, request, status=400, error="The sign-in form is too large.")
    form = await request.form(max_files=0, max_fields=10)
    pre = form.get("pre")
    if not same_origin(request) or not pre or pre != request.cookies.get(PRE_COOKIE):
        return signin_page(ctx, request, status=403, error="The sign-in form expired; try again.")
    client = request.client.host if request.client else "?"

    def check() -> tuple[str | None, Any, str | None]:
        if ctx.signed_mode():
            return _passphrase_signin(ctx, form, client)
        key = f"ip:{client}"
        if ctx.throttle.blocked(key):  # every attempt, a right token too, until the window ends
            return None, None, "Too many failed sign-ins: wait a minute."
        found = ctx.tokens().check(_field(form, "token"))
        if found.reviewer is None:
            ctx.throttle.failed(key)
            other = found.problem == "other_workspace"
            why = "This token belongs to another workspace." if other else "Unknown token."
            return None, None, why
        ctx.throttle.succeeded(key)
        return found.reviewer, found.sha256, None

    try:
        reviewer, credential, why = await in_thread(ctx, check)
    except ThtError as err:
        return signin_page(ctx, request, status=400, error=err.message)
    if reviewer is None:
        return signin_page(ctx, request, status=401, error=why)
    if isinstance(credential, str):  # solo mode: the token's hash, checked on every request
        browser = ctx.sessions.open(reviewer, token_sha256=credential)
    else:
        browser = ctx.sessions.open(reviewer, credential)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, browser.id, httponly=True, samesite="strict", path="/")
    response.delete_cookie(PRE_COOKIE, path="/signin")
    return response


def _passphrase_signin(
    ctx: WebContext, form: Any, client: str
) -> tuple[str | None, Any, str | None]:
    """Signed mode: the reviewer's sealed key on this machine, opened with the passphrase
    typed in the page, and an active key of that reviewer in the workspace's registry."""
    from kernel.reviewer_registry import ReviewerRegistry
    from kernel.transitions import check_human
    from kernel.workspace import open_workspace
    from tht.reviewer_keys import unlock

    reviewer = check_human(_field(form, "reviewer") or None, label="reviewer")
    passphrase = _field(form, "passphrase", limit=1024)
    keys = (f"reviewer:{reviewer}", f"ip:{client}")
    if ctx.throttle.blocked(*keys):
        return None, None, "Too many failed sign-ins: wait a minute."
    try:
        key = unlock(reviewer, read=lambda prompt: passphrase)
    except ThtError:
        ctx.throttle.failed(*keys)
        return None, None, "Wrong reviewer or passphrase (or no key for this reviewer here)."
    state = ReviewerRegistry(open_workspace(ctx.root).reviewers_dir).state()
    record = state.key(key.key_id)
    if record is None or record.reviewer != reviewer or not record.active:
        ctx.throttle.failed(*keys)
        return None, None, f"{reviewer}'s key is not an active key of this workspace's registry."
    ctx.throttle.succeeded(*keys)
    return reviewer, key, None


async def signout(ctx: WebContext, request: Request) -> Response:
    browser = require_browser(ctx, request)
    await checked_form(ctx, request, browser)
    ctx.sessions.close(browser.id)
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


# ---------------------------------------------------------------------------------- pages


async def inbox(ctx: WebContext, request: Request) -> Response:
    from tht.web.views import inbox_rows

    browser = require_browser(ctx, request)
    try:
        rows = await in_thread(ctx, lambda: inbox_rows(ctx.app_for(browser)))
    except ThtError as err:
        return error_page(ctx, request, err, browser)
    return render(ctx, request, "inbox.html", browser=browser, rows=rows)


async def session_page(ctx: WebContext, request: Request) -> Response:
    from tht.web.views import session_view

    browser = require_browser(ctx, request)
    sid = _session_id(request)
    done = request.query_params.get("done")
    try:
        every = request.query_params.get("history") == "all"
        view = await in_thread(
            ctx, lambda: session_view(_opened(ctx, browser, sid), sid, all_history=every)
        )
    except ThtError as err:
        return error_page(ctx, request, err, browser)
    return render(ctx, request, "session.html", browser=browser, v=view,
                  flash=DONE.get(done or ""), flash_kind="ok")  # fmt: skip


def _opened(ctx: WebContext, browser: Any, sid: str) -> Any:
    app = ctx.app_for(browser)
    if not app.kernel.store.exists(sid):
        raise NotFoundError(f"session {sid} does not exist in this workspace")
    return app


def _session_id(request: Request) -> str:
    sid = str(request.path_params["sid"])
    if not _SESSION.match(sid):
        raise _not_found()
    return sid


def _not_found() -> Exception:
    from starlette.exceptions import HTTPException

    return HTTPException(status_code=404)


async def static(ctx: WebContext, request: Request) -> Response:
    from importlib import resources

    name = str(request.path_params["name"])
    types = {"style.css": "text/css", "live.js": "text/javascript", "hl.css": "text/css"}
    if name not in types:
        raise _not_found()
    if name == "hl.css":
        from tht.web.artifacts import highlight_css

        body = highlight_css().encode()
    else:
        body = (resources.files("tht.web") / "static" / name).read_bytes()
    return Response(body, media_type=types[name], headers={"Cache-Control": "no-cache"})


# ---------------------------------------------------------------------------------- live


async def session_events(ctx: WebContext, request: Request) -> Response:
    browser = require_browser(ctx, request)
    sid = _session_id(request)
    try:
        app = await in_thread(ctx, lambda: _opened(ctx, browser, sid))
    except ThtError as err:
        return error_page(ctx, request, err, browser)
    return _stream(app, sid, request)


async def inbox_events(ctx: WebContext, request: Request) -> Response:
    browser = require_browser(ctx, request)
    app = await in_thread(ctx, lambda: ctx.app_for(browser))
    return _stream(app, None, request)


def _stream(app: Any, sid: str | None, request: Request) -> Response:
    from tht.web.live import follow, ledger_positions

    since = ledger_positions(app, sid)
    return StreamingResponse(
        follow(app, sid, since, is_disconnected=request.is_disconnected),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


# ---------------------------------------------------------------------------------- actions


def stale_reason(app: Any, sid: str, seq: int) -> str | None:
    """Why review ``seq`` is no longer open (answered by whom, at which seq; or closed), or
    None when it is open or never was a review."""
    from kernel.events import info_of

    loaded, _ = app.kernel.load_for_display(sid)
    if loaded.state.review(seq) is not None or seq > loaded.state.last_seq or seq < 1:
        return None
    events = app.kernel.log(sid, from_seq=seq)
    if not events or info_of(events[0]).type not in ("review_requested", "revision_requested"):
        return None
    for event in events[1:]:
        if info_of(event).type == "review_answered" and event.causation == seq:
            return (
                f"review {seq} was already answered by {event.actor} at seq {event.seq}; "
                "your answer was not recorded"
            )
    return f"review {seq} is closed (its stage moved on or was reopened); nothing was recorded"


def checked_answer(app: Any, sid: str, seq: int, **answer: Any) -> dict[str, Any] | str:
    """``tht review answer``'s body, or — when the review is no longer open, before the answer
    or because another one won the race — why, naming who answered (the page's and the API's
    409). A seq that is no review at all is NotFoundError."""
    from tht.reviewer_actions import answer_review

    stale = stale_reason(app, sid, seq)
    if stale is not None:
        return stale
    try:
        return answer_review(app, sid, seq, **answer)
    except ThtError as err:
        late = stale_reason(app, sid, seq)  # lost a race: say to whom
        if late is not None:
            return late
        if isinstance(err, PolicyError) and app.kernel.load(sid).state.review(seq) is None:
            raise NotFoundError(f"seq {seq} is not a review request of this session") from err
        raise


async def answer(ctx: WebContext, request: Request) -> Response:
    browser = require_browser(ctx, request)
    sid = _session_id(request)
    seq = int(request.path_params["seq"])
    form = await checked_form(ctx, request, browser)
    decision = _field(form, "decision")
    choose = tuple(str(c) for c in form.getlist("choose") if isinstance(c, str) and c)
    rationale = _field(form, "rationale", limit=MAX_TEXT)
    back = f"/sessions/{sid}"
    if decision not in ("choose", "approve", "reject"):
        return error_page(ctx, request, UsageError("no answer given"), browser, back=back)
    if decision == "choose" and not choose:
        return error_page(
            ctx, request, UsageError("choose at least one option, or leave the review open"),
            browser, back=back,
        )  # fmt: skip

    def work() -> Any:
        return checked_answer(
            _opened(ctx, browser, sid), sid, seq, actor=browser.reviewer, choose=choose,
            approve=decision == "approve", reject=decision == "reject", rationale=rationale,
        )  # fmt: skip

    try:
        done = await in_thread(ctx, work, write=True)
    except ThtError as err:
        return error_page(ctx, request, err, browser, back=back)
    if isinstance(done, str):
        return error_page(ctx, request, UsageError(done), browser, status=409, back=back)
    return RedirectResponse(f"{back}?done=answered", status_code=303)


async def retract(ctx: WebContext, request: Request) -> Response:
    from tht.reviewer_actions import retract_decision

    browser = require_browser(ctx, request)
    sid = _session_id(request)
    seq = int(request.path_params["seq"])
    form = await checked_form(ctx, request, browser)
    reason = _field(form, "reason", limit=MAX_TEXT)
    return await _act(
        ctx, request, browser, sid, "retracted",
        lambda app: retract_decision(app, sid, seq, actor=browser.reviewer, reason=reason),
    )  # fmt: skip


async def stage_action(ctx: WebContext, request: Request) -> Response:
    from tht.reviewer_actions import reopen_stage, skip_stage

    browser = require_browser(ctx, request)
    sid = _session_id(request)
    stage = str(request.path_params["stage"])
    verb = str(request.path_params["verb"])
    if verb not in ("skip", "reopen") or not _STAGE.match(stage):
        raise _not_found()
    form = await checked_form(ctx, request, browser)
    reason = _field(form, "reason", limit=MAX_TEXT)
    action = skip_stage if verb == "skip" else reopen_stage
    return await _act(
        ctx, request, browser, sid, "skipped" if verb == "skip" else "reopened",
        lambda app: action(app, sid, stage, actor=browser.reviewer, reason=reason),
    )  # fmt: skip


async def lifecycle(ctx: WebContext, request: Request) -> Response:
    from tht import reviewer_actions

    browser = require_browser(ctx, request)
    sid = _session_id(request)
    verb = str(request.path_params["verb"])
    if verb not in ("pause", "resume", "finalize"):
        raise _not_found()
    form = await checked_form(ctx, request, browser)
    reason = _field(form, "reason", limit=MAX_TEXT)

    def run(app: Any) -> Any:
        if verb == "finalize":
            return reviewer_actions.finalize_session(app, sid, actor=browser.reviewer)
        return reviewer_actions.lifecycle(app, sid, verb, actor=browser.reviewer, reason=reason)

    done = {"pause": "paused", "resume": "resumed", "finalize": "finalized"}[verb]
    return await _act(ctx, request, browser, sid, done, run)


async def _act(
    ctx: WebContext, request: Request, browser: Any, sid: str, done: str, run: Any
) -> Response:
    back = f"/sessions/{sid}"
    try:
        await in_thread(ctx, lambda: run(_opened(ctx, browser, sid)), write=True)
    except ThtError as err:
        return error_page(ctx, request, err, browser, back=back)
    return RedirectResponse(f"{back}?done={done}", status_code=303)


def _field(form: Any, name: str, *, limit: int = 256) -> str:
    value = form.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UsageError(f"{name}: expected text")
    if len(value) > limit:
        raise UsageError(f"{name}: longer than {limit} characters")
    return value
