"""F1 through the CLI (issue 14 item 5): ``tht stage run disambiguation`` asks the question's
ambiguities over the synced catalog one at a time (module:disambiguation), and an agent's F1
options are checked against the catalog before anything is written."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

H = ("--as", "human:ann")


class Cli:
    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "ws"
        self.tmp = tmp
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
        self.env.update(THT_WORKSPACE=str(self.root), THT_HOME=str(tmp / "home"))

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tht", *args, "--json"],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )

    def ok(self, *args: str) -> Any:
        done = self(*args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return json.loads(done.stdout)

    def propose(self, stage: str, body: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        path = self.tmp / "proposal.json"
        path.write_text(json.dumps(body))
        return self("propose", stage, "--file", str(path))


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    c = Cli(tmp_path)
    assert c("workspace", "init", str(c.root)).returncode == 0
    (c.root / "data").mkdir()
    db = sqlite3.connect(c.root / "data" / "music.db")
    db.executescript(
        """
        CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT);
        CREATE TABLE singer_country (singer_id INTEGER PRIMARY KEY REFERENCES singer(singer_id),
                                     country TEXT);
        INSERT INTO singer VALUES (1, 'Ann', 'France'), (2, 'Bo', 'Italy');
        INSERT INTO singer_country VALUES (1, 'France'), (2, 'Italy');
        """
    )
    db.commit()
    db.close()
    with (c.root / "workspace.yaml").open("a") as settings:
        settings.write('\ndatabase: {url: "sqlite:///data/music.db"}\n')
    c.ok("catalog", "sync")
    c.env["THT_SESSION"] = c.ok("session", "new", "What is the country of each singer?")["session"]
    return c


def test_f1_asks_the_joinable_attribute_with_both_readings_and_leave_open(cli: Cli) -> None:
    ran = cli.ok("stage", "run", "disambiguation")
    assert ran["status"] == "review"
    review = cli.ok("review", "show", str(ran["review"]))
    assert review["kind"] == "select"
    targets = {
        e["payload"].get("target")
        for o in review["options"]
        for e in o["events"]
        if e["type"] == "concept_clarified"
    }
    assert {"singer.country", "singer_country.country"} <= targets
    opened = [
        o for o in review["options"] if any(e["type"] == "ambiguity_open" for e in o["events"])
    ]
    assert len(opened) == 1  # the explicit "leave open"
    # asked again while it is open: refused, nothing written
    again = cli("stage", "run", "disambiguation")
    assert again.returncode == 5 and "answer the open review" in again.stderr
    # the reviewer chooses a reading; the next run closes F1 with a confirm
    chosen = next(
        o["id"]
        for o in review["options"]
        if any(e["payload"].get("target") == "singer.country" for e in o["events"])
    )
    cli.ok("review", "answer", str(ran["review"]), "--choose", chosen, *H)
    closing = cli.ok("stage", "run", "disambiguation")
    assert cli.ok("review", "show", str(closing["review"]))["kind"] == "confirm"
    decisions = cli.ok("session", "status")["effective_decisions"]
    clarified = [d for d in decisions if d["type"] == "concept_clarified"]
    assert [d["subject"] for d in clarified] == [review["options"][0]["events"][0]["subject"]]


def test_an_agent_option_pointing_outside_the_catalog_is_refused(cli: Cli) -> None:
    ledger = next((cli.root / "sessions").glob("*/ledger.jsonl"))
    before = ledger.read_bytes()
    event = {
        "type": "concept_clarified",
        "subject": "country",
        "payload": {"meaning": "the singer's country", "target": "singer.nationality"},
    }
    done = cli.propose(
        "disambiguation",
        {
            "kind": "select",
            "prompt": "?",
            "options": [{"id": "a", "label": "a", "events": [event]}],
        },
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "singer.nationality" in done.stderr
    assert ledger.read_bytes() == before
    # spelled as the catalog spells it, the option is normalized and accepted
    event["payload"]["target"] = "SINGER.Country"  # type: ignore[index]
    done = cli.propose(
        "disambiguation",
        {
            "kind": "select",
            "prompt": "?",
            "options": [{"id": "a", "label": "a", "events": [event]}],
        },
    )
    assert done.returncode == 0, done.stderr
    review = cli.ok("review", "show", str(json.loads(done.stdout)["review"]))
    assert review["options"][0]["events"][0]["payload"]["target"] == "singer.country"
