"""The one walk over an ONNX model: its main graph, every If / Loop / Scan body in it and its model-local
functions; and the tensor names a model already uses, so that generated names cannot collide with them.
The lowering, the checks and the training repairs all walk models through this module; it imports none of them."""
from __future__ import annotations

import onnx


def scoped_graphs(graph, scope: str = "", children_first: bool = False):
    """(graph, scope) for `graph` and every subgraph in it, depth first. A subgraph's scope names where it is:
    `<node>.<attribute>/` after its parent's. `children_first` yields a graph after all its subgraphs, so that a
    caller rewriting each graph's nodes in place rewrites the bodies before the nodes that hold them."""
    if not children_first:
        yield graph, scope
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                yield from scoped_graphs(sub, f"{scope}{node.name or node.op_type}.{attr.name}/", children_first)
    if children_first:
        yield graph, scope


def graphs(graph):
    """The graph and every If / Loop / Scan body in it, depth first (parents before their bodies)."""
    return (g for g, _ in scoped_graphs(graph))


def subgraphs(node) -> list:
    """The graph attributes of one node (If branches, Loop / Scan bodies)."""
    return [g for a in node.attribute for g in ([a.g] if a.HasField("g") else []) + list(a.graphs)]


def all_nodes(model: onnx.ModelProto) -> list:
    """Every node of the model: its graphs' (subgraphs included), then its functions' bodies."""
    return [n for g in graphs(model.graph) for n in g.node] + [n for f in model.functions for n in f.node]


def is_resize_grad(node: onnx.NodeProto) -> bool:
    """True for a com.microsoft ResizeGrad node (the node `lower` rewrites)."""
    return node.op_type == "ResizeGrad" and node.domain == "com.microsoft"


def graph_names(graph) -> set:
    """Every tensor name one graph uses (not its subgraphs'): initializers, inputs, outputs, node ends."""
    names = {t.name for t in graph.initializer} | {v.name for v in list(graph.input) + list(graph.output)}
    return names | {o for n in graph.node for o in n.output} | {i for n in graph.node for i in n.input}


def model_names(model: onnx.ModelProto) -> set:
    """Every tensor name the model uses, in all its graphs and functions."""
    names = set().union(*(graph_names(g) for g in graphs(model.graph)))
    for f in model.functions:
        names |= set(f.input) | set(f.output) | {o for n in f.node for o in list(n.output) + list(n.input)}
    return names


def fresh_prefix(prefix: str, taken: set) -> str:
    """A prefix no name in `taken` starts with (then reserved in `taken`), so generated names cannot collide."""
    candidate, k = prefix, 0
    while any(name.startswith(candidate + "_") for name in taken):
        k += 1
        candidate = f"{prefix}_{k}"
    taken.add(candidate + "_")
    return candidate
