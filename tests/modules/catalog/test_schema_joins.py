"""The join path between chosen tables: a deterministic Steiner-tree approximation."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kernel.schema_view import SchemaRelationship
from modules.catalog.linking_joins import join_path


def rel(
    rid: str, a: str, ac: str, b: str, bc: str = "id", origin: str = "physical"
) -> SchemaRelationship:
    return SchemaRelationship(
        id=rid,
        from_table=a,
        from_columns=(ac,),
        to_table=b,
        to_columns=(bc,),
        origin=origin,  # type: ignore[arg-type]
    )


SHOP = (
    rel("r1", "orders", "customer_id", "customers"),
    rel("r2", "order_items", "order_id", "orders"),
    rel("r3", "order_items", "product_id", "products"),
    rel("r4", "products", "supplier_id", "suppliers"),
)


def test_bridge_tables_join_the_chosen_ones() -> None:
    path = join_path(["customers", "products"], SHOP)
    assert path.tables == ("customers", "orders", "order_items", "products")
    assert path.bridges == ("orders", "order_items")
    assert path.column_pairs() == [
        (("orders", "customer_id"), ("customers", "id")),
        (("order_items", "order_id"), ("orders", "id")),
        (("order_items", "product_id"), ("products", "id")),
    ]
    assert path.unreachable == ()


def test_the_nearest_terminal_joins_first_and_shared_bridges_are_reused() -> None:
    path = join_path(["customers", "suppliers", "products"], SHOP)
    # products is nearer to the tree than suppliers once order_items is in: no second path
    assert path.tables == ("customers", "orders", "order_items", "products", "suppliers")
    assert len(path.edges) == 4


def test_a_table_no_relationship_reaches_is_unreachable_not_invented() -> None:
    path = join_path(["customers", "warehouses"], SHOP)
    assert path.tables == ("customers",)
    assert path.edges == ()
    assert path.unreachable == ("warehouses",)


def test_paths_longer_than_max_hops_are_not_taken() -> None:
    assert join_path(["customers", "suppliers"], SHOP, max_hops=3).unreachable == ("suppliers",)
    assert join_path(["customers", "suppliers"], SHOP, max_hops=4).unreachable == ()


def test_between_two_tables_physical_wins_unless_the_caller_prefers_another() -> None:
    rels = (
        rel("b-gen", "match", "home_team_id", "team", origin="generated"),
        rel("a-phys", "match", "away_team_id", "team"),
    )
    assert join_path(["match", "team"], rels).edges[0].id == "a-phys"
    preferred = join_path(
        ["match", "team"], rels, prefer=lambda r: 1.0 if "home" in r.from_columns[0] else 0.0
    )
    assert preferred.edges[0].id == "b-gen"


def test_self_joins_and_duplicate_terminals_are_ignored() -> None:
    rels = (rel("s", "employees", "manager_id", "employees"), *SHOP)
    path = join_path(["employees", "employees", "customers"], rels)
    assert path.tables == ("employees",)
    assert path.unreachable == ("customers",)


_TABLES = [f"t{i}" for i in range(7)]
_EDGES = st.lists(
    st.tuples(st.sampled_from(_TABLES), st.sampled_from(_TABLES)).filter(lambda e: e[0] != e[1]),
    max_size=12,
)


@given(
    _EDGES,
    st.lists(st.sampled_from(_TABLES), min_size=1, max_size=4, unique=True),
    st.randoms(use_true_random=False),
)
def test_the_path_is_a_tree_over_the_terminals_whatever_the_input_order(
    edges: list[tuple[str, str]], terminals: list[str], rnd: object
) -> None:
    rels = [rel(f"r{i}", a, f"{b}_id", b) for i, (a, b) in enumerate(edges)]
    path = join_path(terminals, rels)
    shuffled = list(rels)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert join_path(terminals, shuffled) == path  # deterministic
    # a tree: connected, one edge fewer than its tables, every edge inside it
    assert len(path.edges) == len(path.tables) - 1
    inside = set(path.tables)
    assert all(e.from_table in inside and e.to_table in inside for e in path.edges)
    # every terminal is either in the tree or reported unreachable, never both
    assert set(terminals) == (set(terminals) & inside) | set(path.unreachable)
    assert not set(path.unreachable) & inside
    assert set(path.bridges) == inside - set(terminals)
