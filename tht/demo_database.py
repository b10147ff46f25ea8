"""The demo's Workspace Database: a small, realistic SQLite file, generated deterministically.

The spec's running example — hospital admissions with procedures, some of them ablations —
made concrete (all of it synthetic: no real patient, no personal data):

- ``ospedali`` (12): ``id`` PK, ``nome``, ``citta``, ``regione``;
- ``procedure`` (24): ``id`` PK, ``codice`` (ICD-9-CM style), ``descrizione``,
  ``flag_ablazione`` (0/1: the procedure is an ablation) and ``patologia``, free Italian text
  on the condition treated — which may mention an ablation when the procedure is none (a past
  ablation, an ablation ruled out): the ambiguity F1 exists for;
- ``pazienti`` (600): ``id`` PK, ``fascia_eta`` (age band only) and ``sesso``;
- ``ricoveri`` (2,400, admissions 2023-01-01 … 2024-12-31): ``id`` PK, ``paziente_id`` FK →
  ``pazienti.id``, ``ospedale_id`` FK → ``ospedali.id``, ``procedura_id`` → ``procedure.id``
  **without** a declared foreign key (the catalog's Generated Relationships find it),
  ``data_ricovero`` and ``data_dimissione`` (ISO dates), ``giorni_degenza``, ``regime``
  (``ordinario`` | ``day hospital``) and ``stato`` (``concluso`` | ``annullato``: a cancelled
  admission never counts).

:func:`make_demo_database` writes the same bytes every time (its own PRNG with a fixed seed, no
clock, one transaction, written to a temporary file and renamed into place). The demo question
and the SQL that answers it are :data:`DEMO_QUESTION`, :data:`DEMO_CTE` (F5) and
:data:`DEMO_SQL` (F6, self-contained).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path

__all__ = [
    "DEMO_CTE",
    "DEMO_QUESTION",
    "DEMO_SQL",
    "SCHEMA",
    "main",
    "make_demo_database",
]

DEMO_QUESTION = "Quanti ricoveri con ablazione per ospedale nel 2024?"

#: F5: the approved CTE (name, body) — the 2024 ablation admissions that were not cancelled
DEMO_CTE = (
    "ablazioni_2024",
    """SELECT r.id, r.ospedale_id
FROM ricoveri AS r
JOIN procedure AS p ON p.id = r.procedura_id
WHERE p.flag_ablazione = 1
  AND r.stato <> 'annullato'
  AND r.data_ricovero >= '2024-01-01'
  AND r.data_ricovero < '2025-01-01'
