"""``tht reviewer add | list | revoke | approve-workflow | verify``: the reviewer registry.

Every command that writes the registry is human-only twice over: refused when ``THT_ACTOR=agent``
says an agent is calling (a courtesy), and — the actual boundary — it needs a reviewer's
passphrase typed at the controlling terminal (``tht.tty``) to unlock a key that signs the entry.
``list`` and ``verify`` only read, and are open to anyone (an agent may check the registry).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tht.commands._common import human_actor, open_for
from tht.options import AcceptRollbackOpt, ActorOpt, DebugOpt, JsonOpt, WorkspaceOpt, invocation

if TYPE_CHECKING:
    from kernel.reviewer_events import LedgerStart
    from kernel.reviewer_registry import ReviewerRegistry
    from tht.composition import App

app = typer.Typer(help="Reviewers: the keys that sign human decisions (add, list, revoke).")

ReviewerArg = Annotated[str, typer.Argument(help="The reviewer: human:<id>.", show_default=False)]
ReasonReq = Annotated[str, typer.Option("--reason", help="Why (required).", show_default=False)]

#: a sealed key file can be copied and attacked offline: refuse trivially short passphrases
_MIN_PASSPHRASE = 8


def _registry(app_: App) -> ReviewerRegistry:
    from kernel.reviewer_registry import ReviewerRegistry
    from tht.witness_runtime import witness_path

    return ReviewerRegistry(
        app_.workspace.reviewers_dir, witness=witness_path(app_.workspace, "reviewers")
    )


def _require_member(registry: ReviewerRegistry, who: str) -> None:
    """Refuse before asking for a passphrase that could not help."""
    from kernel.errors import NotFoundError, PolicyError

    if not registry.exists():
        raise NotFoundError(
            "this workspace has no reviewer registry yet; its first reviewer creates it with "
            f"`tht reviewer add {who}`"
        )
    if who not in registry.state().reviewers():
        raise PolicyError(
            f"{who} is not an active reviewer of this workspace; an existing reviewer adds them "
            f"with `tht reviewer add {who} --by human:<id>`"
        )


def _ledger_starts(app_: App) -> dict[str, LedgerStart]:
    """Where signed mode begins in each workspace-level ledger: its last human entry now (seq 0
    when it has none). The first reviewer's entry records it, signed: from then on a human entry
    after it must be signed, even if the agent later moves the registry aside to write one."""
    from typing import get_args

    from kernel.signature_rules import ledger_start
    from kernel.store.base import WorkspaceLedgerName

    store = app_.kernel.store
    starts = {}
    for name in get_args(WorkspaceLedgerName):
        read = store.workspace_ledger(name).read()
        starts[name] = ledger_start(read.events, read.head)
    return starts


@app.command("add")
def add(
    reviewer: ReviewerArg,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="The existing reviewer who vouches for the new one (not for the first).",
            show_default=False,
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Create a reviewer key (passphrase typed twice at the terminal) and register it."""
    from kernel.errors import PolicyError, UsageError
    from kernel.signing import generate_signing_key, seal_key
    from kernel.transitions import check_human
    from tht import reviewer_keys
    from tht.tty import read_passphrase

    inv = invocation(workspace, json_, debug)
    check_human(reviewer, label="REVIEWER")
    human_actor(by or reviewer)
    app_ = open_for(inv)
    registry = _registry(app_)
    empty = not registry.exists()
    if empty and by is not None and by != reviewer:
        raise PolicyError("the registry is empty: its first reviewer adds themselves (drop --by)")
    if not empty and by is None:
        raise PolicyError(
            "this workspace already has reviewers; an existing one must vouch for the new one: "
            f"`tht reviewer add {reviewer} --by human:<id>`"
        )
    if not empty:
        assert by is not None
        _require_member(registry, by)
    reviewer_keys.ensure_absent(reviewer)  # before any prompt
    admin = reviewer_keys.unlock(by) if not empty and by is not None else None
    passphrase = read_passphrase(f"New passphrase for {reviewer}: ", confirm=True)
    if len(passphrase) < _MIN_PASSPHRASE:
        raise UsageError(f"the passphrase is too short: use at least {_MIN_PASSPHRASE} characters")
    key = generate_signing_key(reviewer)
    reviewer_keys.save_key(reviewer, seal_key(key, passphrase))
    try:
        signed_from = _ledger_starts(app_) if empty else None
        event = registry.add_reviewer(key, by=admin, clock=app_.clock, signed_from=signed_from)
    except BaseException:
        reviewer_keys.delete_key(reviewer)  # a key the registry does not know is useless
        raise
    body = {
        "reviewer": reviewer,
        "key_id": key.key_id,
        "public_key": key.public_key,
        "seq": event.seq,
    }
    inv.emit(
        body,
        f"added {reviewer} to the reviewer registry (seq {event.seq})\n"
        f"  key id:     {key.key_id}\n"
        f"  public key: {key.public_key}\n"
        "Note the key id: it is how you recognise your key (and a registry you started) "
        "if the registry is ever replaced.",
    )


