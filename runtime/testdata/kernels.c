/* Test kernels in C, compiled by the host (or cross) C compiler with -O2 -fno-pic: relocations
 * as GCC and binutils emit them (R_X86_64_32S for .rodata tables, PLT32 calls; on aarch64
 * ADRP/ADD/LDST and CALL26). Every kernel follows the capture ABI:
 *   void entry(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end)
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* A table in .rodata, indexed at run time so it cannot be folded into the code. */
static const float k_table[8] = {1.0f, 0.5f, 0.25f, 2.0f, 3.0f, -1.0f, 0.125f, 4.0f};

/* y[i] = a[i] + b[i] * k_table[i % 8] */
void c_add_table(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end) {
  const float *a = buffers[0], *b = buffers[1];
  float *y = buffers[2];
  for (int64_t i = begin; i < end; ++i) y[i] = a[i] + b[i] * k_table[i & 7];
}

/* y[i] = x[i] * 1.7 + 0.3 (constants the compiler keeps in .rodata.cst4/.rodata.cst16) */
void c_scale(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end) {
  const float *x = buffers[0];
  float *y = buffers[1];
  for (int64_t i = begin; i < end; ++i) y[i] = x[i] * 1.7f + 0.3f;
}

/* y[i] = expf(x[i]): a call to an import */
void c_exp(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end) {
  const float *x = buffers[0];
  float *y = buffers[1];
  for (int64_t i = begin; i < end; ++i) y[i] = expf(x[i]);
}

/* Copies rows [begin, end) of scalars[0] floats each with memcpy. */
void c_copy_rows(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end) {
  const int64_t row = scalars[0];
  memcpy((float *)buffers[1] + begin * row, (const float *)buffers[0] + begin * row,
         (size_t)((end - begin) * row) * sizeof(float));
}

/* Writable state in .data and .bss: counts calls, so a test can see both are real memory. */
int64_t c_calls = 3;
int64_t c_zero[4];
void c_count(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end) {
  int64_t *out = buffers[0];
  c_calls += 1;
  c_zero[0] += 2;
  out[0] = c_calls;
  out[1] = c_zero[0];
}

/* y[i] = begin for i in [begin, end): the output shows how the work was partitioned. */
void c_mark(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end) {
  float *y = buffers[0];
  for (int64_t i = begin; i < end; ++i) y[i] = (float)begin;
}

/* y[i] = x[idx[i]]: an index table (a weight of int32) used unchecked, as compiled Gather and
 * Resize kernels do; the capture's KernelBounds.index_tables must say so. */
void c_gather(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end) {
  const float *x = buffers[0];
  const int32_t *idx = buffers[1];
  float *y = buffers[2];
  for (int64_t i = begin; i < end; ++i) y[i] = x[idx[i]];
}

/* A kernel that may never finish: the thread running item 1 waits until flag[0] becomes nonzero
 * (a test sets it through the arena once the replay has timed out). */
void c_spin(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end) {
  volatile const int32_t *flag = buffers[0];
  if (begin <= 1 && 1 < end)
    while (!flag[0]) {
    }
}
