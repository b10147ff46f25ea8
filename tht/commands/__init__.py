"""Command groups of the ``tht`` CLI, each a typer app registered by ``tht.cli``."""
