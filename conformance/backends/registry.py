"""Backend names -> backends: the built-ins, `py:MODULE:NAME` plug-ins and the `dml_desc.backends` entry points."""
from __future__ import annotations

import importlib
import os
import sys

from dml_desc.errors import DescError, require

from .base import Backend, Plugin

ENTRY_POINT_GROUP = "dml_desc.backends"
BUILTINS = ("numpy", "onnxruntime", "onnxruntime:PROVIDER", "onnxruntime-native:PROVIDER", "onednn",
            "onednn-primitive", "torch", "tensorflow", "jax", "py:MODULE:NAME", "c:LIB.so:SYMBOL")


def builtin_names() -> tuple:
    """The names `--backend` takes besides installed plug-ins (PROVIDER, MODULE and NAME are placeholders)."""
    return BUILTINS


def installed_plugins() -> dict:
    """{name: entry point} of the installed `dml_desc.backends` entry points."""
    from importlib.metadata import entry_points
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def resolve(name: str, semantics=None, flag: str = "--backend"):
    """The backend `name` names; a name that is none is a DescError naming the closest valid one."""
    from . import builtin
    require(isinstance(name, str) and name != "", flag, name, "must name a backend")
    if name == "numpy":
        return builtin.NumpyBackend()
    if name == "torch":
        return builtin.TorchBackend()
    if name in ("tensorflow", "jax"):          # the `tf` / `jax` extras (conformance/backends/tensorflow.py, jax.py)
        module = importlib.import_module(f"{__package__}.{name}")
        return module.TensorflowBackend() if name == "tensorflow" else module.JaxBackend()
    if name in ("onednn", "onednn-graph", "onednn-primitive"):
        return builtin.OnednnBackend("primitive" if name.endswith("primitive") else "graph")
    if name == "onnxruntime" or name.startswith(("onnxruntime:", "onnxruntime-native:")):
        kind, _, provider = name.partition(":")
        provider = _provider(provider, name, flag) if provider else "CPUExecutionProvider"
        return builtin.OnnxruntimeBackend(provider, kind == "onnxruntime-native", semantics)
    if name.startswith("py:"):
        return _plugin(name, flag)
    if name.startswith("c:"):                   # a native kernel over DirectML's structs (backends/native.py)
        from .native import native_backend
        return native_backend(name, flag)
    plugins = installed_plugins()
    if name in plugins:
        return _loaded(_imported(flag, name, "entry point", plugins[name].value, plugins[name].load), name, flag)
    raise DescError(flag, name, f"is no backend{closest_hint(name, list(plugins))}; the backends are "
                    f"{', '.join(BUILTINS + tuple(plugins))}")


def backend_name(name: str) -> str:
    """An argparse `type=` for --backend: the name when it can name a backend (checked by its spelling,
    nothing is imported), else argparse's one-line error naming the closest valid one."""
    import argparse
    plugins = list(installed_plugins())
    known = ("numpy", "onnxruntime", "onnxruntime-native", "onednn", "onednn-graph", "onednn-primitive", "torch",
             "tensorflow", "jax")
    if name in known or name in plugins or name.startswith(("onnxruntime:", "onnxruntime-native:", "py:", "c:")):
        return name
    raise argparse.ArgumentTypeError(f"{name!r} is no backend{closest_hint(name, plugins)}")


def closest_hint(name: str, plugins: list) -> str:
    """' (did you mean 'onnxruntime'?)': the name sharing the longest prefix, else difflib's closest."""
    known = ["numpy", "onnxruntime", "onnxruntime-native", "onednn", "onednn-primitive", "torch", "tensorflow",
             "jax"] + plugins
    best = max(known, key=lambda k: (len(os.path.commonprefix([k, name])), -abs(len(k) - len(name))))
    if len(os.path.commonprefix([best, name])) >= 3:
        return f" (did you mean {best!r}?)"
    from dml_desc.errors import did_you_mean
    return did_you_mean(name, known)


def _provider(provider: str, name: str, flag: str) -> str:
    """A known onnxruntime execution provider name (it may be missing from this build: that is a skip)."""
    try:
        import onnxruntime
        known = onnxruntime.get_all_providers()
    except (ImportError, AttributeError):
        return provider              # no runtime: the backend's available() says so
    from dml_desc.errors import did_you_mean
    require(provider in known, flag, name, f"names no onnxruntime execution provider{did_you_mean(provider, known)}")
    return provider


def _plugin(name: str, flag: str):
    """`py:MODULE:NAME`: import MODULE and take its attribute NAME. The working folder is importable, at the end
    of sys.path: a module there never shadows one installed (docs/security.md, Plug-ins)."""
    parts = name.split(":")
    require(len(parts) == 3 and all(parts[1:]), flag, name, "must be py:MODULE:NAME (e.g. py:my_kernel:resize_grad)")
    _, module, attr = parts
    from ..import_guard import is_working_folder
    if not any(is_working_folder(p) for p in sys.path):
        sys.path.append(os.getcwd())
    mod = _imported(flag, name, "module", module, lambda: importlib.import_module(module))
    require(hasattr(mod, attr), flag, name, f"module {module!r} has no attribute {attr!r}")
    return _loaded(getattr(mod, attr), name, flag)


def _imported(flag: str, name: str, kind: str, target: str, load):
    """load() (an import of the module or entry point `target`); its failure is a DescError, on one line."""
    try:
        return load()
    except ImportError as e:
        raise DescError(flag, name, f"cannot import {kind} {target!r}: {e}") from None
    except Exception as e:          # the user's module raised while importing: say so, on one line
        raise DescError(flag, name, f"importing {target!r} raised {type(e).__name__}: {e}") from None


def _loaded(obj, name: str, flag: str = "--backend"):
    """A plug-in object: a backend (has run and convention) as it is, a class instantiated, a function wrapped.
    A backend that names itself keeps its name; one that does not is named `name`."""
    if isinstance(obj, type):
        try:
            obj = obj()
        except Exception as e:      # the user's constructor: one line naming it
            raise DescError(flag, name, f"constructing {obj.__name__}() raised {type(e).__name__}: {e}") from None
    if hasattr(obj, "run") and hasattr(obj, "convention") and not callable(obj):
        if getattr(obj, "name", Backend.name) == Backend.name:
            obj.name = name
        return obj
    return Plugin(obj, name)
