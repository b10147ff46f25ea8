"""``domain:`` of workspace.yaml: validated like every section (errors name the file and the
field), read as the frozen DomainProfile the SecurityGate gets; the template documents it."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kernel import domain_settings as ds
from kernel import workspace as ws
from kernel import workspace_settings as wss
from kernel.domain_profile import Dimension, DomainProfile, Entity, Restricted
from kernel.errors import UsageError
from modules.disambiguation import SecurityGate

ARCHITECTURE_EXAMPLE = """
domain:
  home_entity: {display: "Ospedale San Carlo", aliases: ["San Carlo", "OSC"]}
  external_entities:                    # refused by the SecurityGate, masked downstream
    - {display: "Clinica Rivale", aliases: ["Rivale", "Clinica Rivale SpA"], kind: competitor}
    - {display: "Mario Rossi", aliases: ["M. Rossi"], kind: out_of_scope}
  restricted: {keywords: ["stipendi", "salaries"], patterns: ['\\bIBAN\\b']}
  dimensions:
    - {name: hospital, kind: categorical,
       synonyms: {it: [ospedale, presidio], en: [hospital, site]}, clarify: ask_first}
    - {name: period, kind: temporal, default: "last 12 months", clarify: assume}
  languages: [it, en]
  escalate_unknown_to_restricted: false
"""

EXPECTED = DomainProfile(
    home_entity=Entity("Ospedale San Carlo", ("San Carlo", "OSC")),
    external_entities=(
        Entity("Clinica Rivale", ("Rivale", "Clinica Rivale SpA"), "competitor"),
        Entity("Mario Rossi", ("M. Rossi",), "out_of_scope"),
    ),
    restricted=Restricted(("stipendi", "salaries"), (r"\bIBAN\b",)),
    dimensions=(
        Dimension(
            "hospital",
            "categorical",
            {"it": ("ospedale", "presidio"), "en": ("hospital", "site")},
            clarify="ask_first",
        ),
        Dimension("period", "temporal", default="last 12 months", clarify="assume"),
    ),
    languages=("it", "en"),
)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "workspace.yaml"
    path.write_text("version: 1\n" + text, encoding="utf-8")
    return path


def test_the_architecture_example_is_read_as_its_domain_profile(tmp_path: Path) -> None:
    settings = ws.load_settings(_write(tmp_path, ARCHITECTURE_EXAMPLE))
    assert settings.domain_profile() == EXPECTED


def test_without_domain_the_profile_is_empty_with_the_workspace_languages(tmp_path: Path) -> None:
    settings = ws.load_settings(_write(tmp_path, "languages: [en]\n"))
    assert settings.domain is None
    assert settings.domain_profile() == DomainProfile(languages=("en",))
    inherited = ws.load_settings(_write(tmp_path, "languages: [it]\ndomain: {}\n"))
    assert inherited.domain_profile().languages == ("it",)


def test_the_template_documents_domain_and_its_example_is_valid(tmp_path: Path) -> None:
    workspace, _ = ws.init_workspace(tmp_path / "w")
    text = workspace.settings_file.read_text(encoding="utf-8")
    start = text.index("#   domain:")
    block = []
    for line in text[start:].splitlines():
        if not line.startswith("#  "):
            break
        block.append(line[4:])
    parsed = yaml.safe_load("\n".join(block))
    profile = ws.parse_settings(parsed, workspace.settings_file).domain_profile()
    assert profile.home_entity == EXPECTED.home_entity
    assert profile.restricted == EXPECTED.restricted
    assert SecurityGate(profile).check("Ricoveri della Rivale").verdict == "refuse"
    assert workspace.settings().domain_profile() == DomainProfile()  # commented out


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("'\\bIBAN\\b'", "'ok', 'x', '(unclosed'"), "domain.restricted.patterns[2]"),
        (("'\\bIBAN\\b'", "'a*'"), "domain.restricted.patterns[0]"),
        (("kind: out_of_scope", "kind: friend"), "domain.external_entities[1].kind"),
        (('"M. Rossi"]', '"M. Rossi", " .. "]'), "domain.external_entities[1].aliases[1]"),
        (('aliases: ["San Carlo", "OSC"]', 'aliases: [42]'), "domain.home_entity.aliases[0]"),
        (("en: [hospital, site]", "fr: [hôpital]"), "domain.dimensions[0].synonyms.fr"),
        (("kind: temporal", "kind: spatial"), "domain.dimensions[1].kind"),
        (('default: "last 12 months", ', ""), "domain.dimensions[1]"),
        (("name: hospital", "name: '2 hospital'"), "domain.dimensions[0].name"),
        (("clarify: ask_first", "clarify: maybe"), "domain.dimensions[0].clarify"),
        (("clarify: ask_first", "clarify: ask_first, column: ospedali"),
         "domain.dimensions[0].column"),  # a table.column
        (("languages: [it, en]\n  escalate", "languages: [de]\n  escalate"), "domain.languages[0]"),
        (("escalate_unknown_to_restricted: false", "escalate: true"), "domain.escalate"),
        (("escalate_unknown_to_restricted: false", "escalate_unknown_to_restricted: 7"),
         "domain.escalate_unknown_to_restricted"),
        (('aliases: ["Rivale"', 'aliases: ["osc"'), "domain"),  # a home name refused
    ],
)  # fmt: skip
def test_a_bad_domain_section_names_the_file_and_the_field(
    tmp_path: Path, edit: tuple[str, str], field: str
) -> None:
    old, new = edit
    assert old in ARCHITECTURE_EXAMPLE
    path = _write(tmp_path, ARCHITECTURE_EXAMPLE.replace(old, new, 1))
    with pytest.raises(UsageError) as err:
        ws.load_settings(path)
    assert err.value.message.startswith(f"{path}: {field}")
    assert err.value.details["file"] == str(path)
    assert "\n" not in err.value.message


def test_a_home_name_that_is_also_refused_is_reported_by_its_fields(tmp_path: Path) -> None:
    text = ARCHITECTURE_EXAMPLE.replace('aliases: ["Rivale"', 'aliases: ["  OSC "', 1)
    with pytest.raises(UsageError, match=r"external_entities\[0\]\.aliases\[0\] is also "
                       r"home_entity\.aliases\[1\]"):  # fmt: skip
        ws.load_settings(_write(tmp_path, text))
    keyword = ARCHITECTURE_EXAMPLE.replace('"salaries"', '"san carlo"', 1)
    with pytest.raises(UsageError, match=r"restricted\.keywords\[1\] is also"):
        ws.load_settings(_write(tmp_path, keyword))
    twice = ARCHITECTURE_EXAMPLE.replace("name: period", "name: hospital", 1)
    with pytest.raises(UsageError, match=r"dimensions\[1\]\.name repeats dimensions\[0\]"):
        ws.load_settings(_write(tmp_path, twice))


@given(
    st.lists(st.sampled_from([r"\bx\b", "ab+", r"\d{3}", "[a-z]{2}"]), max_size=4),
    st.sampled_from(["(", "[a-", "*x", "a{2,1}", "(?P<n>a)(?P<n>b)"]),
    st.data(),
)
def test_the_invalid_pattern_is_named_by_its_index(
    good: list[str], bad: str, data: st.DataObject
) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(good)))
    patterns = [*good[:index], bad, *good[index:]]
    path = Path("some/workspace.yaml")
    with pytest.raises(UsageError) as err:
        ws.parse_settings({"domain": {"restricted": {"patterns": patterns}}}, path)
    assert err.value.message.startswith(f"{path}: domain.restricted.patterns[{index}]: ")
    assert "not a valid regular expression" in err.value.message


def _view_fields(view: type) -> set[str]:
    return {name for name, value in vars(view).items() if isinstance(value, property)}


def _inner(annotation: Any) -> Any:
    """``X | None`` or ``list[X]`` → ``X``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return _inner(args[0]) if args and not hasattr(annotation, "model_fields") else annotation


