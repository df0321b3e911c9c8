/* capgraph runtime — C API.
 *
 * Load a capture file once, then replay it as often as needed. Inputs and outputs live in the
 * model's arena: write inputs through the pointers capgraph_input() gives, call capgraph_run(),
 * read outputs through capgraph_output(). No allocation happens in capgraph_run().
 *
 * Usable from C, C++ and Python (ctypes). Thread-safety: one model is used by one caller thread at
 * a time; distinct models are independent.
 */
#ifndef CAPGRAPH_RUNTIME_H
#define CAPGRAPH_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum capgraph_status {
  CAPGRAPH_OK = 0,
  CAPGRAPH_ERR_IO = 1,       /* file missing or unreadable */
  CAPGRAPH_ERR_FORMAT = 2,   /* not a capture, truncated, corrupt, or semantically invalid */
  CAPGRAPH_ERR_VERSION = 3,  /* capture format version this runtime cannot read */
  CAPGRAPH_ERR_TARGET = 4,   /* compiled for another target (CPU arch or missing CPU features) */
  CAPGRAPH_ERR_ARGUMENT = 5, /* bad index, name, or option */
  CAPGRAPH_ERR_DEVICE = 6,   /* the device failed */
  CAPGRAPH_ERR_TIMEOUT = 7,  /* the device did not finish in time */
  CAPGRAPH_ERR_MEMORY = 8,   /* out of memory at load */
  CAPGRAPH_ERR_MISMATCH = 9  /* capgraph_run_check: a kernel's result differs from its host twin */
} capgraph_status;

/* Element types; values match schema/capture.fbs DType. */
typedef enum capgraph_dtype {
  CAPGRAPH_F32 = 0,
  CAPGRAPH_F16 = 1,
  CAPGRAPH_F64 = 2,
  CAPGRAPH_I8 = 3,
  CAPGRAPH_U8 = 4,
  CAPGRAPH_I16 = 5,
  CAPGRAPH_I32 = 6,
  CAPGRAPH_I64 = 7,
  CAPGRAPH_BOOL = 8,
  CAPGRAPH_BF16 = 9, /* bfloat16; in .npy files as its bits, '<u2' */
  CAPGRAPH_U16 = 10,
  CAPGRAPH_U32 = 11,
  CAPGRAPH_U64 = 12
} capgraph_dtype;

#define CAPGRAPH_MAX_RANK 8

typedef struct capgraph_tensor {
  const char *name; /* owned by the model */
  capgraph_dtype dtype;
  int32_t rank;
  int64_t shape[CAPGRAPH_MAX_RANK];
  size_t size_bytes;
  void *data; /* inside the model's arena; valid until capgraph_free */
} capgraph_tensor;

typedef struct capgraph_options {
  int32_t threads; /* 0: the thread count the capture was compiled for */
} capgraph_options;

typedef struct capgraph_model capgraph_model;

/* Loads and verifies a capture. On failure returns non-OK, sets *out to NULL and writes a
 * message naming the file and the problem into err (if err_len > 0). opts may be NULL. */
capgraph_status capgraph_load(const char *path, const capgraph_options *opts, capgraph_model **out,
                              char *err, size_t err_len);
/* Same, from bytes in memory (copied as needed; the caller keeps ownership). */
capgraph_status capgraph_load_memory(const void *data, size_t size, const capgraph_options *opts,
                                     capgraph_model **out, char *err, size_t err_len);
/* Loads a capture for a device: NULL or "cpu" (this CPU, as capgraph_load), a device of a target
 * this runtime was built with (CAPGRAPH_TARGETS: "amd" or "amd:N", an AMD GPU through the amdgpu
 * driver's /dev/kfd; "nv" or "nv:N" (also spelled "nvidia"), an NVIDIA GPU through the RM/UVM
 * driver; "null", the null device of targets/null), or a device the program
 * registered (the capgraph CLI and the tests add "fake-amd" and "fake-nv", fake GPUs for tests).
 * Inputs and outputs still live in the model's arena (CPU-visible device memory on a GPU). A
 * capture compiled for another kind of device is CAPGRAPH_ERR_TARGET, saying which device runs it.
 */
