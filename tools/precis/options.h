// Helpers shared by the CLI commands: option parsing, error reporting, byte formatting.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "precis/session.h"
#include "precis/status.h"

namespace precis::tools {

// Parses "NAME=1x3x224x224" (a scalar is "NAME=" or "NAME=scalar") into `shapes`, or
// "SYMBOL=LO..HI" (bounds of a symbolic dim the plan keeps) into `bounds` (refused where null).
// With `containers`: "NAME=[2x3,4]" gives a sequence input's element shapes ("NAME=[]" an empty
// sequence) and "NAME=none" an absent optional input.
Status ParseShapeOption(const std::string& text, std::map<std::string, std::vector<int64_t>>& shapes,
                        std::map<std::string, std::pair<int64_t, int64_t>>* bounds = nullptr,
                        passes::ContainerShapes* containers = nullptr);
// Prints "precis COMMAND: message" and the usage; returns 2.
int UsageError(const char* command, const std::string& message, const char* usage);
// Prints "precis COMMAND: status" on one line; returns 1.
int ReportError(const char* command, const Status& status);
std::string FormatBytes(size_t bytes);
// Milliseconds with the digits that matter: "412", "3.7", "0.42", "0.008", "<0.001" (never "0").
std::string FormatMs(double ms);
// Input `info` of `session` with concrete dims: a dynamic plan's symbolic dims take their value
// from `values` (symbol -> size, from --dim NAME=N), else 1 (the symbol is added to `defaulted`).
// Errors: a dim that is an expression of symbols ("2*seq"), a value given for no symbol.
StatusOr<TensorInfo> ConcreteInput(const Session& session, const TensorInfo& info, const std::map<std::string, int64_t>& values,
                                   std::set<std::string>& defaulted);
// Parses --dim NAME=N into `values`.
Status ParseDimOption(const std::string& text, std::map<std::string, int64_t>& values);
// Imports and compiles a model file (shared by compile and run).
StatusOr<driver::CompileResult> CompileModelFile(const std::string& path, const driver::CompileOptions& options);

}  // namespace precis::tools
