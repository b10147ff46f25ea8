"""The reviewer's path in real headless Chromium: sign in with a token, the inbox, a select
review answered, the final SQL seen and approved (F7 then runs by itself), an agent's new proposal
appearing without a reload, a decision retracted — and afterwards the ledger holds exactly those
human events, with the token's identity. Screenshots of each page: tests/web/screenshots/."""

from __future__ import annotations

import json
from typing import Any

from tests.web.conftest import Served, shoot

ANN = "human:ann"


def sign_in(page: Any, served: Served, token: str) -> None:
    page.goto(served.url + "/")
    assert page.locator("h1").inner_text() == "Sign in"
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url(served.url + "/")


def human_events(served: Served, session: str, after: int) -> list[dict[str, Any]]:
    events = served.ws.events(session)
    return [e for e in events if e["seq"] > after and e["actor"].startswith("human:")]


def test_a_reviewer_answers_approves_sees_live_updates_and_retracts(
    served: Served, page: Any
) -> None:
    prepared = served.prepared
    a, b = prepared.a, prepared.b
    before_a = served.ws.status(a)["last_seq"]
    before_b = served.ws.status(b)["last_seq"]
    sign_in(page, served, served.token(ANN))

    # the inbox: both sessions wait for a review; nothing of the question's markup runs
    assert "signed in as" in page.locator("header").inner_text()
    rows = page.locator("table.inbox tbody tr")
    assert rows.count() == 2
    assert page.locator("table.inbox tr.waiting").count() == 2
    assert "<script>" in page.locator("table.inbox").inner_text()  # shown as text
    assert page.evaluate("window.__pwned === undefined")
    shoot(page, "01-inbox")

    # session B: a select review (its prompt, labels and payloads carry markup: inert)
    page.click(f"a[href='/sessions/{b}']")
    review = page.locator(f"#review-{prepared.select}")
    prompt = review.locator(".prompt").inner_text()
    assert prompt.endswith('<img src=x onerror="window.__pwned = 2">')
    assert page.locator("img").count() == 0 and page.locator("b").count() == 0
    review.locator("details.records summary").first.click()
    shoot(page, "02-select-review")
    review.locator("input[value=osc]").check()
    review.locator("textarea[name=rationale]").fill("the home hospital only")
    review.locator("button[value=choose]").click()
    page.wait_for_url(f"**/sessions/{b}?done=answered")
    assert "Your answer is recorded." in page.locator(".flash.ok").inner_text()
    assert page.locator(f"#review-{prepared.select}").count() == 0
    assert page.evaluate("window.__pwned === undefined")

    # session A: the final SQL's confirm review shows the SQL itself, highlighted
    page.goto(f"{served.url}/sessions/{a}")
    confirm = page.locator(f"#review-{prepared.confirm}")
    sql = confirm.locator(".artifact.sql").inner_text()
    assert "SELECT" in sql.upper() and "ricoveri" in sql
    assert confirm.locator(".artifact.sql .hl").count() == 1
    shoot(page, "03-confirm-sql")
    confirm.locator("textarea[name=rationale]").fill("the SQL answers the question")
    confirm.locator("button[value=approve]").click()
    page.wait_for_url(f"**/sessions/{a}?done=answered")
    # F6 approved: tht ran F7 itself; its verified rows are a table on the page
    assert page.locator("table.result tbody tr").count() > 0
    assert "verification" in page.locator("#timeline").inner_text()
    shoot(page, "04-verified-result")

    # live: an agent proposes in session B; the review appears without a reload
    page.goto(f"{served.url}/sessions/{b}")
    page.evaluate("window.__marker = 'same page'")
    proposal = {
        "kind": "select",
        "prompt": "Which year?",
        "options": [
            {
                "id": "y2024",
                "label": "2024",
                "events": [
                    {"type": "concept_clarified", "subject": "anno", "payload": {"meaning": "2024"}}
                ],
            }
        ],
    }
    done = served.ws.propose_json(b, "disambiguation", proposal)
    assert done.code == 0, done.stderr
    new_review = int(done.json()["review"])
    page.wait_for_selector(f"#review-{new_review}", timeout=10_000)
    assert page.evaluate("window.__marker") == "same page"  # no reload happened
    shoot(page, "05-live-review")

    # retract the decision answered above (B's concept_clarified ospedale)
    clarified = next(
        e for e in served.ws.events(b) if e["type"] == "concept_clarified" and e["actor"] == ANN
    )
    row = page.locator("#decisions tr", has_text=str(clarified["subject"])).first
    row.locator("input[name=reason]").fill("asked the wrong way round")
    row.locator("button", has_text="Retract").click()
    page.wait_for_url(f"**/sessions/{b}?done=retracted")
    assert page.locator("table.history tr.retracted").count() >= 1
    shoot(page, "06-retracted")

    # the ledgers hold exactly these human events, with the token's identity
    got_b = [(e["type"], e["actor"]) for e in human_events(served, b, before_b)]
    assert got_b == [
        ("review_answered", ANN),
        ("concept_clarified", ANN),
        ("decision_retracted", ANN),
    ], got_b
    got_a = [(e["type"], e["actor"]) for e in human_events(served, a, before_a)]
    assert got_a == [("review_answered", ANN)], got_a  # the confirm: F6 completes, F7 is tht's
    answered = next(e for e in human_events(served, a, before_a) if e["type"] == "review_answered")
    assert answered["payload"]["approved"] is True
    assert answered["payload"]["rationale"] == "the SQL answers the question"
    verify = served.ws.tht("ledger", "verify", a, "--json")
    assert verify.code == 0 and json.loads(verify.stdout)["ok"] is True
