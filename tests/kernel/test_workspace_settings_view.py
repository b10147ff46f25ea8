"""The typed views of workspace.yaml (kernel.workspace_settings.*View) name exactly the
pydantic models' fields: a field added to the file's model without its view (or the reverse)
fails here."""

from __future__ import annotations

import typing
from typing import Any

from kernel import workspace_settings as ws
from kernel.workspace import init_workspace


def _view_fields(view: type) -> set[str]:
    return {name for name, value in vars(view).items() if isinstance(value, property)}


def _model_fields(model: Any) -> dict[str, Any]:
    return dict(model.model_fields)


def test_every_settings_view_names_its_models_fields() -> None:
    root = ws._models()
    models = {
        ws.WorkspaceSettingsView: root,
        ws.ScopeView: root.model_fields["scope"].annotation,
        ws.EvidenceSettingsView: root.model_fields["evidence"].annotation,
        ws.VectorStoreSettingsView: root.model_fields["vector_store"].annotation,
        ws.StoreSettingsView: root.model_fields["store"].annotation,
        ws.AfterFinalizeView: typing.get_args(root.model_fields["after_finalize"].annotation)[0],
    }
    for view, model in models.items():
        assert _view_fields(view) == set(_model_fields(model)), view.__name__


def test_loaded_settings_are_read_through_their_view(tmp_path: Any) -> None:
    workspace, _ = init_workspace(tmp_path / "w")
    settings = workspace.settings()
    assert settings.scope.refuse == [] and settings.store.kind == "fs"
    assert settings.human_decisions == "unsigned" and settings.evidence.rrf_k == 60
