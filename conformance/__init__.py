"""Conformance: the NumPy reference, the case catalog and the suite runner."""
