"""Element types: the runtime's capgraph_dtype values as NumPy dtypes, and bfloat16.

NumPy has no bfloat16. capgraph names it with a 2-byte structured dtype, `capgraph.bfloat16`,
whose one field `bits` holds the value's bits (the upper half of a float32), so a bfloat16 tensor
is never mistaken for uint16 data; `bfloat16_from_float32` and `bfloat16_to_float32` convert
(rounding to nearest even, NaN kept NaN, as the compiler does). `a["bits"]` or `a.view(np.uint16)`
gives the raw bits, the form `capgraph run` writes to .npy files.
"""
from __future__ import annotations

import numpy as np

bfloat16 = np.dtype([("bits", "<u2")])

# Index = capgraph_dtype (runtime/capgraph_runtime.h, schema/capture.fbs DType).
DTYPES = (np.dtype("<f4"), np.dtype("<f2"), np.dtype("<f8"), np.dtype("i1"), np.dtype("u1"),
          np.dtype("<i2"), np.dtype("<i4"), np.dtype("<i8"), np.dtype("?"), bfloat16,
          np.dtype("<u2"), np.dtype("<u4"), np.dtype("<u8"))


def dtype_of(code: int) -> np.dtype:
    """The NumPy dtype of a capgraph_dtype value."""
    if not 0 <= code < len(DTYPES):
        raise ValueError(f"element type {code} is unknown to this package (a newer runtime?)")
    return DTYPES[code]


def bfloat16_from_float32(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to nearest even bfloat16 (NaN stays NaN), as a `bfloat16` array."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)  # a quiet NaN, sign kept
    return rounded.view(bfloat16)


def bfloat16_to_float32(a: np.ndarray) -> np.ndarray:
    """A `bfloat16` (or uint16 bits) array widened exactly to float32."""
    bits = a.view(np.uint16) if a.dtype == bfloat16 else np.asarray(a, dtype=np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32)
