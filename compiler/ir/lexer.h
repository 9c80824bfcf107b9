// Lexer for the IR text form: identifiers, %value names, strings, numbers and punctuation,
// with // comments skipped. Tracks line and column for error messages.
#pragma once

#include <string>
#include <string_view>

#include "precis/status.h"

namespace precis::ir {

struct Token {
  enum class Kind { kEnd, kIdent, kValueName, kString, kNumber, kPunct };
  Kind kind = Kind::kEnd;
  std::string text;  // identifiers, numbers, punctuation as written; names and strings unescaped
  int line = 1, column = 1;
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}
  // The next token; errors (bad escape, unterminated string, stray byte) name line:column.
  StatusOr<Token> Next();

 private:
  void SkipSpaceAndComments();
  StatusOr<std::string> ReadQuoted();
  char Peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  void Advance();
  Status Error(const std::string& message) const;

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1, column_ = 1;
};

}  // namespace precis::ir
