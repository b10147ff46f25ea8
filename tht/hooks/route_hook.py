"""``tht-route-hook``: the ``UserPromptSubmit`` hook of Claude Code and Codex (spec 000 §2, §6).

Protocol: the host writes one JSON object on stdin (``session_id``, ``transcript_path``, ``cwd``,
``permission_mode``, ``hook_event_name``, ``prompt``; Codex adds ``turn_id`` and ``model``). We
answer on stdout with

    {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "…"}}

or with nothing, and we **always exit 0**: exit 2 would erase the user's prompt, any other code
shows an error. Whatever happens (no catalog, a corrupt one, bad input, a bug), the user's prompt
goes through untouched.

Catalog: ``--catalog FILE``, else ``$THT_ROUTING_CATALOG``, else ``routing.catalog`` in the user
config. It is read by fd into memory (``modules.routing.pack.open_pack``: ``O_NONBLOCK``, regular
files only, size-bounded, no mmap), so a FIFO, a device or a catalog rewritten or truncated while
in use gives no hint and a reason on stderr — never a hang or a SIGBUS. One
``RoutingEvaluator`` event per prompt is appended, best effort, to ``tht.paths.hook_log_file()``.

Hot path: standard library, ``tht.paths`` and the pure router only (no typer, pydantic, rich or
HTTP client). The optional evaluator, and the semantic rescue (``routing.semantic``,
:mod:`modules.routing.semantic`), are imported only when the user config enables them.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["main"]

MAX_STDIN_BYTES = 2_000_000
MAX_PROMPT_CHARS = 20_000
MAX_CONTEXT_ENTRIES = 256


USAGE = """\
usage: tht-route-hook [--catalog FILE] < HOST_PAYLOAD.json
       tht-route-hook --help | --version

The UserPromptSubmit hook of Claude Code and Codex: reads the host's JSON payload on stdin and
answers with a routing hint (hookSpecificOutput.additionalContext) on stdout, or with nothing.
It always exits 0, so the user's prompt always goes through.

  --catalog FILE  the routing catalog (default: $THT_ROUTING_CATALOG, else routing.catalog in
                  the user config)
  --help, -h      print this help and exit
  --version       print the version and exit

Install it with `tht hooks install --host claude-code|codex`; see docs/routing.md.
"""


def _info(args: list[str]) -> str | None:
    """``--help`` / ``--version``: what to print instead of reading stdin (None: the protocol)."""
    if "--help" in args or "-h" in args:
        return USAGE
    if "--version" in args:
        from tht import __version__

        return f"tht-route-hook {__version__}\n"
    return None


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: never raises, always exits 0."""
    try:
        args = list(sys.argv[1:] if argv is None else argv)
        out = _info(args)
        if out is None:
            out = _run(args)
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
    except BaseException:
        pass
    if _hard_exit():
        os._exit(0)
    sys.exit(0)


def _hard_exit() -> bool:
    """``os._exit`` skips interpreter teardown (faster); tests that call ``main`` in-process
    set ``THT_HOOK_SOFT_EXIT``."""
    try:
        sys.stdout.flush()
    except Exception:
        return False
    return not os.environ.get("THT_HOOK_SOFT_EXIT")


def _option(args: list[str], name: str) -> str | None:
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1 :]
    return None


def _read_payload() -> dict[str, Any] | None:
    raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if not raw or len(raw) > MAX_STDIN_BYTES:
        return None
    try:
        payload = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def _context_extensions(cwd: Any) -> list[str]:
    """File extensions at the top of the working folder (the "context" signal; bounded)."""
    if not isinstance(cwd, str) or not cwd or len(cwd) > 4096:
        return []
    found: set[str] = set()
    try:
        with os.scandir(cwd) as entries:
            for count, entry in enumerate(entries):
                if count >= MAX_CONTEXT_ENTRIES:
                    break
                name = entry.name
                dot = name.rfind(".")
                if 0 < dot < len(name) - 1 and len(name) - dot <= 6:
                    found.add(name[dot + 1 :].lower())
    except OSError:
        return []
    return sorted(found)


def _run(args: list[str]) -> str:
    payload = _read_payload()
    if payload is None:
        return ""
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        return ""
    prompt = prompt[:MAX_PROMPT_CHARS]

    from tht import paths

    section: dict[str, Any] = {}
    catalog = _option(args, "--catalog") or os.environ.get("THT_ROUTING_CATALOG")
    config_file = str(paths.user_config_file())
    if _is_regular_file(config_file):  # a FIFO or device here would block the read
        from tht.hooks.route_config import load_routing_section

        section = load_routing_section(config_file, str(paths.user_data_dir()))
    if not catalog and isinstance(section.get("catalog"), str):
        catalog = os.path.expanduser(section["catalog"])
    telemetry = section.get("telemetry")
    log_enabled = not (isinstance(telemetry, dict) and telemetry.get("enabled") is False)

    from modules.routing.gate import GATE_CONFIG
    from modules.routing.pack import CatalogError, open_pack

    gate_config, evaluate, environment, forced_status = _evaluator(section, GATE_CONFIG)
    ts, request_id = _stamp()
    out = ""
    event: dict[str, Any]
    try:
        if not catalog:
            raise CatalogError("no catalog configured")
        pack = open_pack(catalog)
        if evaluate is not None:
            evaluate.catalog_fingerprint = pack.fingerprint
        from modules.routing.pipeline import run_routing

        outcome = run_routing(
            prompt,
            pack,
            context_extensions=_context_extensions(payload.get("cwd")),
            gate_config=gate_config,
            evaluate=evaluate,
            environment=environment,
            ts=ts,
            request_id=request_id,
            semantic=_semantic(section.get("semantic"), catalog, pack.fingerprint),
        )
        event = outcome.event
        if forced_status and event.get("evaluator_status") != "disabled":
            event["evaluator_status"] = forced_status
        if outcome.context:
            out = json.dumps(
                {
                    "hookSpecificOutput": {
                        "hookEventName": "UserPromptSubmit",
                        "additionalContext": outcome.context,
                    }
                },
                ensure_ascii=False,
            )
    except Exception as err:  # no catalog, corrupt catalog, a bug: no hint, one event
        from modules.routing.telemetry import build_event

        reason = "catalog-unavailable" if isinstance(err, CatalogError) else "internal-error"
        detail = str(err) if isinstance(err, CatalogError) else type(err).__name__
        _warn(f"no routing hint ({reason}): {detail}")
        event = build_event(
            ts=ts,
            request_id=request_id,
            verdict=None,
            resolution=None,
            config=gate_config,
            candidate_count=0,
            catalog_ok=False,
            fallback_reason=reason,
        )
        out = ""
    if log_enabled:
        _append_log(event, str(paths.hook_log_file()))
    return out