capgraph_status capgraph_load_device(const char *path, const char *device,
                                     const capgraph_options *opts, capgraph_model **out, char *err,
                                     size_t err_len);

int32_t capgraph_num_inputs(const capgraph_model *m);
int32_t capgraph_num_outputs(const capgraph_model *m);
/* Index of the input/output with this name, or -1. */
int32_t capgraph_input_index(const capgraph_model *m, const char *name);
int32_t capgraph_output_index(const capgraph_model *m, const char *name);
capgraph_status capgraph_input(capgraph_model *m, int32_t index, capgraph_tensor *out);
capgraph_status capgraph_output(capgraph_model *m, int32_t index, capgraph_tensor *out);

/* Zero-copy: binds the caller's memory `data` as input (output) `index` for the following runs,
 * in place of the arena (a camera frame, as openpilot's modeld passes VisionIPC buffers): the
 * device reads (writes) it directly. data must be page-aligned (4096 bytes) and size_bytes a whole
 * number of pages covering the tensor; it must stay valid until it is unbound (data NULL), another
 * buffer is bound, or capgraph_free. Each buffer is imported once, at its first bind (KGSL:
 * MAP_USER_MEM after a D-cache clean); binding another buffer only patches its address into the
 * recorded launches. capgraph_input/capgraph_output then give the bound pointer. On a GPU,
 * devices whose driver can import memory only (adreno, fake-adreno; elsewhere
 * CAPGRAPH_ERR_ARGUMENT). On the CPU the replay's pointers into the tensor move to the buffer
 * (same alignment rule, so one program runs on either); refused, naming the step, when a copy
 * step or a kernel binding reads or writes the tensor together with bytes outside it (e.g. an
 * output that is a slice of a larger buffer). */
capgraph_status capgraph_bind_input(capgraph_model *m, int32_t index, void *data,
                                    size_t size_bytes);
capgraph_status capgraph_bind_output(capgraph_model *m, int32_t index, void *data,
                                     size_t size_bytes);

/* Replays the capture once. */
capgraph_status capgraph_run(capgraph_model *m);

/* Number of steps (kernel launches and copies) in one replay. */
int32_t capgraph_num_steps(const capgraph_model *m);
/* What step `index` (0 .. capgraph_num_steps) runs, to label capgraph_run_timed's times: the
 * kernel's name for a launch, "copy" for a copy; NULL for an index out of range. Owned by the
 * model. */
const char *capgraph_step_name(const capgraph_model *m, int32_t index);
/* Replays once like capgraph_run and writes each step's wall time in nanoseconds into
 * step_ns[0 .. capgraph_num_steps); count must be at least that. For profiling: the timing adds a
 * clock read per step. On a GPU the times come from timestamps the engines write after each
 * step. */
capgraph_status capgraph_run_timed(capgraph_model *m, uint64_t *step_ns, size_t count);

/* Replays once step by step on a GPU device, comparing each kernel launch's result with the
 * kernel's host twin (the same computation compiled for this CPU, carried in the capture) run on
 * the arena as it was before the launch. CAPGRAPH_ERR_MISMATCH at the first launch that differs,
 * with capgraph_error naming the kernel, its ONNX nodes and the difference; the arena then holds
 * what the device computed up to there. On success the outputs are the device's, as after
 * capgraph_run, and `report` (optional) says how many launches were compared. Slow: for finding
 * a wrong kernel, not for production. CAPGRAPH_ERR_ARGUMENT on the CPU (it runs no other code
 * than the twins). */
capgraph_status capgraph_run_check(capgraph_model *m, char *report, size_t report_len);

/* The last error message for this model ("" if none). */
const char *capgraph_error(const capgraph_model *m);
const char *capgraph_status_name(capgraph_status s);
void capgraph_free(capgraph_model *m);

#ifdef __cplusplus
}
#endif
#endif
