// Logging: rank-0-only progress lines, rank-prefixed diagnostics, all to
// stderr/stdout with a line-atomic write so that lines of different ranks
// never interleave mid-line.
#pragma once

#include <cstdio>
#include <string>

namespace cifar {

// printf-style formatting into a std::string.
std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

namespace log {
// Progress for the user: printed by rank 0 only, to stdout, no prefix
// (keeps the PyTorch DDP recipe's line format).
void info(const std::string& line);
// Diagnostics from any rank, to stderr, prefixed "[rank r/W host]".
void warn(const std::string& line);
void error(const std::string& line);
// Any rank, to stdout, prefixed; used for per-rank reports (check-env).
void rank_line(const std::string& line);
}  // namespace log
}  // namespace cifar
