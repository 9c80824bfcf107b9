// The C API (runtime/include/precis/c_api.h) over precis::Session.
#include "precis/c_api.h"

#include <map>
#include <string>

#include "precis/session.h"

struct precis_session {
  std::unique_ptr<precis::Session> session;
  std::vector<int64_t> shape;  // precis_output_shape's answer
  std::map<std::string, precis::ContainerData> containers;  // precis_container's answers, by name
};

namespace {

thread_local std::string last_error;

int Fail(const precis::Status& s) {
  last_error = s.ToString();
  return -1;
}

int Fail(const char* message) {
  last_error = message;
  return -1;
}

int Info(const std::vector<precis::TensorInfo>& infos, int i, const char** name, int* dtype, const int64_t** dims, int* rank) {
  if (i < 0 || size_t(i) >= infos.size()) return Fail("index out of range");
  const precis::TensorInfo& t = infos[size_t(i)];
  if (name) *name = t.name.c_str();
  if (dtype) *dtype = int(t.dtype);
  if (dims) *dims = t.dims.data();
  if (rank) *rank = int(t.dims.size());
  return 0;
}

int Wrap(precis::StatusOr<std::unique_ptr<precis::Session>> s, precis_session** out) {
  if (!out) return Fail("out is null");
  if (!s.ok()) return Fail(s.status());
  *out = new precis_session{std::move(s).value(), {}, {}};
  return 0;
}

}  // namespace

