/* The Precis runtime's C API: a thin layer over precis::Session for embedding from C and from
 * other languages' FFIs.
 *
 * Every function returns 0 on success and -1 on failure; precis_last_error() then gives the
 * message (valid until the next call on the same thread). Handles are owned by the caller and
 * released with precis_session_free. Output pointers stay valid until the next precis_run on
 * that session. Element types use the ONNX TensorProto codes (1 = float32, 7 = int64, ...).
 * Threads: a session handle must not be used by two threads at once; distinct handles (also on
 * the same plan file) may be used concurrently, and precis_last_error() is per thread. */
#ifndef PRECIS_C_API_H_
#define PRECIS_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct precis_session precis_session;

/* threads: 0 = all hardware threads. */
int precis_session_open(const char* plan_path, int threads, precis_session** out);
int precis_session_from_buffer(const void* data, size_t size, int threads, precis_session** out);
void precis_session_free(precis_session* session);

/* Session options beyond the thread count (precis::SessionOptions): start from
 * precis_default_options() and set the fields wanted. */
typedef struct precis_options {
  int threads;                 /* 0 = all hardware threads */
  int cpu_fp32_weights;        /* nonzero: keep FP32 copies of 16-bit MatMul/Gemm/Conv weights, made at
                                  load (faster at small batches on CPUs without FP16 arithmetic,
                                  twice the weights' memory) */
  int64_t max_loop_iterations; /* > 0: a Loop step that would run more iterations fails */
} precis_options;
precis_options precis_default_options(void);
int precis_session_open_with_options(const char* plan_path, const precis_options* options, precis_session** out);
int precis_session_from_buffer_with_options(const void* data, size_t size, const precis_options* options, precis_session** out);

int precis_num_inputs(const precis_session* session);
int precis_num_outputs(const precis_session* session);
/* Name, element type and dims of input/output i; `dims` points into the session. In a dynamic plan
 * (compiled without --shape) a symbolic dim is -1: the dims given to precis_set_input bind it, and
 * an output's shape after a run is that of precis_output (docs/dynamic-shapes.md). */
int precis_input_info(const precis_session* session, int i, const char** name, int* dtype, const int64_t** dims, int* rank);
int precis_output_info(const precis_session* session, int i, const char** name, int* dtype, const int64_t** dims, int* rank);

int precis_set_input(precis_session* session, const char* name, int dtype, const int64_t* dims, int rank, const void* data,
                     size_t bytes);
/* Runs the default program ("infer", or the plan's only one); precis_run_program runs one by name. */
int precis_run(precis_session* session);
int precis_run_program(precis_session* session, const char* program);
int precis_num_programs(const precis_session* session);
int precis_program_name(const precis_session* session, int i, const char** name);
int precis_output(const precis_session* session, const char* name, const void** data, size_t* bytes);
/* The shape of output `name` after the last run (a dynamic plan's outputs change with the inputs);
 * `dims` stays valid until the next call on this session. */
int precis_output_shape(precis_session* session, const char* name, const int64_t** dims, int* rank);
/* Container outputs (docs/sequences.md): model outputs that are sequences or optionals whose length
 * or presence is decided when the plan runs; their parts are outputs too. kind: 0 a sequence, 1 an
 * optional tensor, 2 an optional sequence. After a run, precis_container gives whether it is present
 * and its element count, and precis_container_element element k (data, bytes, dtype and dims valid
 * until the next run or the next precis_container call for that name). */
int precis_num_containers(const precis_session* session);
int precis_container_info(const precis_session* session, int i, const char** name, int* kind);
int precis_container(precis_session* session, const char* name, int* present, int* count);
int precis_container_element(const precis_session* session, const char* name, int k, const void** data, size_t* bytes, int* dtype,
                             const int64_t** dims, int* rank);

/* State tensors (persisting across runs: trained weights, optimizer moments, counters). Read and
 * write copy `bytes` (the tensor's exact size); save/load write and read all state as one file
 * (atomic replace; a file of another plan, truncated or corrupted, is refused and changes nothing). */
int precis_num_state(const precis_session* session);
int precis_state_info(const precis_session* session, int i, const char** name, int* dtype, const int64_t** dims, int* rank);
int precis_read_state(const precis_session* session, const char* name, void* data, size_t bytes);
int precis_write_state(precis_session* session, const char* name, const void* data, size_t bytes);
int precis_save_state(const precis_session* session, const char* path);
int precis_load_state(precis_session* session, const char* path);

const char* precis_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* PRECIS_C_API_H_ */