@app.command("list")
def list_(workspace: WorkspaceOpt = None, json_: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Every key in the registry, revoked ones included; ``ok`` says whether it verifies."""
    inv = invocation(workspace, json_, debug)
    registry = _registry(open_for(inv))
    exists = registry.exists()
    state = registry.state()
    ok = registry.verify().ok if exists else True
    rows: list[dict[str, Any]] = [
        {
            "reviewer": r.reviewer,
            "key_id": r.key_id,
            "public_key": r.public_key,
            "added_seq": r.added_seq,
            "revoked": not r.active,
        }
        for r in sorted(state.keys.values(), key=lambda r: r.added_seq)
    ]
    body = {"reviewers": rows, "ok": ok}
    if inv.json:
        inv.emit(body)
        return
    if not rows:
        inv.emit(body, "no reviewers (human decisions are not signed in this workspace)")
        return
    from tht.render import render_table

    table = render_table(
        ["reviewer", "key id", "added at seq", "status"],
        [
            [r["reviewer"], r["key_id"], r["added_seq"], "revoked" if r["revoked"] else "active"]
            for r in rows
        ],
    )
    warning = "" if ok else "\nNOT OK: run `tht reviewer verify`"
    inv.emit(body, table + warning)


@app.command("revoke")
def revoke(
    reviewer: ReviewerArg,
    key: Annotated[str, typer.Option("--key", help="The key id to revoke.", show_default=False)],
    reason: ReasonReq,
    compromised: Annotated[
        bool,
        typer.Option(
            "--compromised",
            help="Someone else may hold the key: its signatures count only where a later "
            "signature of a trusted key witnesses them (retroactive). Also on a key already "
            "revoked.",
        ),
    ] = False,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Revoke a reviewer's key (signed by the reviewer given with --as)."""
    from kernel.transitions import check_human
    from tht import reviewer_keys

    inv = invocation(workspace, json_, debug)
    who = human_actor(actor)
    check_human(reviewer, label="REVIEWER")
    app_ = open_for(inv)
    registry = _registry(app_)
    _require_member(registry, who)
    signer = reviewer_keys.unlock(who)
    event = registry.revoke(
        reviewer, key, reason, by=signer, clock=app_.clock, compromised=compromised
    )
    body = {"reviewer": reviewer, "key_id": key, "seq": event.seq, "compromised": compromised}
    how = " as compromised" if compromised else ""
    inv.emit(body, f"revoked key {key} of {reviewer}{how} (seq {event.seq})")


@app.command("approve-workflow")
def approve_workflow(
    file: Annotated[
        Path | None,
        typer.Argument(help="The workflow file (default: the workspace's workflow.yaml)."),
    ] = None,
    reason: ReasonReq = "",
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Approve a custom workflow file (by the SHA-256 of its bytes) for signed sessions."""
    import hashlib

    from kernel.errors import NotFoundError, UsageError
    from kernel.workflow import load_workflow_bytes
    from tht import reviewer_keys

    inv = invocation(workspace, json_, debug)
    who = human_actor(actor)
    if not reason.strip():
        raise UsageError("an approval needs a reason: pass --reason TEXT")
    app_ = open_for(inv)
    path = file or app_.workspace.root / "workflow.yaml"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such workflow file") from None
    spec = load_workflow_bytes(raw, str(path))
    registry = _registry(app_)
    _require_member(registry, who)
    signer = reviewer_keys.unlock(who)
    digest = hashlib.sha256(raw).hexdigest()
    event = registry.approve_workflow(
        digest, spec.name, spec.version, reason, by=signer, clock=app_.clock
    )
    body = {"sha256": digest, "name": spec.name, "version": spec.version, "seq": event.seq}
    inv.emit(body, f"approved workflow {spec.name} v{spec.version} ({digest}) at seq {event.seq}")


@app.command("verify")
def verify(
    accept_rollback: AcceptRollbackOpt = False,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Hash chain, seq, head anchor, every entry's signature, and the witness of the longest
    registry this workspace's tht verified (a rollback is ``rolled_back``). Exit 7 if not ok.
    ``--accept-rollback --as human:ID`` (an active reviewer of the registry as it is now, key
    unlocked at the terminal) accepts the loss: the witness moves to the registry's end."""
    inv = invocation(workspace, json_, debug)
    who = human_actor(actor) if accept_rollback else None
    registry = _registry(open_for(inv))
    if who is not None:
        report = _accept_rollback(registry, who)
        body = {"registry": str(registry.ledger.path), "accepted": True, **report.to_json()}
        inv.emit(body, f"accepted by {who}: {report.events} entries, head {report.head}")
        return
    report = registry.verify()
    body = {"registry": str(registry.ledger.path), **report.to_json()}
    if report.ok:
        inv.emit(body, f"ok: {report.events} entries, head {report.head}")
        return
    lines = [f"NOT OK: {report.events} entries"]
    for problem in report.problems:
        where = f"line {problem.line}: " if problem.line else ""
        lines.append(f"  {where}{problem.code}: {problem.message}")
    inv.emit(body, "\n".join(lines))
    raise typer.Exit(7)


def _accept_rollback(registry: ReviewerRegistry, who: str) -> Any:
    """The registry accepted as it is now by ``who``: an active reviewer of it, whose key is
    unlocked at the terminal (refused with exit 5 without one) — a rolled-back registry trusts
    nobody for anything else, so the key is checked against the registry itself. A registry
    deleted whole has no reviewer left to unlock a key of: ``--as`` is all there is."""
    from kernel.errors import PolicyError
    from kernel.ledger_verify import VerifyReport, genesis_hash
    from kernel.reviewers import REGISTRY_LEDGER_ID
    from tht import reviewer_keys
    from tht.witness_runtime import accept_rollback

    def confirm() -> None:
        if not registry.exists():
            return
        _require_member(registry, who)
        key = reviewer_keys.unlock(who)
        record = registry.state().keys.get(key.key_id)
        if record is None or not record.active or record.public_key != key.public_key:
            raise PolicyError(
                f"{who}'s key {key.key_id} is not an active key of the registry as it is now"
            )

    def verify() -> VerifyReport:  # accepted deleted whole: no registry, nothing to verify
        if registry.exists() or registry.witnessed():
            return registry.verify()
        return VerifyReport(ok=True, events=0, head=genesis_hash(REGISTRY_LEDGER_ID))

    assert registry.witnessed_ledger is not None
    return accept_rollback(registry.witnessed_ledger, verify, confirm)
