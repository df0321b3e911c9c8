"""capgraph: run captures (models compiled ahead of time by `capgraph compile`) from Python.

    import capgraph, numpy as np
    with capgraph.load("model.cap") as m:             # device="cpu", "adreno", "fake-adreno", ...
        print(m.inputs, m.outputs)                     # names, shapes, NumPy dtypes
        out = m.run(x=np.zeros(m.inputs[0].shape, m.inputs[0].dtype))   # dict of new arrays

Zero-copy, as a camera daemon does: `frame = capgraph.aligned_empty(shape, dtype)`, then
`m.bind_input("x", frame)` once; write each frame into `frame` and call `m.run()`. Bound outputs
(`m.bind_output`) are written in place; `m.run_into(outputs, ...)` copies into the caller's arrays
without allocating. Anything wrong (a missing file, a damaged capture, a wrong name, shape, dtype
or alignment, a closed model, a device error) raises `capgraph.Error` with the runtime's message.

This package is pure Python over the C API of libcapgraph_runtime.so (ctypes), needing only NumPy;
the library is found through $CAPGRAPH_LIBRARY, beside this package, or in the build tree of the
checkout holding it (`capgraph.library_path()` says which).
"""
from __future__ import annotations

from pathlib import Path

from . import _ffi
from ._dtypes import bfloat16, bfloat16_from_float32, bfloat16_to_float32
from ._model import Error, Model, StepTime, TensorInfo, aligned_empty

__all__ = ["load", "Model", "Error", "TensorInfo", "StepTime", "aligned_empty", "bfloat16",
           "bfloat16_from_float32", "bfloat16_to_float32", "library_path"]


def load(path: str | Path, device: str = "cpu", threads: int | None = None) -> Model:
    """Loads and verifies the capture at `path` for `device` ("cpu", "adreno", "amd", "nv",
    ... and, with the test library libcapgraph_runtime_fakes.so, "fake-adreno" ...). `threads`
    (CPU): None for the count the capture was compiled for. Raises Error with the runtime's
    message (the file and the problem)."""
    return Model(path, device, threads)


def library_path() -> Path:
    """The runtime library this process uses (opened on first use)."""
    try:
        return _ffi.library()[1]
    except OSError as e:
        raise Error(str(e), "io error") from None
