"""Evidence Fragments: headings and paragraphs split, atomic elements never cut, size bounded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from modules.evidence.fragments import fragment_unit
from modules.evidence.units import EvidenceUnit, UnitFrontMatter


def _unit(body: str, title: str = "T") -> EvidenceUnit:
    front = UnitFrontMatter(
        id="evidence:u",
        kind="domain",
        purposes=["schema_linking"],
        title=title,
        source="a.md",
        excerpts=["x"],
    )
    return EvidenceUnit(front=front, body=body)


def test_a_heading_starts_a_new_fragment_and_ids_are_numbered() -> None:
    plan = fragment_unit(_unit("intro\n\n## A\n\nalpha\n\n## B\n\nbeta"), 4000)
    assert [f.id for f in plan.fragments] == ["evidence:u#1", "evidence:u#2", "evidence:u#3"]
    assert [f.headings for f in plan.fragments] == [(), ("A",), ("B",)]
    assert plan.fragments[1].rendered == "T\nA\n\nalpha"


def test_paragraphs_pack_together_until_the_limit() -> None:
    body = "\n\n".join(f"paragraph {i} " + "x" * 50 for i in range(10))
    plan = fragment_unit(_unit(body), 200)
    assert len(plan.fragments) > 1
    assert all(len(f.rendered) <= 200 for f in plan.fragments)
    joined = "\n\n".join(f.text for f in plan.fragments)
    assert joined == body


def test_table_rows_are_split_between_fragments_with_the_header_repeated() -> None:
    rows = "\n".join(f"| V{i} | meaning number {i} |" for i in range(40))
    body = "| Value | Meaning |\n|---|---|\n" + rows
    plan = fragment_unit(_unit(body), 300)
    assert len(plan.fragments) > 1
    for fragment in plan.fragments:
        assert fragment.text.startswith("| Value | Meaning |\n|---|---|\n")
        assert len(fragment.rendered) <= 300
    for i in range(40):  # every value/meaning pair is whole in exactly one fragment
        hits = [f for f in plan.fragments if f"| V{i} | meaning number {i} |" in f.text]
        assert len(hits) == 1


def test_an_atomic_element_too_large_is_reported_and_never_cut() -> None:
    formula = "```sql\n" + " + ".join(f"col_{i}" for i in range(200)) + "\n```"
    plan = fragment_unit(_unit("small\n\n" + formula), 500)
    assert len(plan.too_large) == 1
    assert "max_chunk_chars=500" in plan.too_large[0]
    assert any(f.text == formula for f in plan.fragments)


def test_an_empty_body_indexes_the_excerpts() -> None:
    plan = fragment_unit(_unit(""), 4000)
    assert [f.text for f in plan.fragments] == ["x"]


_word = st.text(alphabet="abcdefghij ", min_size=1, max_size=30).map(str.strip).filter(bool)
_para = st.lists(_word, min_size=1, max_size=8).map(" ".join)
_item = _word.map(lambda w: f"- {w} = meaning of {w}")
_block = st.one_of(_para, st.lists(_item, min_size=1, max_size=6).map("\n".join))


@given(blocks=st.lists(_block, min_size=1, max_size=12), limit=st.integers(120, 600))
def test_fragments_fit_and_keep_every_atom_whole(blocks: list[str], limit: int) -> None:
    body = "\n\n".join(blocks)
    plan = fragment_unit(_unit(body), limit)
    if not plan.too_large:
        assert all(len(f.rendered) <= limit for f in plan.fragments)
    texts = [f.text for f in plan.fragments]
    for block in blocks:
        atoms = block.split("\n") if block.startswith("- ") else [block]
        for atom in atoms:
            assert any(atom in t for t in texts)
