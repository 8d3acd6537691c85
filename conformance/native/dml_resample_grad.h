/* The DirectML structures a native kernel under test receives from `dml-desc conformance --backend c:LIB.so:SYMBOL`
 * (docs/native-kernel.md). The layouts are directml.h's own (Windows SDK, DirectML.h), so a kernel written against
 * DirectML's headers compiles against this one unchanged; only the types a RESAMPLE_GRAD descriptor uses are here.
 *
 * The entry point:
 *
 *     int SYMBOL(const DML_RESAMPLE_GRAD_OPERATOR_DESC *desc, const void *input_gradient, void *output_gradient);
 *
 * input_gradient holds dY (desc->InputGradientTensor: the forward's output sizes), output_gradient receives dX
 * (desc->OutputGradientTensor: the forward's input sizes); both are packed (Strides NULL) in the tensors'
 * DataType. output_gradient arrives filled with NaN: write every element. Return 0, or non-zero for "this kernel
 * does not implement this case" (recorded as unsupported, never as a failure).
 */
#ifndef DML_DESC_RESAMPLE_GRAD_H
#define DML_DESC_RESAMPLE_GRAD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef __directml_h__          /* directml.h included first: its own definitions are these */
typedef uint32_t UINT;
typedef uint64_t UINT64;
typedef float FLOAT;

typedef enum DML_TENSOR_DATA_TYPE {
    DML_TENSOR_DATA_TYPE_UNKNOWN = 0,
    DML_TENSOR_DATA_TYPE_FLOAT32 = 1,
    DML_TENSOR_DATA_TYPE_FLOAT16 = 2,
    DML_TENSOR_DATA_TYPE_UINT32 = 3,
    DML_TENSOR_DATA_TYPE_UINT16 = 4,
    DML_TENSOR_DATA_TYPE_UINT8 = 5,
    DML_TENSOR_DATA_TYPE_INT32 = 6,
    DML_TENSOR_DATA_TYPE_INT16 = 7,
    DML_TENSOR_DATA_TYPE_INT8 = 8,
    DML_TENSOR_DATA_TYPE_FLOAT64 = 9,
    DML_TENSOR_DATA_TYPE_UINT64 = 10,
    DML_TENSOR_DATA_TYPE_INT64 = 11
} DML_TENSOR_DATA_TYPE;

typedef enum DML_TENSOR_TYPE {
    DML_TENSOR_TYPE_INVALID = 0,
    DML_TENSOR_TYPE_BUFFER = 1
} DML_TENSOR_TYPE;

typedef enum DML_TENSOR_FLAGS {
    DML_TENSOR_FLAG_NONE = 0x0,
    DML_TENSOR_FLAG_OWNED_BY_DML = 0x1
} DML_TENSOR_FLAGS;

typedef struct DML_BUFFER_TENSOR_DESC {
    DML_TENSOR_DATA_TYPE DataType;
    DML_TENSOR_FLAGS Flags;
    UINT DimensionCount;
    const UINT *Sizes;
    const UINT *Strides;             /* NULL: packed */
    UINT64 TotalTensorSizeInBytes;
    UINT GuaranteedBaseOffsetAlignment;
} DML_BUFFER_TENSOR_DESC;

typedef struct DML_TENSOR_DESC {
    DML_TENSOR_TYPE Type;            /* DML_TENSOR_TYPE_BUFFER */
    const void *Desc;                /* a DML_BUFFER_TENSOR_DESC */
} DML_TENSOR_DESC;

typedef enum DML_INTERPOLATION_MODE {
    DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR = 0,
    DML_INTERPOLATION_MODE_LINEAR = 1
} DML_INTERPOLATION_MODE;

typedef struct DML_RESAMPLE_GRAD_OPERATOR_DESC {
    const DML_TENSOR_DESC *InputGradientTensor;
    const DML_TENSOR_DESC *OutputGradientTensor;
    DML_INTERPOLATION_MODE InterpolationMode;
    UINT DimensionCount;
    const FLOAT *Scales;
    const FLOAT *InputPixelOffsets;
    const FLOAT *OutputPixelOffsets;
} DML_RESAMPLE_GRAD_OPERATOR_DESC;
#endif

typedef int (*dml_desc_resample_grad_fn)(const DML_RESAMPLE_GRAD_OPERATOR_DESC *desc, const void *input_gradient,
                                         void *output_gradient);

#ifdef __cplusplus
}
#endif

#endif
