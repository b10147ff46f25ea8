"""Local analytics: a SQLite store fed by idempotent, incremental imports, queries and a report.

Sources: the routing hook's JSONL log (``RoutingEvaluator`` events, spec 000 §22) and session
ledgers. Entry points: :func:`open_store`, :func:`scan_hook_log`, and the query functions; the CLI
is ``tht analytics`` (``tht/commands/analytics.py``). See ``docs/analytics.md``.
"""

from tht.analytics.hooklog import scan_hook_log
from tht.analytics.sources import SourceScan
from tht.analytics.store import AnalyticsStore, open_store, resolve_db_path

__all__ = ["AnalyticsStore", "SourceScan", "open_store", "resolve_db_path", "scan_hook_log"]
