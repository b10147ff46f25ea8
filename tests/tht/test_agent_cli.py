"""``tht agent skill build / install`` through the real CLI: stdout, --out, --check, both hosts
in both scopes, idempotence, and nothing written when a command is refused."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.tht.conftest import Result
from tht.agent_skill import SKILL_RELATIVE_PATH, build

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME, with no host variable pointing elsewhere."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "THT_WORKSPACE", "THT_SESSION", "THT_ACTOR"):
        monkeypatch.delenv(var, raising=False)
    return folder


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_build_prints_the_skill_on_stdout(tht: Callable[..., Result]) -> None:
    done = tht("agent", "skill", "build")
    assert done.code == 0, done.stderr
    assert done.stdout.encode("utf-8") == build() == (ROOT / SKILL_RELATIVE_PATH).read_bytes()
    body = tht("agent", "skill", "build", "--json").json()
    assert body["path"] is None and body["changed"] is None
    assert body["content"].encode("utf-8") == build()
    assert body["sha256"] == hashlib.sha256(build()).hexdigest()
    assert body["bytes"] == len(build())


def test_build_out_writes_once_then_is_unchanged(
    tht: Callable[..., Result], tmp_path: Path
) -> None:
    out = tmp_path / "skills" / "tht-session" / "SKILL.md"
    first = tht("agent", "skill", "build", "--out", str(out), "--json")
    assert first.code == 0, first.stderr
    assert first.json() == {
        "path": str(out),
        "sha256": hashlib.sha256(build()).hexdigest(),
        "bytes": len(build()),
        "changed": True,
    }
    assert out.read_bytes() == build()
    stamp = out.stat().st_mtime_ns
    again = tht("agent", "skill", "build", "--out", str(out), "--json")
    assert again.json()["changed"] is False
    assert out.stat().st_mtime_ns == stamp  # not rewritten


def test_check_passes_on_the_committed_skill_and_fails_on_any_difference(
    tht: Callable[..., Result], tmp_path: Path
) -> None:
    committed = ROOT / SKILL_RELATIVE_PATH
    ok = tht("agent", "skill", "build", "--check", "--out", str(committed), "--json")
    assert ok.code == 0, ok.stderr
    assert ok.json()["changed"] is False
    stale = tmp_path / "SKILL.md"
    stale.write_bytes(build().replace(b"tht session", b"tht sessione", 1))
    before = stale.read_bytes()
    done = tht("agent", "skill", "build", "--check", "--out", str(stale))
    assert done.code == 2
    assert "differs from the skill fragments: run `tht agent skill build --out" in done.stderr
    assert stale.read_bytes() == before  # --check writes nothing
    missing = tmp_path / "none" / "SKILL.md"
    assert tht("agent", "skill", "build", "--check", "--out", str(missing)).code == 2
    assert not missing.parent.exists()
    usage = tht("agent", "skill", "build", "--check", "--json")
    assert usage.code == 2
    assert usage.json()["error"]["exit_code"] == 2  # pristine JSON, the error object only


@pytest.mark.parametrize(
    ("host", "project", "where"),
    [
        ("claude-code", False, "HOME/.claude/skills/tht-session/SKILL.md"),
        ("claude-code", True, "PROJECT/.claude/skills/tht-session/SKILL.md"),
        ("codex", False, "HOME/.agents/skills/tht-session/SKILL.md"),
        ("codex", True, "PROJECT/.agents/skills/tht-session/SKILL.md"),
    ],
)
def test_install_writes_where_the_host_reads_skills_idempotently(
    tht: Callable[..., Result],
    home: Path,
    tmp_path: Path,
    host: str,
    project: bool,
    where: str,
) -> None:
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    scope = ["--project", "--project-dir", str(project_dir)] if project else ["--user"]
    expected = Path(where.replace("HOME", str(home)).replace("PROJECT", str(project_dir)))
    done = tht("agent", "skill", "install", "--host", host, *scope, "--json")
    assert done.code == 0, done.stderr
    body = done.json()
    assert body["host"] == host and body["scope"] == ("project" if project else "user")
    assert body["path"] == str(expected) and body["changed"] is True
    assert expected.read_bytes() == build()
    # the host's format: front matter whose name is the folder's
    meta = yaml.safe_load(expected.read_text(encoding="utf-8").split("---\n")[1])
    assert meta["name"] == expected.parent.name == "tht-session"
    again = tht("agent", "skill", "install", "--host", host, *scope, "--json")
    assert again.code == 0 and again.json()["changed"] is False
    other = home if project else project_dir
    assert _files(other) == []  # the other scope is untouched


def test_claude_code_user_scope_follows_claude_config_dir(
    tht: Callable[..., Result], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    done = tht("agent", "skill", "install", "--host", "claude-code", "--json")
    assert done.code == 0, done.stderr
    assert done.json()["path"] == str(config / "skills" / "tht-session" / "SKILL.md")
    assert _files(home) == []


def test_install_rewrites_a_stale_skill(tht: Callable[..., Result], home: Path) -> None:
    path = home / ".agents" / "skills" / "tht-session" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"---\nname: tht-session\ndescription: old\n---\nold\n")
    done = tht("agent", "skill", "install", "--host", "codex", "--json")
    assert done.json()["changed"] is True
    assert path.read_bytes() == build()


def test_an_unknown_host_is_a_usage_error_and_writes_nothing(
    tht: Callable[..., Result], home: Path, tmp_path: Path
) -> None:
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    for scope in (["--user"], ["--project", "--project-dir", str(project_dir)]):
        done = tht("agent", "skill", "install", "--host", "pi", *scope, "--json")
        assert done.code == 2
        assert "unknown host 'pi' (choose: claude-code, codex)" in done.json()["error"]["message"]
    assert _files(home) == [] and _files(project_dir) == []
    missing = tht("agent", "skill", "install", "--host", "codex", "--project", "--project-dir",
                  str(tmp_path / "nowhere"))  # fmt: skip
    assert missing.code == 2 and not (tmp_path / "nowhere").exists()


def test_something_in_the_way_is_refused_and_nothing_is_left(
    tht: Callable[..., Result], home: Path
) -> None:
    skills = home / ".claude" / "skills"
    skills.mkdir(parents=True)
    (skills / "tht-session").write_text("a file where the skill's folder goes")
    done = tht("agent", "skill", "install", "--host", "claude-code")
    assert done.code == 2
    assert (skills / "tht-session").read_text() == "a file where the skill's folder goes"
    folder = home / ".agents" / "skills" / "tht-session"
    (folder / "SKILL.md").mkdir(parents=True)
    assert tht("agent", "skill", "install", "--host", "codex").code == 2
    assert (folder / "SKILL.md").is_dir() and list((folder / "SKILL.md").iterdir()) == []


def test_a_symlinked_skill_file_is_refused_and_left_alone(
    tht: Callable[..., Result], home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_text("someone else's file")
    folder = home / ".agents" / "skills" / "tht-session"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").symlink_to(target)
    done = tht("agent", "skill", "install", "--host", "codex")
    assert done.code == 2 and "symbolic link" in done.stderr
    assert target.read_text() == "someone else's file" and (folder / "SKILL.md").is_symlink()


def test_a_failed_write_removes_the_folders_it_created(
    tht: Callable[..., Result], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kernel.atomic

    def full_disk(path: Path, data: bytes, **_: object) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(kernel.atomic, "atomic_write", full_disk)
    done = tht("agent", "skill", "install", "--host", "claude-code", "--json")
    assert done.code == 2
    assert "No space left on device" in done.json()["error"]["message"]
    assert _files(home) == []  # .claude/skills/tht-session created, then removed again


def test_workflow_option_renders_another_workflow(
    tht: Callable[..., Result], tmp_path: Path
) -> None:
    data = yaml.safe_load((ROOT / "workflow.yaml").read_text(encoding="utf-8"))
    next(s for s in data["stages"] if s["id"] == "cte")["emits"].append("evidence_accepted")
    custom = tmp_path / "workflow.yaml"
    custom.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    done = tht("agent", "skill", "build", "--workflow", str(custom))
    assert done.code == 0, done.stderr
    assert "| `cte` | `evidence_accepted` |" in done.stdout
    assert done.stdout.encode("utf-8") != build()
    custom.write_text("stages: [", encoding="utf-8")
    bad = tht("agent", "skill", "build", "--workflow", str(custom), "--out", str(tmp_path / "o"))
    assert bad.code == 2 and not (tmp_path / "o").exists()


def test_an_agent_may_build_and_install_the_skill(
    tht: Callable[..., Result], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THT_ACTOR", "agent")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value")
    done = tht("agent", "skill", "install", "--host", "codex", "--json")
    assert done.code == 0, done.stderr
    written = Path(json.loads(done.stdout)["path"]).read_bytes()
    assert written == build() and b"sk-test-secret-value" not in written
