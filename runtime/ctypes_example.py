"""Replays a capture through libcapgraph_runtime.so with Python ctypes (no other dependency).

usage: python3 ctypes_example.py path/to/libcapgraph_runtime.so MODEL.cap [THREADS]

Fills every float32 input with 0.5, replays the capture once and prints each output's name,
shape and first values. runtime_capgraph_run_test runs this file, so it stays correct.
"""
import ctypes
import sys

MAX_RANK = 8
F32 = 0


class Tensor(ctypes.Structure):  # capgraph_tensor
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK), ("size_bytes", ctypes.c_size_t),
                ("data", ctypes.c_void_p)]


class Options(ctypes.Structure):  # capgraph_options
    _fields_ = [("threads", ctypes.c_int32)]


def runtime_open(path):
    lib = ctypes.CDLL(path)
    model = ctypes.c_void_p
    lib.capgraph_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(Options),
                                  ctypes.POINTER(model), ctypes.c_char_p, ctypes.c_size_t]
    for fn in (lib.capgraph_num_inputs, lib.capgraph_num_outputs):
        fn.argtypes, fn.restype = [model], ctypes.c_int32
    for fn in (lib.capgraph_input, lib.capgraph_output):
        fn.argtypes = [model, ctypes.c_int32, ctypes.POINTER(Tensor)]
    lib.capgraph_run.argtypes = [model]
    lib.capgraph_error.argtypes, lib.capgraph_error.restype = [model], ctypes.c_char_p
    lib.capgraph_status_name.restype = ctypes.c_char_p
    lib.capgraph_free.argtypes = [model]
    return lib


def main():
    lib = runtime_open(sys.argv[1])
    opts = Options(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    model = ctypes.c_void_p()
    err = ctypes.create_string_buffer(1024)
    status = lib.capgraph_load(sys.argv[2].encode(), ctypes.byref(opts), ctypes.byref(model),
                               err, len(err))
    if status != 0:
        sys.exit(f"{lib.capgraph_status_name(status).decode()}: {err.value.decode()}")
    try:
        t = Tensor()
        for i in range(lib.capgraph_num_inputs(model)):
            lib.capgraph_input(model, i, ctypes.byref(t))
            if t.dtype == F32:  # inputs live in the arena: write them in place
                values = (ctypes.c_float * (t.size_bytes // 4)).from_address(t.data)
                for k in range(len(values)):
                    values[k] = 0.5
        status = lib.capgraph_run(model)
        if status != 0:
            sys.exit(f"{lib.capgraph_status_name(status).decode()}: "
                     f"{lib.capgraph_error(model).decode()}")
        for i in range(lib.capgraph_num_outputs(model)):
            lib.capgraph_output(model, i, ctypes.byref(t))
            shape = list(t.shape[:t.rank])
            first = ""
            if t.dtype == F32:
                values = (ctypes.c_float * (t.size_bytes // 4)).from_address(t.data)
                first = " ".join(f"{v:g}" for v in values[:4])
            print(f"output {t.name.decode()} {shape} {first}")
    finally:
        lib.capgraph_free(model)


if __name__ == "__main__":
    main()
