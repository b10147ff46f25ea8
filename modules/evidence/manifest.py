"""The Evidence manifest: ``evidence/manifest.json``, versioned and managed by the system.

It links every Source Evidence to the hash it had when it was last prepared and to the units
derived from it, and remembers retired ids so a slug is never given to different content::

    {
      "retired": ["evidence:old-rate"],
      "sources": {
        "california-schools.md": {"sha256": "…", "units": ["evidence:eligible-free-rate"]}
      },
      "version": 1
    }

An entry may also list ``declined`` passage hashes (see :class:`ManifestSource`).
``sha256`` is null for a source that only hand-written units cite and that was never prepared.
The file is rendered with sorted keys, two-space indent and a final newline so that its Git diff
shows exactly what changed.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from kernel.errors import UsageError

__all__ = ["MANIFEST_FILE", "Manifest", "ManifestSource", "load_manifest", "render_manifest"]

MANIFEST_FILE = "manifest.json"


class ManifestSource(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    sha256: str | None = None
    units: tuple[str, ...] = ()
    # hashes (SHA-256 of the collapsed excerpt) of passages whose units a curator retired with
    # `tht evidence resolve --retire`: `prepare` treats them as covered and never recreates them
    declined: tuple[str, ...] = ()


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    sources: dict[str, ManifestSource] = msgspec.field(default_factory=dict)
    retired: tuple[str, ...] = ()

    def unit_ids(self) -> set[str]:
        return {uid for entry in self.sources.values() for uid in entry.units}

    def source_of(self, unit_id: str) -> str | None:
        for path, entry in self.sources.items():
            if unit_id in entry.units:
                return path
        return None


def load_manifest(path: Path) -> Manifest:
    """The manifest at ``path``; an absent file is an empty manifest; a corrupt one is exit 2."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Manifest()
    try:
        manifest = msgspec.json.decode(raw, type=Manifest)
    except (msgspec.ValidationError, msgspec.DecodeError) as err:
        raise UsageError(
            f"evidence/{MANIFEST_FILE}: not a valid Evidence manifest ({err}); it is managed by "
            "tht: restore it from Git"
        ) from err
    if manifest.version != 1:
        raise UsageError(f"evidence/{MANIFEST_FILE}: unsupported version {manifest.version}")
    return manifest


def render_manifest(manifest: Manifest) -> bytes:
    """Canonical bytes: sorted keys and ids, indent 2, trailing newline."""
    canonical = Manifest(
        version=manifest.version,
        sources={
            path: ManifestSource(
                sha256=entry.sha256,
                units=tuple(sorted(set(entry.units))),
                declined=tuple(sorted(set(entry.declined))),
            )
            for path, entry in sorted(manifest.sources.items())
        },
        retired=tuple(sorted(set(manifest.retired))),
    )
    body = msgspec.json.encode(canonical, order="sorted")
    return msgspec.json.format(body, indent=2) + b"\n"
