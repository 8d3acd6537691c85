/* An example native kernel for `dml-desc conformance --backend c:LIB.so:resample_grad` (docs/native-kernel.md):
 * DirectML's RESAMPLE_GRAD on the CPU, float32 only (float16 returns 1: unsupported), 1 to 4 dimensions.
 * DirectML writes the forward as OutputX = (InputX + InputPixelOffset) * Scale + OutputPixelOffset, so output
 * index o of an axis reads the input coordinate
 *     x = (o - OutputPixelOffset) / Scale - InputPixelOffset          (float32 arithmetic)
 * nearest: index ceil(x - 0.5) (ties round down), clamped to the input; linear: x clamped to [0, in - 1], the two
 * neighbours floor(x) and floor(x) + 1 (clamped) weighted 1 - f and f. The gradient scatters dY through those taps.
 * Build: gcc -O2 -shared -fPIC -o libexample.so example_resample_grad.c -lm
 * With -DMISSING_OFFSETS it drops the pixel offsets (a porting bug the suite's diagnosis names).
 */
#include <math.h>
#include <string.h>
#include "dml_resample_grad.h"

#define MAX_DIMS 4
#define MAX_TAPS 2

typedef struct { int index[MAX_TAPS]; float weight[MAX_TAPS]; int count; } taps_t;

static float coordinate(const DML_RESAMPLE_GRAD_OPERATOR_DESC *d, UINT axis, UINT o) {
#ifdef MISSING_OFFSETS
    return (float)o / d->Scales[axis];
#else
    float q = ((float)o - d->OutputPixelOffsets[axis]) / d->Scales[axis];
    return q - d->InputPixelOffsets[axis];
#endif
}

static taps_t axis_taps(const DML_RESAMPLE_GRAD_OPERATOR_DESC *d, UINT axis, UINT o, UINT in_size) {
    taps_t t;
    float x = coordinate(d, axis, o);
    float hi = (float)in_size - 1.0f;
    if (d->InterpolationMode == DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR) {
        float k = ceilf(x - 0.5f);
        t.index[0] = (int)(k < 0 ? 0 : (k > hi ? hi : k));
        t.weight[0] = 1.0f;
        t.count = 1;
        return t;
    }
    x = x < 0 ? 0 : (x > hi ? hi : x);
    float base = floorf(x);
    float f = x - base;
    t.index[0] = (int)base;
    t.index[1] = (int)base + 1 < (int)in_size ? (int)base + 1 : (int)in_size - 1;
    t.weight[0] = 1.0f - f;
    t.weight[1] = f;
    t.count = 2;
    return t;
}

int resample_grad(const DML_RESAMPLE_GRAD_OPERATOR_DESC *desc, const void *input_gradient, void *output_gradient) {
    const DML_BUFFER_TENSOR_DESC *dy = (const DML_BUFFER_TENSOR_DESC *)desc->InputGradientTensor->Desc;
    const DML_BUFFER_TENSOR_DESC *dx = (const DML_BUFFER_TENSOR_DESC *)desc->OutputGradientTensor->Desc;
    UINT n = desc->DimensionCount, a;
    if (dy->DataType != DML_TENSOR_DATA_TYPE_FLOAT32 || n < 1 || n > MAX_DIMS || dy->Strides || dx->Strides)
        return 1;                                    /* unsupported: float16, strided tensors */
    UINT64 in_count = 1, out_count = 1;
    for (a = 0; a < n; ++a) { in_count *= dx->Sizes[a]; out_count *= dy->Sizes[a]; }
    float *out = (float *)output_gradient;
    const float *g = (const float *)input_gradient;
    memset(out, 0, (size_t)in_count * sizeof(float));
    UINT64 flat;
    for (flat = 0; flat < out_count; ++flat) {
        UINT o[MAX_DIMS];
        UINT64 rest = flat;
        for (a = n; a-- > 0;) { o[a] = (UINT)(rest % dy->Sizes[a]); rest /= dy->Sizes[a]; }
        taps_t t[MAX_DIMS];
        int combos = 1;
        for (a = 0; a < n; ++a) { t[a] = axis_taps(desc, a, o[a], dx->Sizes[a]); combos *= t[a].count; }
        int c;
        for (c = 0; c < combos; ++c) {
            int rem = c;
            float w = 1.0f;
            UINT64 target = 0;
            for (a = 0; a < n; ++a) {
                int k = rem % t[a].count;
                rem /= t[a].count;
                w *= t[a].weight[k];
                target = target * dx->Sizes[a] + (UINT64)t[a].index[k];
            }
            out[target] += w * g[flat];
        }
    }
    return 0;
}
