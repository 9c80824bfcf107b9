/* Exercises the C API from C: it loads a plan given on the command line (made by
 * `precis compile` in the ctest set-up), runs it on a constant input, and checks errors are reported.
 * A second plan, when given, has container outputs (check_containers). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "precis/c_api.h"

/* Container outputs (argv[2]: tests/runtime/container_model.py compiled): an If whose condition
 * decides which of two optionals is present, read through precis_container*. */
static int check_containers(const char* path) {
  precis_session* s = NULL;
  if (precis_session_open(path, 1, &s) != 0) {
    fprintf(stderr, "open %s: %s\n", path, precis_last_error());
    return 1;
  }
  const char* name;
  int kind;
  if (precis_num_containers(s) != 2 || precis_container_info(s, 0, &name, &kind) != 0 || strcmp(name, "o") != 0 || kind != 2 ||
      precis_container_info(s, 1, &name, &kind) != 0 || strcmp(name, "t") != 0 || kind != 1 || precis_container_info(s, 2, &name, &kind) == 0) {
    fprintf(stderr, "container info: o an optional sequence, t an optional tensor\n");
    return 1;
  }
  const void* data;
  size_t bytes;
  int dtype, rank, present, count;
  const int64_t* dims;
  if (precis_container_element(s, "o", 0, &data, &bytes, &dtype, &dims, &rank) == 0) {
    fprintf(stderr, "an element before precis_container should be refused\n");
    return 1;
  }
  const float x[3] = {1.0f, 2.0f, -3.0f};
  const int64_t x_dims[1] = {3};
  for (int c = 0; c < 2; ++c) {
    unsigned char cond = (unsigned char)c;
    if (precis_set_input(s, "cond", 9, x_dims, 0, &cond, 1) != 0 || precis_set_input(s, "x", 1, x_dims, 1, x, sizeof x) != 0 || precis_run(s) != 0) {
      fprintf(stderr, "run: %s\n", precis_last_error());
      return 1;
    }
    /* cond 0 (else): o = [x + x, -x], t absent; cond 1 (then): o absent, t = x. */
    if (precis_container(s, "o", &present, &count) != 0 || present != !c || count != (c ? 0 : 2)) {
      fprintf(stderr, "cond %d: o present %d with %d elements (%s)\n", c, present, count, precis_last_error());
      return 1;
    }
    for (int k = 0; k < count; ++k) {
      if (precis_container_element(s, "o", k, &data, &bytes, &dtype, &dims, &rank) != 0 || dtype != 1 || rank != 1 || dims[0] != 3 || bytes != sizeof x) {
        fprintf(stderr, "o[%d]: %s\n", k, precis_last_error());
        return 1;
      }
      for (int i = 0; i < 3; ++i)
        if (((const float*)data)[i] != (k == 0 ? x[i] + x[i] : -x[i])) {
          fprintf(stderr, "o[%d][%d] = %f\n", k, i, ((const float*)data)[i]);
          return 1;
        }
    }
    if (precis_container(s, "t", &present, &count) != 0 || present != c || count != c) {
      fprintf(stderr, "cond %d: t present %d with %d elements\n", c, present, count);
      return 1;
    }
    if (c && (precis_container_element(s, "t", 0, &data, &bytes, &dtype, &dims, &rank) != 0 || bytes != sizeof x || memcmp(data, x, sizeof x) != 0)) {
      fprintf(stderr, "t: %s\n", precis_last_error());
      return 1;
    }
    if (precis_container_element(s, "t", c, &data, &bytes, &dtype, &dims, &rank) == 0 || precis_container(s, "nothing", &present, &count) == 0) {
      fprintf(stderr, "an element past the count and an unknown container should be refused\n");
      return 1;
    }
  }
  precis_session_free(s);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) return 2;
  if (argc == 3 && check_containers(argv[2]) != 0) return 1;
  precis_session* s = NULL;
  if (precis_session_open("/nonexistent.plan", 1, &s) == 0 || precis_last_error()[0] == 0) {
    fprintf(stderr, "opening a missing plan should fail with a message\n");
    return 1;
  }
  if (precis_session_open(argv[1], 1, &s) != 0) {
    fprintf(stderr, "open: %s\n", precis_last_error());
    return 1;
  }
  const char* name;
  int dtype, rank;
  const int64_t* dims;
  if (precis_num_inputs(s) != 1 || precis_input_info(s, 0, &name, &dtype, &dims, &rank) != 0 || dtype != 1) return 1;
  size_t n = 1;
  for (int i = 0; i < rank; ++i) n *= (size_t)dims[i];
  float* x = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) x[i] = 0.5f;
  if (precis_set_input(s, name, 2, dims, rank, x, n) == 0) {
    fprintf(stderr, "a wrong dtype should be refused\n");
    return 1;
  }
  if (precis_set_input(s, name, 1, dims, rank, x, n * sizeof(float)) != 0 || precis_run(s) != 0) {
    fprintf(stderr, "run: %s\n", precis_last_error());
    return 1;
  }
  const char* program;
  if (precis_num_programs(s) != 1 || precis_program_name(s, 0, &program) != 0 || strcmp(program, "infer") != 0) {
    fprintf(stderr, "an inference plan has the one program 'infer'\n");
    return 1;
  }
  if (precis_run_program(s, "infer") != 0 || precis_run_program(s, "train_step") == 0 || !strstr(precis_last_error(), "no program")) {
    fprintf(stderr, "run_program: %s\n", precis_last_error());
    return 1;
  }
  if (precis_num_state(s) != 0 || precis_load_state(s, "/nonexistent.state") == 0) {
    fprintf(stderr, "an inference plan has no state, and a missing state file is an error\n");
    return 1;
  }
  const char* out_name;
  if (precis_output_info(s, 0, &out_name, &dtype, &dims, &rank) != 0) return 1;
  const void* data;
  size_t bytes;
  if (precis_output(s, out_name, &data, &bytes) != 0) return 1;
  /* After a run an output's shape is what output_info says (a static plan); unknown names fail. */
  const int64_t* shape;
  int shape_rank;
  if (precis_output_shape(s, out_name, &shape, &shape_rank) != 0 || shape_rank != rank || memcmp(shape, dims, sizeof(int64_t) * (size_t)rank) != 0 ||
      precis_output_shape(s, "no such output", &shape, &shape_rank) == 0) {
    fprintf(stderr, "output_shape: %s\n", precis_last_error());
    return 1;
  }
  /* The example ends in a softmax over 10 classes: the probabilities sum to 1. */
  const float* p = data;
  double sum = 0;
  for (size_t i = 0; i < bytes / sizeof(float); ++i) sum += p[i];
  /* The same plan through the options form gives the same output, bit for bit; a null options
   * pointer is an error. */
  precis_options options = precis_default_options();
  if (options.threads != 0 || options.cpu_fp32_weights != 0 || options.max_loop_iterations != 0) return 1;
  options.threads = 1;
  options.cpu_fp32_weights = 1;
  options.max_loop_iterations = 10;
  precis_session* t = NULL;
  if (precis_session_open_with_options(argv[1], NULL, &t) == 0 || !strstr(precis_last_error(), "options is null")) {
    fprintf(stderr, "null options should be refused\n");
    return 1;
  }
  const void* data2;
  size_t bytes2;
  const int64_t* in_dims;
  int in_rank;
  if (precis_session_open_with_options(argv[1], &options, &t) != 0 || precis_input_info(t, 0, &name, &dtype, &in_dims, &in_rank) != 0 ||
      precis_set_input(t, name, 1, in_dims, in_rank, x, n * sizeof(float)) != 0 || precis_run(t) != 0 ||
      precis_output(t, out_name, &data2, &bytes2) != 0) {
    fprintf(stderr, "options session: %s\n", precis_last_error());
    return 1;
  }
  if (bytes2 != bytes || memcmp(data, data2, bytes) != 0) {
    fprintf(stderr, "the options session's output differs\n");
    return 1;
  }
  precis_session_free(t);
  precis_session_free(s);
  free(x);
  if (fabs(sum - 1.0) > 1e-5) {
    fprintf(stderr, "softmax output sums to %f\n", sum);
    return 1;
  }
  printf("1 passed, 0 failed\n");
  return 0;
}
