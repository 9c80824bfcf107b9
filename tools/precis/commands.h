// The subcommands of the `precis` command-line tool. Each takes the arguments after its name
// and returns the process exit status (0 success, 1 error reported on stderr, 2 usage error).
#pragma once

#include <string>
#include <vector>

namespace precis::tools {

int InspectCommand(const std::vector<std::string>& args);
int CompileCommand(const std::vector<std::string>& args);
int CompileTrainCommand(const std::vector<std::string>& args);  // compile --train
int RunCommand(const std::vector<std::string>& args);
int TrainCommand(const std::vector<std::string>& args);
int ExportCommand(const std::vector<std::string>& args);
int BenchCommand(const std::vector<std::string>& args);
int ReportCommand(const std::vector<std::string>& args);
int OptCommand(const std::vector<std::string>& args);

}  // namespace precis::tools
