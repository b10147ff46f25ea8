"""Command groups of the `tht` CLI, one module per group (registered in tht/cli.py)."""
