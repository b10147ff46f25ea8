"""The HTML report: one self-contained file that renders (charts painted) in headless Chromium."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from collections import Counter
from pathlib import Path

import pytest

from tht.analytics.hooklog import scan_hook_log
from tht.analytics.ledgers import scan_sessions
from tht.analytics.report import collect, render_html, write_report
from tht.analytics.store import AnalyticsStore

from .conftest import HOOK_LOG, NOW
from .sessions_driver import drive_three_sessions

CHARTS = (
    "statuses-per-day",
    "latency-by-profile",
    "disagreement-by-profile",
    "fallback-reasons",
    "review-wait-by-stage",
)
# Colours only a painted chart can put on the page: completed, disagreement, fallback bars, p50.
# Minimum pixel counts at the half-scale screenshot below (each colour paints thousands).
MARKS = {"#2ca02c": 400, "#9467bd": 400, "#d62728": 400, "#1f77b4": 150}


@pytest.fixture
def report(store: AnalyticsStore, tmp_path: Path) -> Path:
    scan_hook_log(store, HOOK_LOG, now=NOW)
    driver = drive_three_sessions(tmp_path / "ws")
    scan_sessions(store, driver.app.workspace.root, now=NOW)
    out = tmp_path / "out" / "report.html"
    write_report(store.conn, out, date_from=None, date_to=None, generated_at=NOW)
    return out


def test_the_report_is_one_file_that_needs_no_network(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert "default-src 'none'" in page  # the page may not fetch anything
    assert not re.search(r"<script|<link|<img|<iframe|@import|url\(", page, re.IGNORECASE)
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace, never fetched
    for chart in CHARTS:
        assert f'data-chart="{chart}"' in page


def test_every_chart_has_marks_for_the_fixture_data(store: AnalyticsStore, tmp_path: Path) -> None:
    scan_hook_log(store, HOOK_LOG, now=NOW)
    driver = drive_three_sessions(tmp_path / "ws")
    scan_sessions(store, driver.app.workspace.root, now=NOW)
    page = render_html(collect(store.conn, date_from=None, date_to=None, generated_at=NOW))
    for chart in CHARTS:
        svg = page.split(f'data-chart="{chart}"', 1)[1].split("</svg>", 1)[0]
        assert svg.count("<title>") > 3, chart  # one hover title per mark, beyond the chart's own
    assert ">no-evaluation</text>" in page and ">disambiguation</text>" in page


def test_an_empty_store_still_renders_every_section(store: AnalyticsStore) -> None:
    page = render_html(collect(store.conn, date_from=None, date_to=None, generated_at=NOW))
    for chart in CHARTS:
        assert f'data-chart="{chart}"' in page
    assert "no data in this range" in page


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _run_chromium(binary: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                *args,
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )


def test_the_report_renders_in_headless_chromium(report: Path, tmp_path: Path) -> None:
    binary = _chromium()
    if binary is None:
        pytest.skip(
            "Chromium is not installed and could not be installed here (make test installs "
            "Debian's `chromium` when it runs as root with apt); report rendering not checked"
        )
    dom = _run_chromium(binary, "--dump-dom", report.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout.decode("utf-8")
    for chart in CHARTS:
        svg = html.split(f'data-chart="{chart}"', 1)[1].split("</svg>", 1)[0]
        assert re.search(r"<(rect|path|line)\b", svg), chart

    shot = tmp_path / "report.png"
    done = _run_chromium(
        binary,
        f"--screenshot={shot}",
        "--window-size=900,2600",
        "--force-device-scale-factor=0.5",  # a quarter of the pixels to decode in Python
        report.as_uri(),
    )
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    width, height, pixels = _decode_png(shot.read_bytes())
    assert (width, height) == (450, 1300)
    colours = Counter(pixels)
    counts = {}
    for key in MARKS:
        rgb = tuple(int(key[i : i + 2], 16) for i in (1, 3, 5))
        counts[key] = sum(
            n
            for c, n in colours.items()
            if all(abs(a - b) <= 6 for a, b in zip(c, rgb, strict=True))
        )
    assert all(counts[key] >= least for key, least in MARKS.items()), counts


def _decode_png(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """8-bit RGB/RGBA, non-interlaced PNG → (width, height, RGB pixels). Enough for screenshots."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color in (2, 6) and interlace == 0
    channels = 3 if color == 2 else 4
    stride = width * channels
    raw = zlib.decompress(idat)
    previous = bytearray(stride)
    pixels: list[tuple[int, int, int]] = []
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + pred) & 0xFF
        pixels.extend((line[i], line[i + 1], line[i + 2]) for i in range(0, stride, channels))
        previous = line
    return width, height, pixels


def test_subtitle_names_the_real_first_and_last_events(store: AnalyticsStore) -> None:
    empty = render_html(collect(store.conn, date_from=None, date_to=None, generated_at=NOW))
    assert "the first event" not in empty and "no events imported yet" in empty
    scan_hook_log(store, HOOK_LOG, now=NOW)
    first, last = store.conn.execute(
        "SELECT MIN(occurred_at), MAX(occurred_at) FROM runtime_events"
    ).fetchone()
    assert first < last
    page = render_html(collect(store.conn, date_from=None, date_to=None, generated_at=NOW))
    assert f"events from {first} to {last}" in page
    assert "the first event" not in page and "the last event" not in page
    later = render_html(collect(store.conn, date_from="2099-01-01", date_to=None, generated_at=NOW))
    assert "no events from 2099-01-01" in later