def _is_regular_file(path: str) -> bool:
    import stat

    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _warn(message: str) -> None:
    """The reason there is no hint, on stderr (hosts show it only in verbose modes): one line,
    bounded, control characters made visible. Best effort."""
    try:
        clean = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in message[:500])
        sys.stderr.write(f"tht-route-hook: {clean}\n")
        sys.stderr.flush()
    except Exception:
        pass


def _semantic(section: Any, catalog: str, fingerprint: str) -> Any:
    """The semantic rescue plug when ``routing.semantic.enabled`` is true, else None. Nothing of
    it is imported or validated until the pipeline asks it (a prompt with no hint): a clear
    prompt pays nothing. Its skill vectors lie beside the catalog; an invalid section, like a
    missing or foreign vectors file, means no rescue and a reason on stderr, never an error."""
    if not isinstance(section, dict) or section.get("enabled") is not True:
        return None
    built: list[Any] = []

    def rescue(routing: Any, resolution: Any) -> Any:
        if not built:
            from modules.routing.semantic import SemanticSettings, semantic_plug, sidecar_path

            try:
                settings = SemanticSettings.from_section(section)
            except ValueError as err:
                _warn(f"semantic rescue off: {err}")
                built.append(None)
            else:
                built.append(
                    semantic_plug(
                        settings,
                        sidecar_path(catalog),
                        fingerprint,
                        on_skip=lambda reason: _warn(f"no semantic rescue: {reason}"),
                    )
                )
        plug = built[0]
        return None if plug is None else plug(routing, resolution)

    return rescue


def _evaluator(section: dict[str, Any], defaults: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    """Gate configuration and, only when the evaluator is enabled, the evaluator plug.

    Enabled means ``routing.evaluator.enabled: true`` in the user config or
    ``MCP_ROUTING_EVALUATOR_ENABLED=true``; ``MCP_ROUTING_EVALUATOR_ENABLED=false`` turns it off
    whatever the file says (the single rollback flag, spec 000 §17.4). Nothing of the evaluator is
    imported otherwise. The plug (``modules.routing.evaluator.hook_evaluator``) is cheap to build:
    it validates and imports only when the gate sends it a prompt.
    """
    settings = section.get("evaluator")
    settings = settings if isinstance(settings, dict) else {}
    flag = os.environ.get("MCP_ROUTING_EVALUATOR_ENABLED", "").strip().lower()
    if flag in ("0", "false", "no", "off") or (
        settings.get("enabled") is not True and flag not in ("1", "true", "yes", "on")
    ):
        return defaults, None, None, None
    gate = dict(defaults)
    try:
        from modules.routing.evaluator import hook_evaluator
        from tht import paths

        evaluate, environment = hook_evaluator(
            settings,
            os.environ,
            state_dir=str(paths.user_data_dir() / "cache"),
            on_call=_abort_on_termination,  # installed only when a provider call is made
        )
        gate.update(evaluate.gate_overrides)
    except Exception:  # misconfigured beyond repair: deterministic only
        gate["enabled"] = False
        return gate, None, None, "config-invalid"
    return gate, evaluate, environment, None


def _abort_on_termination() -> Any:
    """An AbortSignal fired by SIGTERM/SIGINT: a host that gives up on the hook mid-call gets the
    deterministic answer at once instead of nothing (spec 000 §19.1 "external abort")."""
    import contextlib
    import signal

    from kernel.llm.abort import AbortSignal

    abort = AbortSignal()

    def handler(signum: int, frame: Any) -> None:
        abort.abort()

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(ValueError, OSError):  # not the main thread, or unsupported
            signal.signal(sig, handler)
    return abort


def _stamp() -> tuple[str, str]:
    import time

    now = time.time()
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
    return ts, "routing-" + os.urandom(4).hex()


def _append_log(event: dict[str, Any], path: str) -> None:
    """Best effort: one line, one ``write`` with O_APPEND; any failure is ignored."""
    try:
        from modules.routing.telemetry import sanitize_event

        line = json.dumps(sanitize_event(event), ensure_ascii=False, separators=(",", ":"))
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except Exception:
        pass


if __name__ == "__main__":
    main()
