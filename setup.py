"""Packages: dml_desc, onnx_ops, conformance, and the top-level examples/ folder shipped as dml_desc.examples.
Everything else is in pyproject.toml."""
from setuptools import find_packages, setup

setup(packages=find_packages(include=["dml_desc*", "onnx_ops*", "conformance*"]) + ["dml_desc.examples"],
      package_dir={"dml_desc.examples": "examples"})
