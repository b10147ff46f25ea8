"""The routing hook's config reader never blocks: a FIFO planted where the user config or its
cached section lives is refused, not opened for reading (the hook must always exit 0, fast)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tht.hooks.route_config import load_routing_section


def test_a_fifo_as_the_cached_section_or_the_config_is_not_read(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("routing:\n  catalog: x.pack\n")
    data = tmp_path / "data"
    (data / "cache").mkdir(parents=True)
    os.mkfifo(data / "cache" / "routing-config.json")
    code = (
        "import sys; from tht.hooks.route_config import load_routing_section as load; "
        "print(load(sys.argv[1], sys.argv[2]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(config), str(data)],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert done.returncode == 0 and "x.pack" in done.stdout  # parsed afresh, cache ignored
    fifo_config = tmp_path / "fifo.yaml"
    os.mkfifo(fifo_config)
    done = subprocess.run(
        [sys.executable, "-c", code, str(fifo_config), str(tmp_path / "other")],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "{}"


def test_a_regular_config_is_cached_and_read_back(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("routing:\n  threshold: 3\n")
    first = load_routing_section(str(config), str(tmp_path / "data"))
    assert first == {"threshold": 3}
    assert (tmp_path / "data" / "cache" / "routing-config.json").is_file()
    assert load_routing_section(str(config), str(tmp_path / "data")) == first
