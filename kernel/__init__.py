"""tht kernel — layer 1: the pure workflow core and its persistence mechanisms.

Imports nothing above it (never ``modules`` or ``tht``).
"""
