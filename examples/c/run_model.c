/* capgraph-c-example MODEL.cap: the runtime's C API from plain C (C99). Loads a capture, lists
 * its inputs and outputs, fills the inputs with a constant, replays once and prints each output's
 * shape, sum and first values. Build: cc run_model.c -lcapgraph_runtime (see examples/README.md).
 */
#include <stdio.h>
#include <string.h>

#include "capgraph_runtime.h"

static void shape_print(const capgraph_tensor *t) {
  for (int i = 0; i < t->rank; i++) printf("%s%lld", i ? "x" : "", (long long)t->shape[i]);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: capgraph-c-example MODEL.cap\n");
    return 2;
  }
  char err[512];
  capgraph_model *m = NULL;
  capgraph_status s = capgraph_load(argv[1], NULL, &m, err, sizeof err);
  if (s != CAPGRAPH_OK) {
    fprintf(stderr, "capgraph-c-example: %s (%s)\n", err, capgraph_status_name(s));
    return 1;
  }
  for (int i = 0; i < capgraph_num_inputs(m); i++) {
    capgraph_tensor t;
    capgraph_input(m, i, &t);
    printf("input %s ", t.name);
    shape_print(&t);
    printf("\n");
    if (t.dtype == CAPGRAPH_F32) {
      float *f = (float *)t.data;
      for (size_t j = 0; j < t.size_bytes / sizeof(float); j++) f[j] = 0.5f;
    } else {
      memset(t.data, 0, t.size_bytes);
    }
  }
  s = capgraph_run(m);
  if (s != CAPGRAPH_OK) {
    fprintf(stderr, "capgraph-c-example: run failed: %s\n", capgraph_error(m));
    capgraph_free(m);
    return 1;
  }
  for (int i = 0; i < capgraph_num_outputs(m); i++) {
    capgraph_tensor t;
    capgraph_output(m, i, &t);
    printf("output %s ", t.name);
    shape_print(&t);
    if (t.dtype == CAPGRAPH_F32) {
      const float *f = (const float *)t.data;
      size_t n = t.size_bytes / sizeof(float);
      double sum = 0;
      for (size_t j = 0; j < n; j++) sum += f[j];
      printf(" sum %.6f first", sum);
      for (size_t j = 0; j < n && j < 4; j++) printf(" %.6f", f[j]);
    }
    printf("\n");
  }
  capgraph_free(m);
  return 0;
}
