"""A refused name never leaves the SecurityGate: sessions created with a competitor's name (and
every disguise of it), an out-of-scope person and a restricted subject; then every file of the
workspace — ledgers, caches, checkpoints, evidence index, analytics database, everything under
.tht — is searched for the names and their variants, and every JSON string in it is run through
the gate: nothing is ever found. What the modules read (the session's question, the Evidence
query text of a pack, the question the schema section links) is the masked question.

``workspace.yaml`` is the one file that holds the names: it declares them.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernel.domain_profile import DomainProfile
from kernel.workspace import load_settings
from modules.disambiguation import SecurityGate
from tests.tht.conftest import Result, run_tht

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evidence" / "sources"

DOMAIN = """
domain:
  home_entity: {display: "Ospedale San Carlo", aliases: ["San Carlo"]}
  external_entities:
    - {display: "Zeltronix Sanità", aliases: ["Zeltronix", "Zeltro Group"], kind: competitor}
    - {display: "Quirinal Vex", aliases: ["Q. Vex"], kind: out_of_scope}
  restricted: {keywords: ["paghe riservate"], patterns: ['\\bcodice\\s+fiscale\\b']}
"""

# the question text around the refused names is itself distinctive, so a leak of the RAW question
# in any form (not only of the name) is found too
REFUSED = [
    "Quanti ricoveri presso Zeltronix nel 2023?",
    "Quanti ricoveri presso ZELTRONIX nel 2023?",
    "Quanti ricoveri presso Z e l t r o n i x nel 2023?",
    "Quanti ricoveri presso Z.E.L.T.R.O.N.I.X. nel 2023?",
    "Quanti ricoveri presso Zel-tro-nix nel 2023?",
    "Quanti ricoveri presso Ｚｅｌｔｒｏｎｉｘ nel 2023?",
    "Quanti ricoveri presso Zеltrоnix nel 2023?",  # Cyrillic е and о
    "Quanti ricoveri presso Zel\u200btro\u200dnix nel 2023?",
    "Quanti ricoveri presso Zéltrônix nel 2023?",
    "Quanti ricoveri presso Ze\u0301ltroni\u0301x nel 2023?",
    "Quanti ricoveri presso 𝐙𝐞𝐥𝐭𝐫𝐨𝐧𝐢𝐱 nel 2023?",
    "Ricoveri di Zeltro Group e di zeltro-group?",
    "Visite di Q. Vex al San Carlo",
    "Le P A G H E riservate dei medici e il codice  fiscale",
]
NAMES = ["Zeltronix", "Zeltro Group", "Zeltronix Sanità", "Quirinal Vex", "Q. Vex", "paghe"]


def _tht(*args: str, codes: tuple[int, ...] = (0,)) -> Result:
    done = run_tht(*args)
    assert done.code in codes, (args, done.code, done.stderr)
    return done


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("leaks") / "ws"
    mp.setenv("THT_WORKSPACE", str(root))
    mp.setenv("THT_CLOCK", "fixed:2026-01-01T00:00:00Z")
    mp.setenv("THT_SEED", "11")
    mp.setenv("THT_HOME", str(root.parent / "home"))
    for var in ("THT_ACTOR", "THT_SESSION"):
        mp.delenv(var, raising=False)
    assert run_tht("workspace", "init", str(root)).code == 0
    settings = root / "workspace.yaml"
    text = settings.read_text(encoding="utf-8").replace(
        "evidence:\n", "evidence:\n  embedder: hashing\n"
    )
    settings.write_text(text + DOMAIN, encoding="utf-8")
    for source in FIXTURES.iterdir():
        shutil.copy(source, root / "evidence" / "sources" / source.name)
    yield root
    mp.undo()


def _gate(root: Path) -> SecurityGate:
    return SecurityGate(load_settings(root / "workspace.yaml").domain_profile())


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _json_strings(text: str) -> Iterator[str]:
    try:
        yield from _strings(json.loads(text))
        return
    except ValueError:
        pass
    for line in text.splitlines():
        try:
            yield from _strings(json.loads(line))
        except ValueError:
            continue


def _needles() -> set[bytes]:
    forms = set(REFUSED) | set(NAMES)
    for name in NAMES:
        forms |= {name.lower(), name.upper(), name.title(), name.replace(" ", "")}
        plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
        forms |= {plain, plain.lower()}
    encoded = {f.encode("utf-8") for f in forms}
    return encoded | {f.encode("utf-16-le") for f in forms if f.isascii()}


_CONTROLS = bytes(b if b >= 0x20 and b != 0x7F else 0x20 for b in range(256))


def _leaks(root: Path, gate: SecurityGate) -> list[str]:
    """Every place under ``root`` (but workspace.yaml) where a refused name shows."""
    found: list[str] = []
    needles = _needles()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path == root / "workspace.yaml":
            continue
        # the long runs of zeros of a sparse file (the vector index) hold nothing
        data = re.sub(rb"\x00{16,}", b"\x00", path.read_bytes())
        where = str(path.relative_to(root))
        lowered = data.lower()
        found += [f"{where}: {n!r}" for n in needles if n in data or n.lower() in lowered]
        # a binary file's control bytes between strings must not glue letters together
        text = re.sub(rb"\s{2,}", b" ", data.translate(_CONTROLS)).decode("utf-8", "replace")
        if gate.check(text).refused:
            found.append(f"{where}: the gate refuses its text")
        found += [
            f"{where}: string {s[:60]!r}" for s in _json_strings(text) if gate.check(s).refused
        ]
    return found


@pytest.fixture(scope="module")
def sessions(ws: Path) -> dict[str, tuple[str, Result]]:
    """Each refused question's session id and the `session new` result."""
    created = {}
    for question in REFUSED:
        done = _tht("session", "new", question, "--json")
        created[question] = (done.json()["session"], done)
    return created


