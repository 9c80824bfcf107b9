// Progress lines on stderr for long CLI work (calibration, error-budget samples). On a terminal
// one line is rewritten in place; on a pipe or a file (CI logs, `2> log`) carriage returns would
// run the updates together, so each shown update is a line of its own, at most about ten per
// task plus the last.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include <unistd.h>

namespace precis::tools {

class Progress {
 public:
  Progress(std::string label, size_t total) : label_(std::move(label)), total_(total), tty_(isatty(fileno(stderr)) != 0) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { Finish(); }

  // `done` of `total` items are finished.
  void Update(size_t done) {
    if (tty_) {
      std::fprintf(stderr, "\r%s %zu/%zu", label_.c_str(), done, total_);
      open_ = true;
      return;
    }
    size_t tenth = total_ ? done * 10 / total_ : 10;
    if (done != total_ && tenth == last_tenth_) return;
    last_tenth_ = tenth;
    std::fprintf(stderr, "%s %zu/%zu\n", label_.c_str(), done, total_);
  }
  // Ends the in-place line on a terminal; later output starts on a line of its own.
  void Finish() {
    if (open_) std::fprintf(stderr, "\n");
    open_ = false;
  }

 private:
  std::string label_;
  size_t total_;
  bool tty_;
  bool open_ = false;
  size_t last_tenth_ = size_t(-1);
};

}  // namespace precis::tools
