"""Model backends: one small Protocol per kind (protocols.py), one module per backend beside it."""
