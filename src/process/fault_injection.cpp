// The test-only fault injection (see fault_injection.hpp).
#include "process/fault_injection.hpp"

#include <csignal>
#include <cstdlib>
#include <sstream>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

constexpr const char* kVariable = "CIFAR_FAULT_INJECT";

long parse_number(const std::string& text, const std::string& whole) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0)
    throw ConfigError(strprintf("%s=%s: '%s' is not a number; write rank=R,step=S[,kind=throw|usr1]", kVariable,
                                whole.c_str(), text.c_str()));
  return value;
}

}  // namespace

FaultInjector::FaultInjector(int rank) : rank_(rank) {
  const char* text = std::getenv(kVariable);
  if (text != nullptr && *text != '\0') *this = FaultInjector(rank, text);
}

FaultInjector::FaultInjector(int rank, const std::string& text) : rank_(rank) {
  long fault_rank = -1, step = -1;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto eq = part.find('=');
    const std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (key == "rank") {
      fault_rank = parse_number(value, text);
    } else if (key == "step") {
      step = parse_number(value, text);
    } else if (key == "kind" && (value == "throw" || value == "usr1")) {
      signal_ = value == "usr1";
    } else {
      throw ConfigError(strprintf("%s=%s: unknown part '%s'; write rank=R,step=S[,kind=throw|usr1]", kVariable,
                                  text.c_str(), part.c_str()));
    }
  }
  if (fault_rank < 0 || step < 0)
    throw ConfigError(strprintf("%s=%s: both rank= and step= are needed", kVariable, text.c_str()));
  if (fault_rank == rank) step_ = step;
}

void FaultInjector::at_step(long step) const {
  if (step != step_) return;
  if (signal_) {
    std::raise(SIGUSR1);  // recorded by the preemption handler: the run stops at this step's end
    return;
  }
  throw Error(strprintf("injected fault (%s): rank %d fails as optimiser step %ld begins", kVariable, rank_, step));
}

}  // namespace cifar
