"""The Metadata Catalog module (ARCHITECTURE §3.8, §4.5; glossary "Catalogo dei metadati").

A workspace-level ledger (``catalog/ledger.jsonl``, same envelope, hash chain and store as
sessions) folded into Catalog Tables, Columns and Relationships, Logical Relationships
(Generated and Manual) and Catalog Sync Runs. Imports only ``kernel``; the ledger, the
content-addressed objects, the clock, the ids and the Workspace Database arrive through
:class:`CatalogCapabilities`.

Entry points: :class:`Catalog` (catalog.py: load, append, verify, the SchemaView),
:func:`run_sync` (sync.py: a Catalog Sync Run), the curation planners (curation.py),
:func:`fold_catalog` (fold.py), :func:`relationship_map` (relationship_map.py), the
``show`` / ``status`` projections (projections.py). The schema index for schema linking
(schema_*.py, linking.py) is a projection of the catalog built beside it. Sensitive data:
the offline pre-pass (sensitive.py), the flag and suggestion-run planners (sensitive_flags.py)
and the Catalog Sample under the Sensitive Data Policy (sample.py).

Nothing heavy is imported here: the database library arrives behind ``DatabaseAccess``.
"""

from modules.catalog.capabilities import CatalogCapabilities, DatabaseAccess
from modules.catalog.catalog import Catalog, LoadedCatalog
from modules.catalog.catalog_schema_view import CatalogSchemaView
from modules.catalog.curation import (
    plan_add,
    plan_cleanup,
    plan_delete,
    plan_reconstruct,
    plan_restore,
)
from modules.catalog.fold import fold_catalog, fold_catalog_from
from modules.catalog.projections import show_json, status_json
from modules.catalog.records import CatalogState
from modules.catalog.relationship_map import relationship_map
from modules.catalog.sample import CatalogSample, build_sample, synthetic_value
from modules.catalog.sensitive import SensitiveProposal, classify_column, propose_sensitive
from modules.catalog.sensitive_flags import plan_flags, plan_suggestion_run, suggest
from modules.catalog.sync import NO_BINDING, SyncReport, run_sync

__all__ = [
    "NO_BINDING",
    "Catalog",
    "CatalogCapabilities",
    "CatalogSample",
    "CatalogSchemaView",
    "CatalogState",
    "DatabaseAccess",
    "LoadedCatalog",
    "SensitiveProposal",
    "SyncReport",
    "build_sample",
    "classify_column",
    "fold_catalog",
    "fold_catalog_from",
    "plan_add",
    "plan_cleanup",
    "plan_delete",
    "plan_flags",
    "plan_reconstruct",
    "plan_restore",
    "plan_suggestion_run",
    "propose_sensitive",
    "relationship_map",
    "run_sync",
    "show_json",
    "status_json",
    "suggest",
    "synthetic_value",
]
