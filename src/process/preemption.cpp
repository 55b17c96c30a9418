// Signal flag and its per-step agreement (see preemption.hpp).
#include "process/preemption.hpp"

#include <signal.h>  // NOLINT(modernize-deprecated-headers): sigaction is POSIX's, not <csignal>'s

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "comm/communicator.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal flag must be lock-free to be async-signal-safe");

extern "C" void on_preemption_signal(int signal_number) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal_number);  // the first signal wins; later ones are ignored
}

}  // namespace

void install_preemption_handlers() {
  struct sigaction action {};
  action.sa_handler = on_preemption_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal_number : {SIGTERM, SIGUSR1}) {
    if (sigaction(signal_number, &action, nullptr) != 0)
      throw Error(std::string("cannot install the handler for ") + signal_name(signal_number));
  }
}

void release_preemption_handlers() {
  for (int signal_number : {SIGTERM, SIGUSR1}) std::signal(signal_number, SIG_DFL);
  if (const int pending = g_signal.load()) std::raise(pending);
}

void announce_stop_handlers(int rank) {
  const char* path = std::getenv("CIFAR_SIGNALS_READY_FILE");
  if (rank != 0 || path == nullptr || *path == '\0') return;
  std::FILE* file = std::fopen(path, "w");
  if (file == nullptr || std::fclose(file) != 0)
    log::warn(
        strprintf("cannot create %s (CIFAR_SIGNALS_READY_FILE): %s; the launcher passes a stop on to the "
                  "ranks only after its time limit",
                  path, std::strerror(errno)));
}

int preemption_signal() { return g_signal.load(); }

AgreedPreemption agree_on_signals(const std::vector<int>& firsts) {
  AgreedPreemption agreed;
  for (int signal_number : {SIGUSR1, SIGTERM}) {  // the order a scheduler sends them in
    if (std::find(firsts.begin(), firsts.end(), signal_number) == firsts.end()) continue;
    agreed.signal = std::max(agreed.signal, signal_number);
    agreed.by += (agreed.by.empty() ? "" : " and ") + std::string(signal_name(signal_number));
  }
  return agreed;
}

AgreedPreemption preemption_agreed(Communicator& control) {
  const auto all = control.all_gather(torch::tensor({static_cast<int64_t>(g_signal.load())})).contiguous();
  const int64_t* p = all.data_ptr<int64_t>();
  return agree_on_signals(std::vector<int>(p, p + all.numel()));
}

const char* signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    default: {
      static thread_local char text[32];
      std::snprintf(text, sizeof text, "signal %d", signal_number);
      return text;
    }
  }
}

bool preempted_during_startup(Communicator& control, bool resumed) {
  const AgreedPreemption agreed = preemption_agreed(control);
  if (agreed.signal == 0) return false;
  if (control.rank() == 0)
    log::info(
        strprintf("preempted by %s during start-up, before the first step: nothing trained, nothing new to "
                  "save; exit code %d (run again to %s)",
                  agreed.by.c_str(), kExitPreempted, resumed ? "resume with --resume auto" : "start"));
  return true;
}

}  // namespace cifar
