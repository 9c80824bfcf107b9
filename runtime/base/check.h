// PRECIS_CHECK(cond) << "message": aborts with file:line when an invariant (a bug, never bad
// user input) is broken. User-caused problems return Status instead (precis/status.h).
#pragma once

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace precis::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond) {
    stream_ << file << ":" << line << ": check failed: " << cond << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::cerr << stream_.str() << std::endl;
    std::abort();
  }
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

}  // namespace precis::internal

#define PRECIS_CHECK(cond) \
  if (cond) {              \
  } else                   \
    ::precis::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()
