"""The C API of libcapgraph_runtime.so as ctypes sees it, and where the library is found.

The structures mirror runtime/capgraph_runtime.h, which fixes their layout; a change there is a
change here. Nothing in this file knows about NumPy.
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

MAX_RANK = 8  # CAPGRAPH_MAX_RANK
STATUS_MISMATCH = 9  # CAPGRAPH_ERR_MISMATCH


class Tensor(ctypes.Structure):
    """capgraph_tensor."""

    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK), ("size_bytes", ctypes.c_size_t),
                ("data", ctypes.c_void_p)]


class Options(ctypes.Structure):
    """capgraph_options."""

    _fields_ = [("threads", ctypes.c_int32)]


LIBRARY_NAME = "libcapgraph_runtime.so"


def library_candidates() -> list[Path]:
    """Where the library is looked for: $CAPGRAPH_LIBRARY alone when it is set; else beside this
    package (an installed package, or build/python), then the build tree of the checkout holding
    it (python/capgraph -> build/runtime)."""
    if os.environ.get("CAPGRAPH_LIBRARY"):  # said explicitly: that one or none
        return [Path(os.environ["CAPGRAPH_LIBRARY"])]
    here = Path(__file__).resolve().parent
    return [here / LIBRARY_NAME, here.parent.parent / "build" / "runtime" / LIBRARY_NAME]


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    model = ctypes.c_void_p
    status = ctypes.c_int
    lib.capgraph_load_device.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Options),
                                         ctypes.POINTER(model), ctypes.c_char_p, ctypes.c_size_t]
    lib.capgraph_load_device.restype = status
    for fn in (lib.capgraph_num_inputs, lib.capgraph_num_outputs, lib.capgraph_num_steps):
        fn.argtypes, fn.restype = [model], ctypes.c_int32
    for fn in (lib.capgraph_input, lib.capgraph_output):
        fn.argtypes, fn.restype = [model, ctypes.c_int32, ctypes.POINTER(Tensor)], status
    for fn in (lib.capgraph_bind_input, lib.capgraph_bind_output):
        fn.argtypes = [model, ctypes.c_int32, ctypes.c_void_p, ctypes.c_size_t]
        fn.restype = status
    lib.capgraph_run.argtypes, lib.capgraph_run.restype = [model], status
    lib.capgraph_run_timed.argtypes = [model, ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    lib.capgraph_run_timed.restype = status
    lib.capgraph_run_check.argtypes = [model, ctypes.c_char_p, ctypes.c_size_t]
    lib.capgraph_run_check.restype = status
    lib.capgraph_error.argtypes, lib.capgraph_error.restype = [model], ctypes.c_char_p
    lib.capgraph_status_name.argtypes, lib.capgraph_status_name.restype = [status], ctypes.c_char_p
    lib.capgraph_free.argtypes, lib.capgraph_free.restype = [model], None
    # Newer than the first C API: a library without it still loads; profile() numbers the steps.
    if hasattr(lib, "capgraph_step_name"):
        lib.capgraph_step_name.argtypes = [model, ctypes.c_int32]
        lib.capgraph_step_name.restype = ctypes.c_char_p
    return lib


_lib: ctypes.CDLL | None = None
_lib_path: Path | None = None


def library() -> tuple[ctypes.CDLL, Path]:
    """The runtime library, opened once per process. Raises OSError naming every place tried."""
    global _lib, _lib_path
    if _lib is None:
        tried = []
        for path in library_candidates():
            if path.is_file():
                try:
                    _lib, _lib_path = _declare(ctypes.CDLL(str(path))), path
                    break
                except (OSError, AttributeError) as e:
                    tried.append(f"{path}: {e}")
            else:
                tried.append(f"{path}: no such file")
        else:
            raise OSError(f"cannot find {LIBRARY_NAME} (build capgraph, or set CAPGRAPH_LIBRARY "
                          "to its path); tried: " + "; ".join(tried))
    return _lib, _lib_path
