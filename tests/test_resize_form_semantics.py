"""The static Resize form (onnx_ops.forms.find_resize) is spelled under STAND_IN_SEMANTICS, whatever semantics the
lowering reads the ResizeGrad under: proven here that the spelling is exact under every entry of SEMANTICS, on
nearest maps with ties (every coordinate mode and nearest_mode, opsets 11 and 19). The oracle: the emitted Resize
node read back under each semantics (dml_desc's reader), its forward taps against the gradient's taps of the map
the lowering was given under that semantics."""
import itertools

import pytest

from dml_desc import DescError
from dml_desc.conventions import onnx as onnx_conv
from dml_desc.weights import forward_taps, gradient_taps
from onnx_ops.forms import find_resize, taps_close

CTMS = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn",
        "half_pixel_symmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _gradient(ctm, nearest_mode, n, m, opset, semantics):
    """The canonical map of a nearest ResizeGrad n -> m under `semantics`, or None where the node is refused."""
    attrs = {"mode": "nearest", "coordinate_transformation_mode": ctm, "nearest_mode": nearest_mode}
    try:
        return onnx_conv.to_canonical(onnx_conv.OnnxResize([1, 1, 1, n], attrs, sizes=[1, 1, 1, m], opset=opset,
                                                           op_type="ResizeGrad"), semantics)
    except DescError:
        return None


@pytest.mark.parametrize("opset", [11, 19])
def test_the_static_resize_spelling_is_exact_under_every_semantics(opset):
    spelled, semantic_ties = 0, 0
    for ctm, nearest_mode, n, m in itertools.product(CTMS, NEAREST_MODES, range(2, 8), range(2, 15)):
        readings = set()
        for semantics in onnx_conv.SEMANTICS:
            res = _gradient(ctm, nearest_mode, n, m, opset, semantics)
            if res is not None:
                readings.add(str(gradient_taps(res.axes[3], res).dense().tolist()))
            found = find_resize(res, opset) if res is not None else None
            if found is None:
                continue
            node = found[1]
            assert node.op_type == "Resize" and node.opset <= 21
            resize = onnx_conv.to_canonical(node, semantics)
            assert all(taps_close(gradient_taps(res.axes[a], res), forward_taps(resize.axes[a], resize),
                                  res.axes[a].out_size / res.axes[a].in_size) for a in res.resized_axes), \
                (ctm, nearest_mode, n, m, semantics, node)
            spelled += 1
        semantic_ties += len(readings) > 1
    assert spelled > 300           # the Resize form applies to many of these maps (360 at opset 11, 432 at 19)
    assert semantic_ties > 0       # and the sample holds maps whose taps the semantics break differently
