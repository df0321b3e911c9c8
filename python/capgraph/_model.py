"""A loaded capture: inputs in, replay, outputs out, over the C API (_ffi)."""
from __future__ import annotations

import ctypes
import os
from typing import Mapping, NamedTuple

import numpy as np

from . import _ffi
from ._dtypes import dtype_of

PAGE = 4096  # capgraph_bind_*: buffers are page-aligned in address and size


class Error(Exception):
    """What went wrong, in the runtime's words when it was the runtime: the file, the input, the
    kernel. `status` is the runtime's status name ("io error", "format error", "argument error",
    "mismatch", ...), or "argument error" for a bad argument caught before the runtime saw it."""

    def __init__(self, message: str, status: str = "argument error"):
        super().__init__(message)
        self.status = status


class TensorInfo(NamedTuple):
    """One input or output of a capture: its name, shape and NumPy dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


class StepTime(NamedTuple):
    """One step of a replay in `Model.profile()`: its index, what it runs (the kernel's name, or
    "copy") and its median time in milliseconds."""

    index: int
    name: str
    ms: float


def aligned_empty(shape: int | tuple[int, ...], dtype: np.typing.DTypeLike = np.float32) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on a page (4096 bytes) and whose
    memory extends to a whole number of pages: what `Model.bind_input`/`bind_output` take."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    room = max(PAGE, -(-nbytes // PAGE) * PAGE)
    raw = np.empty(room + PAGE, dtype=np.uint8)
    skip = -raw.ctypes.data % PAGE
    return raw[skip:skip + nbytes].view(dtype).reshape(shape)


def _pages_behind(a: np.ndarray) -> int:
    """Bytes of memory from a's first byte to the end of the memory that owns it (which may be
    more than a.nbytes: aligned_empty pads to a page)."""
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is a or not isinstance(root, np.ndarray):
        return a.nbytes
    return np.byte_bounds(root)[1] - a.ctypes.data


class _Slot:
    """An input or output as the runtime placed it: its index, description and a NumPy view of
    where the data is (the arena, or the bound array)."""

    __slots__ = ("index", "info", "view", "bound")

    def __init__(self, index: int, info: TensorInfo, view: np.ndarray):
        self.index, self.info, self.view, self.bound = index, info, view, None


class Model:
    """A capture loaded for one device (made by `capgraph.load`). One thread uses a model at a
    time. Close it (or use `with`) to free the device's memory at once rather than at collection."""

    def __init__(self, path: str, device: str = "cpu", threads: int | None = None):
        self._label = str(path)
        self.device = device
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise Error(f"{path}: threads must be a positive int or None, not {threads!r}")
        if not isinstance(device, str):
            raise Error(f"{path}: device must be a str such as 'cpu', not {device!r}")
        try:
            lib, _ = _ffi.library()
        except OSError as e:
            raise Error(str(e), "io error") from None
        self._lib = lib
        opts = _ffi.Options(threads or 0)
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(2048)
        st = lib.capgraph_load_device(os.fsencode(path), device.encode(), ctypes.byref(opts),
                                      ctypes.byref(handle), err, len(err))
        if st != 0:
            raise Error(err.value.decode(errors="replace"), self._status(st))
        self._h: int | None = handle.value
        self._inputs = self._slots(lib.capgraph_num_inputs, lib.capgraph_input)
        self._outputs = self._slots(lib.capgraph_num_outputs, lib.capgraph_output)
        self._in = {s.info.name: s for s in self._inputs}
        self._out = {s.info.name: s for s in self._outputs}
        self._run = lib.capgraph_run

    # ---- description -------------------------------------------------------------------------
    @property
    def inputs(self) -> list[TensorInfo]:
        """The capture's inputs, in order: name, shape, dtype."""
        return [s.info for s in self._inputs]

    @property
    def outputs(self) -> list[TensorInfo]:
        """The capture's outputs, in order: name, shape, dtype."""
        return [s.info for s in self._outputs]

    def __repr__(self) -> str:
        state = "closed" if self._h is None else f"{len(self._inputs)} inputs, {len(self._outputs)} outputs"
        return f"<capgraph.Model {self._label} on {self.device}: {state}>"

    # ---- replay ------------------------------------------------------------------------------
    def run(self, feeds: Mapping[str, np.ndarray] | None = None, /, **inputs: np.ndarray) -> dict[str, np.ndarray]:
        """Replays the capture once and returns every output as a new array (a copy).

        Inputs are given by name, as keywords or a mapping (for names that are not Python
        identifiers, `m.run({"input.1": x})`). Every input must be given unless it is bound
        (`bind_input`); each must have the input's exact shape and dtype (no conversion)."""
        self._feed(feeds, inputs)
        self._replay()
        return {s.info.name: s.view.copy() for s in self._outputs}

    def run_into(self, outputs: Mapping[str, np.ndarray], feeds: Mapping[str, np.ndarray] | None = None,
                 /, **inputs: np.ndarray) -> None:
        """Replays once and copies the named outputs into the caller's arrays (exact shape and
        dtype, writeable), allocating nothing. Outputs not named are left where they are."""
        targets = []
        for name, dst in outputs.items():
            slot = self._out.get(name)
            if slot is None:
                raise Error(f"{self._label}: no output '{name}' (outputs: {self._names(self._outputs)})")
            self._check(slot, dst, "output", writeable=True)
            targets.append((dst, slot.view))
        self._feed(feeds, inputs)
        self._replay()
        for dst, src in targets:
            np.copyto(dst, src)

    def bind_input(self, name: str, array: np.ndarray | None) -> None:
        """Makes `array` the input itself (zero-copy): later runs read it where it is, so a frame
        written into it is the next run's input. It must be page-aligned with page-padded memory
        (`capgraph.aligned_empty`), C-contiguous, of the input's shape and dtype. The model keeps
        a reference until it is unbound (`None`), another array is bound, or the model closes."""
        self._bind(self._in, self._lib.capgraph_bind_input, "input", name, array)

    def bind_output(self, name: str, array: np.ndarray | None) -> None:
        """Makes `array` the output itself (zero-copy): later runs write it in place. Same rules
        as `bind_input`; `run()` still returns copies (use `run_into` or read the array)."""
        self._bind(self._out, self._lib.capgraph_bind_output, "output", name, array)

    def check(self) -> str:
        """Replays once kernel by kernel against the host twins the capture carries (a GPU
        device only; `capgraph run --check`). Returns the runtime's report; raises Error naming
        the first kernel that differs (status "mismatch")."""
        report = ctypes.create_string_buffer(512)
        self._call(self._lib.capgraph_run_check(self._handle(), report, len(report)))
        return report.value.decode(errors="replace")

    def profile(self, runs: int = 10) -> list[StepTime]:
        """Replays `runs` times with per-step timing (on a GPU from the engines' timestamps) and
        returns each step's median. It replays the inputs the model holds: feed them with run()
        first for data-dependent kernels."""
        if not isinstance(runs, int) or runs < 1:
            raise Error(f"{self._label}: runs must be a positive int, not {runs!r}")
        lib, h = self._lib, self._handle()
        n = lib.capgraph_num_steps(h)
        times = np.zeros((runs, n), dtype=np.uint64)
        for r in range(runs):
            row = times[r]
            self._call(lib.capgraph_run_timed(h, row.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)), n))
        median = np.median(times, axis=0) / 1e6
        named = hasattr(lib, "capgraph_step_name")
        return [StepTime(i, lib.capgraph_step_name(h, i).decode() if named else f"step {i}",
                         float(median[i])) for i in range(n)]

    # ---- life --------------------------------------------------------------------------------
    def close(self) -> None:
        """Frees the model (the device's memory, the threads). Idempotent; later calls raise."""
        if self._h is not None:
            for s in self._inputs + self._outputs:
                s.view = s.bound = None  # the arena views die with the arena
            self._lib.capgraph_free(self._h)
            self._h = None

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_h", None) is not None:
            self.close()

    # ---- inside ------------------------------------------------------------------------------
    def _handle(self) -> int:
        if self._h is None:
            raise Error(f"{self._label}: the model is closed")
        return self._h

    def _status(self, st: int) -> str:
        return self._lib.capgraph_status_name(st).decode()

    def _call(self, st: int) -> None:
        if st != 0:
            raise Error(self._lib.capgraph_error(self._h).decode(errors="replace"), self._status(st))

    def _replay(self) -> None:
        st = self._run(self._handle())
        if st != 0:
            self._call(st)

    def _slots(self, count, get) -> list[_Slot]:
        slots = []
        t = _ffi.Tensor()
        for i in range(count(self._h)):
            self._call(get(self._h, i, ctypes.byref(t)))
            info = TensorInfo(t.name.decode(), tuple(t.shape[:t.rank]), dtype_of(t.dtype))
            slots.append(_Slot(i, info, self._view(t.data, info)))
        return slots

    @staticmethod
    def _view(address: int, info: TensorInfo) -> np.ndarray:
        raw = (ctypes.c_uint8 * info.nbytes).from_address(address)
        return np.frombuffer(raw, dtype=info.dtype).reshape(info.shape)

    @staticmethod
    def _names(slots: list[_Slot]) -> str:
        return ", ".join(f"'{s.info.name}'" for s in slots) or "none"

    def _check(self, slot: _Slot, a: object, kind: str, writeable: bool = False) -> None:
        info = slot.info
        if not isinstance(a, np.ndarray):
            raise Error(f"{self._label}: {kind} '{info.name}': a numpy.ndarray is needed, not "
                        f"{type(a).__name__}")
        if a.dtype != info.dtype or a.shape != info.shape:
            raise Error(f"{self._label}: {kind} '{info.name}' is {a.dtype} {list(a.shape)}, the "
                        f"capture's is {info.dtype} {list(info.shape)}")
        if writeable and not a.flags.writeable:
            raise Error(f"{self._label}: {kind} '{info.name}': the array is read-only")

    def _feed(self, feeds: Mapping[str, np.ndarray] | None, inputs: dict[str, np.ndarray]) -> None:
        self._handle()
        if feeds:
            inputs = {**feeds, **inputs}
        if len(inputs) != len(self._inputs):
            self._missing(inputs)
        for name, a in inputs.items():
            slot = self._in.get(name)
            if slot is None:
                raise Error(f"{self._label}: no input '{name}' (inputs: {self._names(self._inputs)})")
            if a is slot.bound:
                continue
            if a.__class__ is not np.ndarray or a.dtype != slot.info.dtype or a.shape != slot.info.shape:
                self._check(slot, a, "input")
            np.copyto(slot.view, a)

    def _missing(self, inputs: dict[str, np.ndarray]) -> None:
        missing = [s.info.name for s in self._inputs if s.info.name not in inputs and s.bound is None]
        if missing:
            raise Error(f"{self._label}: input(s) {', '.join(repr(n) for n in missing)} not given "
                        f"(inputs: {self._names(self._inputs)}; a bound input may be left out)")

    def _bind(self, slots: dict[str, _Slot], bind, kind: str, name: str, a: np.ndarray | None) -> None:
        h = self._handle()
        slot = slots.get(name)
        if slot is None:
            raise Error(f"{self._label}: no {kind} '{name}' ({kind}s: {self._names(list(slots.values()))})")
        if a is None:
            self._call(bind(h, slot.index, None, 0))
        else:
            self._check(slot, a, kind, writeable=True)
            if not a.flags.c_contiguous:
                raise Error(f"{self._label}: bind_{kind} '{name}': the array must be C-contiguous")
            address, room = a.ctypes.data, -(-max(a.nbytes, 1) // PAGE) * PAGE
            if address % PAGE or _pages_behind(a) < room:
                raise Error(f"{self._label}: bind_{kind} '{name}': the array must start on a page "
                            f"(4096 bytes; it is at {address:#x}) and its memory must fill whole "
                            "pages: make it with capgraph.aligned_empty")
            self._call(bind(h, slot.index, address, room))
        t = _ffi.Tensor()
        get = self._lib.capgraph_input if kind == "input" else self._lib.capgraph_output
        self._call(get(h, slot.index, ctypes.byref(t)))
        slot.view = a if a is not None else self._view(t.data, slot.info)
        slot.bound = a