""",
)

#: F6: the final SQL, self-contained (it defines the CTE it uses)
DEMO_SQL = f"""WITH {DEMO_CTE[0]} AS (
{DEMO_CTE[1].rstrip()}
)
SELECT o.nome AS ospedale, o.regione, COUNT(*) AS ricoveri_ablazione
FROM {DEMO_CTE[0]} AS a
JOIN ospedali AS o ON o.id = a.ospedale_id
GROUP BY o.nome, o.regione
ORDER BY ricoveri_ablazione DESC, o.nome;
"""

SCHEMA = """\
CREATE TABLE ospedali (
  id INTEGER PRIMARY KEY,
  nome TEXT NOT NULL,
  citta TEXT NOT NULL,
  regione TEXT NOT NULL
);
CREATE TABLE procedure (
  id INTEGER PRIMARY KEY,
  codice TEXT NOT NULL UNIQUE,
  descrizione TEXT NOT NULL,
  flag_ablazione INTEGER NOT NULL CHECK (flag_ablazione IN (0, 1)),
  patologia TEXT NOT NULL
);
CREATE TABLE pazienti (
  id INTEGER PRIMARY KEY,
  fascia_eta TEXT NOT NULL,
  sesso TEXT NOT NULL CHECK (sesso IN ('F', 'M'))
);
CREATE TABLE ricoveri (
  id INTEGER PRIMARY KEY,
  paziente_id INTEGER NOT NULL REFERENCES pazienti (id),
  ospedale_id INTEGER NOT NULL REFERENCES ospedali (id),
  procedura_id INTEGER NOT NULL,
  data_ricovero TEXT NOT NULL,
  data_dimissione TEXT NOT NULL,
  giorni_degenza INTEGER NOT NULL CHECK (giorni_degenza >= 0),
  regime TEXT NOT NULL,
  stato TEXT NOT NULL
);
CREATE INDEX ricoveri_data ON ricoveri (data_ricovero);
CREATE INDEX ricoveri_ospedale ON ricoveri (ospedale_id);
"""

_SEED = 20240417
_PATIENTS = 600
_ADMISSIONS = 2400
_FIRST_DAY = date(2023, 1, 1)
_DAYS = 731  # 2023 and 2024 (a leap year)

# (nome, citta, regione, weight)
_HOSPITALS = (
    ("Ospedale San Luca", "Milano", "Lombardia", 14),
    ("Presidio Ospedaliero Santa Maria", "Bergamo", "Lombardia", 8),
    ("Policlinico Universitario San Giovanni", "Roma", "Lazio", 13),
    ("Ospedale del Mare Tirreno", "Napoli", "Campania", 9),
    ("Azienda Ospedaliera dei Colli Euganei", "Padova", "Veneto", 10),
    ("Ospedale Maggiore della Pianura", "Bologna", "Emilia-Romagna", 11),
    ("Ospedale San Francesco", "Firenze", "Toscana", 9),
    ("Presidio Ospedaliero delle Alpi", "Torino", "Piemonte", 8),
    ("Policlinico del Levante", "Bari", "Puglia", 7),
    ("Ospedale Civico Santa Rosalia", "Palermo", "Sicilia", 6),
    ("Ospedale della Lanterna", "Genova", "Liguria", 5),
    ("Ospedale Santa Chiara delle Dolomiti", "Trento", "Trentino-Alto Adige", 4),
)

# (codice, descrizione, flag_ablazione, patologia, weight, (min, max) degenza; 0 = day hospital)
_PROCEDURES = (
    (
        "37.34",
        "Ablazione transcatetere di fibrillazione atriale (isolamento delle vene polmonari)",
        1,
        "Fibrillazione atriale parossistica sintomatica, refrattaria alla terapia antiaritmica",
        10,
        (1, 3),
    ),
    (
        "37.34.1",
        "Ablazione transcatetere di flutter atriale tipico (istmo cavo-tricuspidale)",
        1,
        "Flutter atriale tipico recidivante con risposta ventricolare elevata",
        6,
        (1, 2),
    ),
    (
        "37.33",
        "Ablazione di tachicardia ventricolare con mappaggio elettroanatomico",
        1,
        "Tachicardia ventricolare sostenuta su cardiopatia ischemica post-infartuale",
        3,
        (2, 6),
    ),
    (
        "06.39",
        "Termoablazione con radiofrequenza di nodulo tiroideo",
        1,
        "Nodulo tiroideo benigno sintomatico (compressivo), citologia TIR2",
        4,
        (0, 1),
    ),
    (
        "50.29",
        "Ablazione percutanea con radiofrequenza di lesione epatica",
        1,
        "Epatocarcinoma su cirrosi HCV-correlata, lesione singola di 2,5 cm",
        4,
        (1, 4),
    ),
    (
        "55.39",
        "Crioablazione percutanea di neoformazione renale",
        1,
        "Neoformazione renale solida di 2 cm in paziente monorene",
        2,
        (1, 3),
    ),
    (
        "68.23",
        "Ablazione endometriale (resettoscopica)",
        1,
        "Menometrorragia persistente in perimenopausa, non responsiva alla terapia medica",
        4,
        (0, 1),
    ),
    (
        "32.24",
        "Ablazione percutanea con microonde di lesione polmonare",
        1,
        "Metastasi polmonare singola da carcinoma del colon, paziente non operabile",
        2,
        (1, 3),
    ),
    (
        "00.66",
        "Angioplastica coronarica percutanea con impianto di stent medicato",
        0,
        "Sindrome coronarica acuta NSTEMI, stenosi critica della discendente anteriore",
        12,
        (2, 6),
    ),
    (
        "37.80",
        "Impianto di pacemaker bicamerale",
        0,
        "Blocco atrioventricolare di terzo grado; esiti di pregressa ablazione di fibrillazione "
        "atriale",
        7,
        (1, 4),
    ),
    (
        "37.94",
        "Impianto di defibrillatore automatico (ICD)",
        0,
        "Cardiomiopatia dilatativa con frazione di eiezione ridotta; ablazione valutata e non "
        "indicata",
        3,
        (2, 5),
    ),
    (
        "36.12",
        "Bypass aortocoronarico con due innesti",
        0,
        "Coronaropatia trivasale con angina stabile, anatomia non adatta ad angioplastica",
        3,
        (6, 12),
    ),
    (
        "35.21",
        "Sostituzione valvolare aortica con protesi biologica",
        0,
        "Stenosi aortica severa calcifica sintomatica per dispnea da sforzo",
        2,
        (6, 11),
    ),
    (
        "51.23",
        "Colecistectomia laparoscopica",
        0,
        "Colelitiasi sintomatica con episodi ricorrenti di colica biliare",
        10,
        (1, 3),
    ),
    (
        "47.01",
        "Appendicectomia laparoscopica",
        0,
        "Appendicite acuta flemmonosa",
        6,
        (1, 3),
    ),
    (
        "53.05",
        "Ernioplastica inguinale con protesi",
        0,
        "Ernia inguinale destra sintomatica, riducibile",
        8,
        (0, 1),
    ),
    (
        "81.51",
        "Sostituzione totale dell'anca",
        0,
        "Coxartrosi primaria avanzata con dolore invalidante",
        8,
        (4, 9),
    ),
    (
        "81.54",
        "Sostituzione totale del ginocchio",
        0,
        "Gonartrosi tricompartimentale con deformità in varo",
        7,
        (4, 8),
    ),
    (
        "80.26",
        "Artroscopia del ginocchio con meniscectomia",
        0,
        "Lesione del menisco mediale con blocco articolare",
        6,
        (0, 1),
    ),
    (
        "13.41",
        "Facoemulsificazione del cristallino con impianto di lente intraoculare",
        0,
        "Cataratta senile corticonucleare con calo del visus",
        10,
        (0, 0),
    ),
    (
        "06.4",
        "Tiroidectomia totale",
        0,
        "Gozzo multinodulare tossico; termoablazione esclusa per il volume della ghiandola",
        3,
        (2, 4),
    ),
    (
        "50.22",
        "Epatectomia parziale (segmentectomia)",
        0,
        "Metastasi epatiche da carcinoma del colon-retto, due lesioni nel lobo destro",
        2,
        (6, 12),
    ),
    (
        "45.73",
        "Emicolectomia destra laparoscopica",
        0,
        "Adenocarcinoma del colon ascendente",
        3,
        (5, 10),
    ),
    (
        "85.21",
        "Quadrantectomia mammaria con biopsia del linfonodo sentinella",
        0,
        "Carcinoma duttale infiltrante della mammella sinistra, 1,4 cm",
        4,
        (1, 3),
    ),
)

_AGE_BANDS = (("0-17", 3), ("18-44", 14), ("45-64", 30), ("65-74", 27), ("75+", 26))


class _Rng:
    """SplitMix64: a PRNG of its own, so the bytes never depend on the Python version."""

    def __init__(self, seed: int) -> None:
        self._state = seed & 0xFFFFFFFFFFFFFFFF

    def next(self) -> int:
        self._state = (self._state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n

    def weighted(self, weights: Sequence[int]) -> int:
        """An index drawn with the given integer weights."""
        point = self.below(sum(weights))
        for index, weight in enumerate(weights):
            if point < weight:
                return index
            point -= weight
        raise AssertionError("unreachable")


def _rows() -> dict[str, Sequence[tuple[object, ...]]]:
    rng = _Rng(_SEED)
    hospitals = [(i + 1, n, c, r) for i, (n, c, r, _) in enumerate(_HOSPITALS)]
    procedures = [(i + 1, p[0], p[1], p[2], p[3]) for i, p in enumerate(_PROCEDURES)]
    bands = [b for b, _ in _AGE_BANDS]
    patients = [
        (i + 1, bands[rng.weighted([w for _, w in _AGE_BANDS])], "FM"[rng.below(2)])
        for i in range(_PATIENTS)
    ]
    drafts = []
    for _ in range(_ADMISSIONS):
        day = _FIRST_DAY + timedelta(days=rng.below(_DAYS))
        hospital = rng.weighted([h[3] for h in _HOSPITALS]) + 1
        index = rng.weighted([p[4] for p in _PROCEDURES])
        low, high = _PROCEDURES[index][5]
        stay = low + rng.below(high - low + 1)
        cancelled = rng.below(100) < 4
        patient = rng.below(_PATIENTS) + 1
        drafts.append((day, hospital, index + 1, stay, cancelled, patient))
    drafts.sort(key=lambda d: (d[0], d[1], d[2], d[5]))
    admissions = [
        (
            i + 1,
            patient,
            hospital,
            procedure,
            day.isoformat(),
            (day + timedelta(days=0 if cancelled else stay)).isoformat(),
            0 if cancelled else stay,
            "day hospital" if stay == 0 else "ordinario",
            "annullato" if cancelled else "concluso",
        )
        for i, (day, hospital, procedure, stay, cancelled, patient) in enumerate(drafts)
    ]
    return {
        "ospedali": hospitals,
        "procedure": procedures,
        "pazienti": patients,
        "ricoveri": admissions,
    }


def make_demo_database(path: Path) -> Path:
    """Write the demo database to ``path`` (replacing a file there); the same bytes every time.

    Built in memory and written with the one atomic write (kernel/atomic.py), so a reader never
    sees a half-written database."""
    from kernel.atomic import atomic_write

    path = Path(path)
    connection = sqlite3.connect(":memory:", isolation_level=None)
    try:
        # a fixed page size: nothing in the bytes depends on the machine's defaults
        connection.execute("PRAGMA page_size = 4096")
        connection.execute("BEGIN")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                connection.execute(statement)
        for table, rows in _rows().items():
            marks = ", ".join("?" * len(rows[0]))
            connection.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        connection.execute("COMMIT")
        data = connection.serialize()
    finally:
        connection.close()
    atomic_write(path, data, durable=True, mode=0o644)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tht.demo_database PATH``: the demo's database for the README's tour (a file
    already there is never replaced: exit 2)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m tht.demo_database",
        description="Write the demo's hospital-admissions SQLite database (synthetic) to PATH.",
    )
    parser.add_argument("path", type=Path, help="where to write it, e.g. ws/data/ospedali.db")
    args = parser.parse_args(argv)
    target: Path = args.path
    if target.exists() or target.is_symlink():
        sys.stderr.write(f"error: {target} already exists (this never replaces a file)\n")
        return 2
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        make_demo_database(target)
    except OSError as err:
        sys.stderr.write(f"error: cannot write {target}: {err.strerror or err}\n")
        return 2
    sys.stdout.write(f"wrote {target}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
