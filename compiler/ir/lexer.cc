// Lexer for the IR text form.
#include "compiler/ir/lexer.h"

#include "compiler/ir/text_format.h"

namespace precis::ir {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNumberChar(char c) {
  return IsDigit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' || c == 'x' ||
         (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void Lexer::Advance() {
  if (text_[pos_] == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  ++pos_;
}

Status Lexer::Error(const std::string& message) const {
  return InvalidArgument(std::to_string(line_) + ":" + std::to_string(column_) + ": " + message);
}

void Lexer::SkipSpaceAndComments() {
  while (pos_ < text_.size()) {
    char c = Peek();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      Advance();
    } else if (c == '/' && Peek(1) == '/') {
      while (pos_ < text_.size() && Peek() != '\n') Advance();
    } else {
      break;
    }
  }
}

StatusOr<std::string> Lexer::ReadQuoted() {
  Advance();  // opening quote
  std::string out;
  while (true) {
    if (pos_ >= text_.size()) return Error("unterminated string");
    char c = Peek();
    if (c == '"') {
      Advance();
      return out;
    }
    if (c == '\n') return Error("newline in string");
    if (c != '\\') {
      out += c;
      Advance();
      continue;
    }
    Advance();
    char e = Peek();
    if (e == '\\' || e == '"') out += e;
    else if (e == 'n') out += '\n';
    else if (e == 't') out += '\t';
    else if (e == 'x') {
      int hi = HexValue(Peek(1)), lo = HexValue(Peek(2));
      if (hi < 0 || lo < 0) return Error("bad \\x escape");
      out += char(hi * 16 + lo);
      Advance();
      Advance();
    } else {
      return Error("unknown escape in string");
    }
    Advance();
  }
}

StatusOr<Token> Lexer::Next() {
  SkipSpaceAndComments();
  Token tok;
  tok.line = line_;
  tok.column = column_;
  if (pos_ >= text_.size()) return tok;
  char c = Peek();
  if (c == '"') {
    tok.kind = Token::Kind::kString;
    PRECIS_ASSIGN_OR_RETURN(tok.text, ReadQuoted());
    return tok;
  }
  if (c == '%') {
    Advance();
    tok.kind = Token::Kind::kValueName;
    if (Peek() == '"') {
      PRECIS_ASSIGN_OR_RETURN(tok.text, ReadQuoted());
      return tok;
    }
    while (pos_ < text_.size() && IsValueNameChar(Peek())) {
      tok.text += Peek();
      Advance();
    }
    if (tok.text.empty()) return Error("expected a value name after '%'");
    return tok;
  }
  if (IsDigit(c) || ((c == '-' || c == '+') && (IsDigit(Peek(1)) || Peek(1) == 'i'))) {
    tok.kind = Token::Kind::kNumber;
    tok.text += c;
    Advance();
    if (Peek() == 'i') {  // -inf / +inf
      for (char expect : std::string_view("inf")) {
        if (Peek() != expect) return Error("bad number");
        tok.text += expect;
        Advance();
      }
      return tok;
    }
    while (pos_ < text_.size() && IsNumberChar(Peek())) {
      // A sign is part of a number only right after an exponent marker.
      char p = Peek();
      if ((p == '+' || p == '-') && !(tok.text.back() == 'e' || tok.text.back() == 'E')) break;
      tok.text += p;
      Advance();
    }
    return tok;
  }
  if (IsIdentStart(c)) {
    tok.kind = Token::Kind::kIdent;
    while (pos_ < text_.size() && (IsIdentStart(Peek()) || IsDigit(Peek()) || Peek() == '.')) {
      tok.text += Peek();
      Advance();
    }
    return tok;
  }
  if (c == ':' && Peek(1) == ':') {
    tok.kind = Token::Kind::kPunct;
    tok.text = "::";
    Advance();
    Advance();
    return tok;
  }
  if (std::string_view("{}[]()<>,=:?*").find(c) != std::string_view::npos) {
    tok.kind = Token::Kind::kPunct;
    tok.text = std::string(1, c);
    Advance();
    return tok;
  }
  return Error("unexpected character '" + std::string(1, c) + "'");
}

}  // namespace precis::ir
