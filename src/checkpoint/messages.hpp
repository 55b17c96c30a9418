// How errors about a checkpoint file are phrased: every one begins
// "checkpoint 'PATH'" and an unusable file's ends with what to do about it.
#pragma once

#include <exception>
#include <string>

#include "util/error.hpp"

namespace cifar {

// Appended to every refusal of a checkpoint written by another run.
inline constexpr const char* kNewRunHint = ", or start a new run: --resume none with another (empty) --checkpoint-dir";

// "checkpoint 'PATH'" followed by `rest` (which brings its own ": " or " ").
std::string checkpoint_message(const std::string& path, const std::string& rest);
// What to do about an unusable file, appended to every read error.
std::string unusable_fix(const std::string& path);
// checkpoint_message(path, rest) + unusable_fix(path).
CheckpointError unusable_checkpoint(const std::string& path, const std::string& rest);
// An exception's message; LibTorch's c10::Error without its backtrace.
std::string error_text(const std::exception& e);

}  // namespace cifar
