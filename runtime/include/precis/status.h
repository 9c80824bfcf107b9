// Status and StatusOr<T>: how every recoverable error (bad model, bad plan, bad input) travels.
//
// Contract: a Status is either OK or carries a code and a message that names what went wrong
// (node, value, file). Functions that can fail because of user input return Status or
// StatusOr<T>; broken invariants use PRECIS_CHECK (check.h) instead. No exceptions cross
// library APIs. StatusOr<T> holds a value exactly when ok(); reading value() of an error aborts.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace precis {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the input (model, plan, tensor, text) is malformed
  kNotFound,         // a file or named entity does not exist
  kUnimplemented,    // valid input that Precis does not support (yet)
  kOutOfRange,       // offsets, lengths or sizes outside what the data allows
  kInternal,         // a failure of the environment (I/O, allocation)
  kUnavailable,      // a resource the call needs is absent (no CUDA device)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: message" (or "OK").
  std::string ToString() const;
  // Returns a copy whose message is "context: message"; OK stays OK.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status InvalidArgument(std::string message);
Status NotFound(std::string message);
Status Unimplemented(std::string message);
Status OutOfRange(std::string message);
Status Internal(std::string message);
Status Unavailable(std::string message);

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "StatusOr built from OK status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { Check(); return *value_; }
  const T& value() const& { Check(); return *value_; }
  T&& value() && { Check(); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  void Check() const {
    if (!value_) std::abort();
  }
  Status status_;
  std::optional<T> value_;
};

}  // namespace precis

#define PRECIS_CONCAT_INNER(a, b) a##b
#define PRECIS_CONCAT(a, b) PRECIS_CONCAT_INNER(a, b)

#define PRECIS_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::precis::Status precis_status_ = (expr);        \
    if (!precis_status_.ok()) return precis_status_; \
  } while (0)

#define PRECIS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

// Expands to several statements: use it as a statement of its own, inside braces when it is the
// body of an if.
#define PRECIS_ASSIGN_OR_RETURN(lhs, expr) \
  PRECIS_ASSIGN_OR_RETURN_IMPL(PRECIS_CONCAT(precis_statusor_, __COUNTER__), lhs, expr)
