// Plan file validation (see plan_format.h).
#include "runtime/plan/plan_format.h"

#include <cstring>

#include "runtime/base/hash.h"

namespace precis::plan {

namespace {

// FlatBuffers 2.0's verifier checks only the 4-byte alignment of a vector's length, not that its
// 8-byte elements are aligned: a crafted plan could make every read of a tensor's dims or an Ints
// attribute a misaligned load. (An empty vector's data is never read.)
bool Misaligned(const flatbuffers::Vector<int64_t>* v) { return v && v->size() > 0 && reinterpret_cast<uintptr_t>(v->data()) % 8 != 0; }

Status CheckVectorAlignment(const Plan* meta) {
  if (meta->tensors())
    for (const TensorDesc* d : *meta->tensors())
      if (Misaligned(d->dims()) || Misaligned(d->dim_code())) return InvalidArgument("plan tensor dims are misaligned");
  if (Misaligned(meta->symbol_min()) || Misaligned(meta->symbol_max()) || Misaligned(meta->dim_atoms()) || Misaligned(meta->value_symbols()) ||
      Misaligned(meta->value_symbol_scale()) || Misaligned(meta->data_symbols()) || Misaligned(meta->data_symbol_bounds()) ||
      Misaligned(meta->expr_symbols()))
    return InvalidArgument("plan symbol tables are misaligned");
  for (const Program* p : *meta->programs())
    if (p->steps())
      for (const Step* s : *p->steps())
        if (s->attrs())
          for (const Attr* a : *s->attrs())
            if (Misaligned(a->ints()) || Misaligned(a->tensor_dims())) return InvalidArgument("plan step attributes are misaligned");
  return Status::Ok();
}

}  // namespace

StatusOr<PlanView> ValidatePlan(const uint8_t* data, size_t size) {
  if (size < sizeof(FileHeader)) return InvalidArgument("plan is truncated: " + std::to_string(size) + " bytes, shorter than its header");
  FileHeader h;
  std::memcpy(&h, data, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return InvalidArgument("not a Precis plan (wrong magic)");
  if (h.version > kFormatVersion)
    return Unimplemented("plan format version " + std::to_string(h.version) + " is newer than this runtime's (" +
                         std::to_string(kFormatVersion) + "): recompile the model or update the runtime");
  // Version 1 had no programs or state; version 2 steps carried the ONNX opset instead of kernel-form
  // attributes (step_attrs.h), which kernels no longer read; version 3 steps had no widen marks
  // (backends widened 16-bit steps at load).
  if (h.version >= 1 && h.version < kFormatVersion)
    return Unimplemented("plan format version " + std::to_string(h.version) + " is no longer supported (this runtime reads version " +
                         std::to_string(kFormatVersion) + "): recompile the model with this release's precis compile");
  if (h.version < 1 || h.header_bytes != sizeof(FileHeader)) return InvalidArgument("plan header is corrupt");
  if (h.file_size != size)
    return InvalidArgument("plan is truncated or padded: header says " + std::to_string(h.file_size) + " bytes, file has " +
                           std::to_string(size));
  auto in_file = [&](uint64_t off, uint64_t len) { return off >= sizeof(FileHeader) && off <= size && len <= size - off; };
  if (!in_file(h.meta_offset, h.meta_size) || !in_file(h.const_offset, h.const_size) || h.const_offset % kConstantAlignment)
    return InvalidArgument("plan sections lie outside the file");
  uint64_t sum = HashBytes(data + sizeof(FileHeader), size - sizeof(FileHeader));
  if (sum != h.checksum) return InvalidArgument("plan checksum mismatch: the file is corrupted");
  // The metadata must start 8-byte aligned (plans are mapped or copied to 64-byte aligned memory),
  // so that the alignment checks below mean something.
  if (h.meta_offset % 8) return InvalidArgument("plan metadata is misaligned");
  const uint8_t* meta = data + h.meta_offset;
  flatbuffers::Verifier verifier(meta, size_t(h.meta_size));
  if (!VerifyPlanBuffer(verifier)) return InvalidArgument("plan metadata fails verification");
  PlanView view;
  view.meta = GetPlan(meta);
  if (!view.meta->programs() || view.meta->programs()->size() == 0) return InvalidArgument("plan has no programs");
  PRECIS_RETURN_IF_ERROR(CheckVectorAlignment(view.meta));
  if (view.meta->modules())
    for (const Module* m : *view.meta->modules()) {
      std::string name = m->name() ? m->name()->str() : "?";
      uint64_t hash = m->code() ? HashBytes(m->code()->data(), m->code()->size()) : HashBytes(nullptr, 0);
      if (hash != m->hash()) return InvalidArgument("plan module '" + name + "' fails its content hash");
    }
  view.constants = data + h.const_offset;
  view.constants_size = size_t(h.const_size);
  return view;
}

}  // namespace precis::plan