extern "C" {

int precis_session_open(const char* plan_path, int threads, precis_session** out) {
  if (!plan_path) return Fail("plan_path is null");
  precis::SessionOptions options;
  options.threads = threads;
  return Wrap(precis::Session::Open(plan_path, options), out);
}

int precis_session_from_buffer(const void* data, size_t size, int threads, precis_session** out) {
  if (!data && size) return Fail("data is null");
  precis::SessionOptions options;
  options.threads = threads;
  return Wrap(precis::Session::FromBuffer(data, size, options), out);
}

precis_options precis_default_options(void) {
  precis::SessionOptions d;
  return precis_options{d.threads, d.cpu_fp32_weights ? 1 : 0, d.max_loop_iterations};
}

int precis_session_open_with_options(const char* plan_path, const precis_options* options, precis_session** out) {
  if (!plan_path || !options) return Fail(plan_path ? "options is null" : "plan_path is null");
  precis::SessionOptions o;
  o.threads = options->threads;
  o.cpu_fp32_weights = options->cpu_fp32_weights != 0;
  o.max_loop_iterations = options->max_loop_iterations;
  return Wrap(precis::Session::Open(plan_path, o), out);
}

int precis_session_from_buffer_with_options(const void* data, size_t size, const precis_options* options, precis_session** out) {
  if ((!data && size) || !options) return Fail(options ? "data is null" : "options is null");
  precis::SessionOptions o;
  o.threads = options->threads;
  o.cpu_fp32_weights = options->cpu_fp32_weights != 0;
  o.max_loop_iterations = options->max_loop_iterations;
  return Wrap(precis::Session::FromBuffer(data, size, o), out);
}

void precis_session_free(precis_session* session) { delete session; }

int precis_num_inputs(const precis_session* s) { return s ? int(s->session->inputs().size()) : Fail("session is null"); }
int precis_num_outputs(const precis_session* s) { return s ? int(s->session->outputs().size()) : Fail("session is null"); }

int precis_input_info(const precis_session* s, int i, const char** name, int* dtype, const int64_t** dims, int* rank) {
  return s ? Info(s->session->inputs(), i, name, dtype, dims, rank) : Fail("session is null");
}

int precis_output_info(const precis_session* s, int i, const char** name, int* dtype, const int64_t** dims, int* rank) {
  return s ? Info(s->session->outputs(), i, name, dtype, dims, rank) : Fail("session is null");
}

int precis_set_input(precis_session* s, const char* name, int dtype, const int64_t* dims, int rank, const void* data, size_t bytes) {
  if (!s || !name || (rank > 0 && !dims) || rank < 0) return Fail("null argument");
  precis::Status st = s->session->SetInput(name, precis::DataType(dtype), std::vector<int64_t>(dims, dims + rank), data, bytes);
  return st.ok() ? 0 : Fail(st);
}

int precis_run(precis_session* s) {
  if (!s) return Fail("session is null");
  precis::Status st = s->session->Run();
  return st.ok() ? 0 : Fail(st);
}

int precis_run_program(precis_session* s, const char* program) {
  if (!s || !program) return Fail("null argument");
  precis::Status st = s->session->Run(program);
  return st.ok() ? 0 : Fail(st);
}

int precis_num_programs(const precis_session* s) { return s ? int(s->session->programs().size()) : Fail("session is null"); }

int precis_program_name(const precis_session* s, int i, const char** name) {
  if (!s || !name) return Fail("null argument");
  const auto& names = s->session->programs();
  if (i < 0 || size_t(i) >= names.size()) return Fail("index out of range");
  *name = names[size_t(i)].c_str();
  return 0;
}

int precis_num_state(const precis_session* s) { return s ? int(s->session->state().size()) : Fail("session is null"); }

int precis_state_info(const precis_session* s, int i, const char** name, int* dtype, const int64_t** dims, int* rank) {
  return s ? Info(s->session->state(), i, name, dtype, dims, rank) : Fail("session is null");
}

int precis_read_state(const precis_session* s, const char* name, void* data, size_t bytes) {
  if (!s || !name || (!data && bytes)) return Fail("null argument");
  precis::Status st = s->session->ReadState(name, data, bytes);
  return st.ok() ? 0 : Fail(st);
}

int precis_write_state(precis_session* s, const char* name, const void* data, size_t bytes) {
  if (!s || !name || (!data && bytes)) return Fail("null argument");
  for (const precis::TensorInfo& t : s->session->state())
    if (t.name == name) {
      precis::Status st = s->session->WriteState(name, t.dtype, t.dims, data, bytes);
      return st.ok() ? 0 : Fail(st);
    }
  return Fail(precis::InvalidArgument(std::string("no state tensor '") + name + "'"));
}

int precis_save_state(const precis_session* s, const char* path) {
  if (!s || !path) return Fail("null argument");
  precis::Status st = s->session->SaveState(path);
  return st.ok() ? 0 : Fail(st);
}

int precis_load_state(precis_session* s, const char* path) {
  if (!s || !path) return Fail("null argument");
  precis::Status st = s->session->LoadState(path);
  return st.ok() ? 0 : Fail(st);
}

int precis_output_shape(precis_session* s, const char* name, const int64_t** dims, int* rank) {
  if (!s || !name) return Fail("null argument");
  auto out = s->session->Output(name);
  if (!out.ok()) return Fail(out.status());
  s->shape = out->info.dims;
  if (dims) *dims = s->shape.data();
  if (rank) *rank = int(s->shape.size());
  return 0;
}

int precis_output(const precis_session* s, const char* name, const void** data, size_t* bytes) {
  if (!s || !name) return Fail("null argument");
  auto out = s->session->Output(name);
  if (!out.ok()) return Fail(out.status());
  if (data) *data = out->data;
  if (bytes) *bytes = out->info.ByteSize();
  return 0;
}

int precis_num_containers(const precis_session* s) { return s ? int(s->session->containers().size()) : -1; }

int precis_container_info(const precis_session* s, int i, const char** name, int* kind) {
  if (!s) return Fail("null argument");
  const auto& list = s->session->containers();
  if (i < 0 || size_t(i) >= list.size()) return Fail("container index out of range");
  if (name) *name = list[size_t(i)].name.c_str();
  if (kind) *kind = int(list[size_t(i)].kind);
  return 0;
}

int precis_container(precis_session* s, const char* name, int* present, int* count) {
  if (!s || !name) return Fail("null argument");
  auto got = s->session->OutputContainer(name);
  if (!got.ok()) return Fail(got.status());
  precis::ContainerData& kept = s->containers[name] = std::move(*got);
  if (present) *present = kept.present ? 1 : 0;
  if (count) *count = int(kept.elements.size());
  return 0;
}

int precis_container_element(const precis_session* s, const char* name, int k, const void** data, size_t* bytes, int* dtype,
                             const int64_t** dims, int* rank) {
  if (!s || !name) return Fail("null argument");
  auto it = s->containers.find(name);
  if (it == s->containers.end()) return Fail((std::string("container '") + name + "': call precis_container after the run first").c_str());
  if (k < 0 || size_t(k) >= it->second.elements.size()) return Fail((std::string("container '") + name + "': element index out of range").c_str());
  const precis::TensorData& t = it->second.elements[size_t(k)];
  if (data) *data = t.data;
  if (bytes) *bytes = t.info.ByteSize();
  if (dtype) *dtype = int(t.info.dtype);
  if (dims) *dims = t.info.dims.data();
  if (rank) *rank = int(t.info.dims.size());
  return 0;
}

const char* precis_last_error(void) { return last_error.c_str(); }

}  // extern "C"
