"""Agent-host hooks: lean console scripts the coding-agent host runs (``tht-route-hook``).

Keep this package free of imports: a hook process pays for everything it imports.
"""
