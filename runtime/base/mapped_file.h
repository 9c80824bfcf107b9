// MappedFile: a read-only memory map of a whole file. Weights and plans are read through it so
// that their bytes are never copied; whoever keeps a view keeps a shared_ptr to the map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "precis/status.h"

namespace precis {

class MappedFile {
 public:
  // Maps `path` read-only. Errors: NotFound when it does not exist, InvalidArgument when it is
  // not a regular file, Internal when mapping fails. An empty file maps to size() == 0.
  static StatusOr<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace precis