def test_every_domain_view_names_its_models_fields() -> None:
    root = wss._models()
    assert "domain" in _view_fields(wss.WorkspaceSettingsView)
    domain = _inner(root.model_fields["domain"].annotation)
    fields = domain.model_fields
    models = {
        ds.DomainSettingsView: domain,
        ds.EntitySettingsView: _inner(fields["home_entity"].annotation),
        ds.ExternalEntitySettingsView: _inner(fields["external_entities"].annotation),
        ds.RestrictedSettingsView: fields["restricted"].annotation,
        ds.DimensionSettingsView: _inner(fields["dimensions"].annotation),
    }
    for view, model in models.items():
        names = _view_fields(view) | (
            _view_fields(ds.EntitySettingsView) if view is ds.ExternalEntitySettingsView else set()
        )
        assert names == set(model.model_fields), view.__name__


def test_reading_settings_without_domain_does_not_build_a_gate() -> None:
    # the settings module stays cheap: pydantic and the gate are not imported by importing it
    import subprocess
    import sys

    code = (
        "import sys, kernel.workspace, kernel.domain_settings; "
        "print(sorted(m for m in ('pydantic', 'modules.disambiguation') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_error_messages_never_echo_a_value(tmp_path: Path) -> None:
    text = ARCHITECTURE_EXAMPLE.replace("kind: out_of_scope", "kind: SECRET-VALUE-123", 1)
    with pytest.raises(UsageError) as err:
        ws.load_settings(_write(tmp_path, text))
    assert "SECRET-VALUE-123" not in err.value.message
    assert re.search(r"external_entities\[1\]\.kind", err.value.message)
