// Helpers shared by the CLI commands: option parsing, error reporting, byte formatting.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "precis/status.h"

namespace precis::tools {

// Parses "NAME=1x3x224x224" (a scalar is "NAME=" or "NAME=scalar") into `shapes`.
Status ParseShapeOption(const std::string& text, std::map<std::string, std::vector<int64_t>>& shapes);
// Prints "precis COMMAND: message" and the usage; returns 2.
int UsageError(const char* command, const std::string& message, const char* usage);
// Prints "precis COMMAND: status" on one line; returns 1.
int ReportError(const char* command, const Status& status);
std::string FormatBytes(size_t bytes);
// Milliseconds with the digits that matter: "412", "3.7", "0.42", "0.008", "<0.001" (never "0").
std::string FormatMs(double ms);
// Imports and compiles a model file (shared by compile and run).
StatusOr<driver::CompileResult> CompileModelFile(const std::string& path, const driver::CompileOptions& options);

}  // namespace precis::tools
