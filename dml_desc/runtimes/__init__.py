"""Runtimes the `dml-desc run` command and the conformance suite execute on (oneDNN via ctypes)."""