def test_every_variant_is_refused_and_its_session_holds_the_masked_question(
    ws: Path, sessions: dict[str, tuple[str, Result]]
) -> None:
    gate = _gate(ws)
    for question, (session, done) in sessions.items():
        verdict = gate.check(question)
        assert verdict.refused, question
        body = done.json()
        assert body["admitted"] is False and body["refusal"]["code"].startswith("refused:")
        log = _tht("session", "log", session, "--json").json()
        assert log[0]["payload"]["question"] == verdict.masked.strip()
        refused = next(e for e in log if e["type"] == "question_refused")
        assert refused["payload"]["code"] == verdict.code
        masked = log[0]["payload"]["question"]
        for span in refused["payload"]["masked_spans"]:
            assert masked[span["start"] : span["end"]] == f"[{span['kind']}]"


@pytest.fixture(scope="module")
def packs(ws: Path, sessions: dict[str, tuple[str, Result]]) -> dict[str, tuple[list[str], Result]]:
    """Each refused session's Evidence pack (a published index): what the Evidence module was
    given (the view's question and the query text built from it) and the command's result."""
    from modules.evidence import consultation

    _tht("evidence", "prepare")
    _tht("evidence", "publish")
    seen: list[str] = []
    real_pack = consultation.evidence_pack

    def spy_pack(caps: Any, view: Any) -> Any:
        seen.extend([view.question, consultation.pack_query_text(view)])
        return real_pack(caps, view)

    mp = pytest.MonkeyPatch()
    mp.setattr(consultation, "evidence_pack", spy_pack)
    out = {}
    try:
        for session, _ in sessions.values():
            seen.clear()
            # the query runs; recording its receipt is refused (exit 5): admission failed
            done = _tht(
                "search", "pack", session, "--stage", "disambiguation", "--json", codes=(5,)
            )
            out[session] = (list(seen), done)
    finally:
        mp.undo()
    return out


def test_what_every_module_reads_is_the_masked_question(
    ws: Path,
    sessions: dict[str, tuple[str, Result]],
    packs: dict[str, tuple[list[str], Result]],
) -> None:
    from tht.composition import open_app

    gate = _gate(ws)
    app = open_app(ws)
    for question, (session, _) in sessions.items():
        masked = gate.check(question).masked.strip()
        assert app.kernel.load(session).state.question == masked
        seen, done = packs[session]
        assert len(seen) == 2, seen  # the view's question and the Evidence query text
        assert all(masked in text for text in seen), seen
        assert not any(gate.check(text).refused for text in seen)
        assert not gate.check(done.stdout + done.stderr).refused


def test_no_file_of_the_workspace_holds_a_refused_name(
    ws: Path,
    sessions: dict[str, tuple[str, Result]],
    packs: dict[str, tuple[list[str], Result]],
) -> None:
    assert list((ws / ".tht").rglob("*.dat")), "the evidence index is searched too"
    for session, _ in sessions.values():
        for args in (("session", "status", session), ("session", "show", session)):
            shown = _tht(*args, "--json")
            assert not _gate(ws).check(shown.stdout).refused
    listing = _tht("session", "list", "--json")
    assert not _gate(ws).check(listing.stdout).refused
    db = ws / ".tht" / "analytics.sqlite"  # inside the workspace, so it is searched too
    _tht("analytics", "scan", "--sessions", str(ws), "--db", str(db), "--json")
    assert db.is_file()
    assert _leaks(ws, _gate(ws)) == []


def test_the_leak_search_would_find_a_leak(ws: Path, tmp_path: Path) -> None:
    """The search above can fail: a raw question, a disguised name inside JSON escapes, or a
    name between binary bytes are all found."""
    probe = tmp_path / "probe"
    probe.mkdir()
    gate = _gate(ws)
    (probe / "a.jsonl").write_text(json.dumps({"q": REFUSED[6]}) + "\n")  # \\u0435 escapes
    (probe / "b.bin").write_bytes(b"\x00\x01zel\x00tronix\x02")
    (probe / "c.txt").write_text("le paghe  riservate")
    found = _leaks(probe, gate)
    assert any(f.startswith("a.jsonl: string") for f in found)
    assert any(f.startswith("b.bin") for f in found)
    assert any(f.startswith("c.txt") for f in found)
    assert DomainProfile() == DomainProfile()  # the profile records compare by value
