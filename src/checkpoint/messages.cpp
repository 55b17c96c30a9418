// Checkpoint error phrasing (see messages.hpp).
#include "checkpoint/messages.hpp"

#include <c10/util/Exception.h>

namespace cifar {

std::string checkpoint_message(const std::string& path, const std::string& rest) {
  return "checkpoint '" + path + "'" + rest;
}

std::string unusable_fix(const std::string& path) {
  return "; delete or move it away (" + path + ") to resume from an older checkpoint (--resume auto)" + kNewRunHint;
}

CheckpointError unusable_checkpoint(const std::string& path, const std::string& rest) {
  return CheckpointError(checkpoint_message(path, rest) + unusable_fix(path));
}

std::string error_text(const std::exception& e) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e)) return torch_error->what_without_backtrace();
  return e.what();
}

}  // namespace cifar
