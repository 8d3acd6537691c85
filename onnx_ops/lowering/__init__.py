"""The lowering's machinery, in the order a model flows through it (the entry point is onnx_ops.lower):

- walk:        every graph of a model (subgraphs, functions) and its ResizeGrad nodes
- plan:        a frozen GraphInfo read once per model (shapes, constants, opset), and each node's plan
- emit:        one node's lowering: the static forms (onnx_ops.forms), the shape-generic forms or the run-time path
- generic_forms, generic_emit: the shape-generic forms (constant integer factors, lengths known at run time)
- dynamic, dynamic_band, dynamic_taps: the general run-time path (taps computed in the graph)
- calibration: the cache of measured choices that `lower(calibration=...)` reads
- validate:    reading, checking and writing models safely
- files:       `lower_file`'s reading and writing of model files and their external data
"""
