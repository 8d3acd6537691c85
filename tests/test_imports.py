"""The import layers (docs/contributing.md), read from the source with ast: lower floors never import higher ones
(dml_desc imports neither onnx_ops nor conformance; onnx_ops does not import conformance), and no package's modules
import each other in a circle, function-level imports included (a lazy import that only dodges a circle is still
one)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dml_desc", "onnx_ops", "conformance")
FLOORS = {"dml_desc": 0, "onnx_ops": 1, "conformance": 2}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict:
    """{dotted name: path} of every module of the three packages."""
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def imported(name: str, path: Path, known: dict) -> set:
    """The project modules `name` imports (anywhere in the file), resolved to the modules that exist."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for t in targets:
            while t and t not in known:          # `from pkg import name` names a module or a name in pkg
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def _runtime_nodes(tree):
    """Every node but those under `if TYPE_CHECKING:` (annotations only: no import at run time)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def graph() -> dict:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def cycles(edges: dict) -> list:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _within_packages(edges: dict) -> dict:
    """Edges between modules of one top-level package, but those between a package's __init__ and its own modules
    (an __init__ re-exports what its modules define; a module may read its package's shared names)."""
    out = {}
    for a, targets in edges.items():
        out[a] = {b for b in targets if b.split(".")[0] == a.split(".")[0]
                  and not a.startswith(b + ".") and not b.startswith(a + ".")}
    return out


def test_no_floor_imports_a_higher_one():
    bad = [(a, b) for a, targets in graph().items() for b in targets
           if FLOORS[b.split(".")[0]] > FLOORS[a.split(".")[0]]]
    assert not bad, bad


def test_no_import_circles_within_a_package():
    assert not cycles(_within_packages(graph()))


def test_the_checker_sees_a_circle_and_a_lazy_import():
    """The checker itself: a circle made of a top-level and a function-level import is found."""
    edges = {"p.a": {"p.b"}, "p.b": {"p.a"}, "p.c": {"p.a"}}
    assert cycles(edges) == [["p.a", "p.b"]]
    tree = ast.parse("def f():\n    from . import b\n")
    assert any(isinstance(n, ast.ImportFrom) for n in ast.walk(tree))
