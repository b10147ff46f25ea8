"""tht — the application layer: CLI, composition root, agent-host hooks, analytics."""

__version__ = "0.1.0"
