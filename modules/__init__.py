"""Layer 2: the domain modules. Each imports ``kernel`` only, never another module."""
