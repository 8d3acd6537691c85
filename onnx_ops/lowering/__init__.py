"""The lowering's machinery, in the order a model flows through it (the entry point is onnx_ops.lower):

- walk:        every graph of a model (subgraphs, functions) and its ResizeGrad nodes
- plan:        a frozen GraphInfo read once per model (shapes, constants, opset), and each node's plan
- emit:        one node's lowering: the spelling the registry's walk picks (onnx_ops.forms.registry): a static
               form, a shape-generic one or the run-time path
- generic_forms: the shape-generic proof (constant integer factors, lengths known at run time: GenericForm)
- calibration: the cache of measured choices that `lower(calibration=...)` reads
- validate:    reading, checking and writing models safely
- files:       `lower_file`'s reading and writing of model files and their external data
"""
