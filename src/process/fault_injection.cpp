// The test-only fault injection (see fault_injection.hpp).
#include "process/fault_injection.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <sstream>
#include <utility>
#include <vector>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

constexpr const char* kVariable = "CIFAR_FAULT_INJECT";
constexpr const char* kUsage = "rank=R,step=S[,kind=throw|usr1]";
constexpr const char* kStartupVariable = "CIFAR_STARTUP_FAULT";
constexpr const char* kStartupUsage = "rank=R,stage=NAME,kind=exit|stall";

// One variable's value, its usage and its key=value parts, for the messages.
struct FaultSpec {
  const char* variable;
  const char* usage;
  std::string text;

  std::vector<std::pair<std::string, std::string>> parts() const {
    std::vector<std::pair<std::string, std::string>> out;
    std::istringstream in(text);
    std::string part;
    while (std::getline(in, part, ',')) {
      const auto eq = part.find('=');
      out.emplace_back(part.substr(0, eq), eq == std::string::npos ? "" : part.substr(eq + 1));
    }
    return out;
  }
  long number(const std::string& value) const {
    char* end = nullptr;
    const long n = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || n < 0)
      throw ConfigError(
          strprintf("%s=%s: '%s' is not a number; write %s", variable, text.c_str(), value.c_str(), usage));
    return n;
  }
  [[noreturn]] void refuse(const std::string& why) const {
    throw ConfigError(strprintf("%s=%s: %s; write %s", variable, text.c_str(), why.c_str(), usage));
  }
};

}  // namespace

FaultInjector::FaultInjector(int rank) : rank_(rank) {
  const char* text = std::getenv(kVariable);
  if (text != nullptr && *text != '\0') *this = FaultInjector(rank, text);
}

FaultInjector::FaultInjector(int rank, const std::string& text) : rank_(rank) {
  const FaultSpec spec{kVariable, kUsage, text};
  long fault_rank = -1, step = -1;
  for (const auto& [key, value] : spec.parts()) {
    if (key == "rank") {
      fault_rank = spec.number(value);
    } else if (key == "step") {
      step = spec.number(value);
    } else if (key == "kind" && (value == "throw" || value == "usr1")) {
      signal_ = value == "usr1";
    } else {
      spec.refuse("unknown part '" + key + (value.empty() ? "" : "=" + value) + "'");
    }
  }
  if (fault_rank < 0 || step < 0) spec.refuse("both rank= and step= are needed");
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

StartupFault startup_fault_from_environment() {
  const char* text = std::getenv(kStartupVariable);
  return text != nullptr && *text != '\0' ? parse_startup_fault(text) : StartupFault{};
}

StartupFault parse_startup_fault(const std::string& text) {
  const FaultSpec spec{kStartupVariable, kStartupUsage, text};
  StartupFault fault;
  bool kind = false;
  for (const auto& [key, value] : spec.parts()) {
    if (key == "rank") {
      fault.rank = static_cast<int>(spec.number(value));
    } else if (key == "stage" && !value.empty()) {
      fault.stage = value;
      std::replace(fault.stage.begin(), fault.stage.end(), '-', ' ');
    } else if (key == "kind" && (value == "exit" || value == "stall")) {
      fault.stall = value == "stall";
      kind = true;
    } else {
      spec.refuse("unknown part '" + key + (value.empty() ? "" : "=" + value) + "'");
    }
  }
  if (fault.rank < 0 || fault.stage.empty() || !kind) spec.refuse("rank=, stage= and kind= are all needed");
  return fault;
}

void strike_startup_fault(const StartupFault& fault, int rank, const std::string& stage) {
  if (fault.rank != rank || fault.stage != stage) return;
  log::error(strprintf("injected fault (%s): rank %d %s at start-up stage '%s'", kStartupVariable, rank,
                       fault.stall ? "stalls" : "exits", stage.c_str()));
  if (!fault.stall) std::_Exit(kExitFailure);
  for (;;) pause();  // until a signal ends the process
}

}  // namespace cifar
