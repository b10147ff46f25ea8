"""Point ids (kernel.vectors.point_id): a UUID per key; with an ``order`` key, ordered alike in
every generation, so equal scores keep their order when the same content is written again."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from kernel.vectors import point_id

_NAMES = st.lists(st.text(min_size=1, max_size=12), min_size=2, max_size=12, unique=True)
_GENERATIONS = st.tuples(st.text(max_size=8), st.text(max_size=8)).filter(lambda g: g[0] != g[1])


def test_a_key_alone_is_its_uuid5() -> None:
    ns = uuid.UUID("5f0c6c0e-8d1a-5b8e-9d5e-7468742d7663")
    assert point_id("evidence:g1:x#1") == str(uuid.uuid5(ns, "evidence:g1:x#1"))


@given(names=_NAMES, generations=_GENERATIONS)
def test_ordered_ids_sort_alike_in_every_generation(
    names: list[str], generations: tuple[str, str]
) -> None:
    """The same things written in two generations: distinct ids, each a version 8 UUID of the
    RFC 9562 variant, and the same order between them in both."""
    orders = []
    for generation in generations:
        ids = {
            name: point_id(f"evidence:{generation}:{name}", order=f"evidence:{name}")
            for name in names
        }
        parsed = [uuid.UUID(i) for i in ids.values()]
        assert all(u.version == 8 and u.variant == uuid.RFC_4122 for u in parsed)
        assert all(str(u) == i for u, i in zip(parsed, ids.values(), strict=True))
        assert len(set(ids.values())) == len(names)
        orders.append(sorted(names, key=lambda n, ids=ids: ids[n]))
    assert orders[0] == orders[1]
    first, second = generations
    assert {point_id(f"evidence:{first}:{n}", order=f"evidence:{n}") for n in names}.isdisjoint(
        {point_id(f"evidence:{second}:{n}", order=f"evidence:{n}") for n in names}
    )
