// Preemption: SIGTERM and SIGUSR1 (Slurm's early warning, scancel, a job
// script forwarding either) ask the run to stop at the next step boundary
// with a checkpoint and exit code 3 (kExitPreempted) on every rank.
//
// The handler only records the signal in a lock-free atomic (async-signal-
// safe); the training loop asks preemption_agreed() once per optimiser step,
// a one-integer all-gather over the job's control communicator (MPI, on the
// host: no GPU synchronisation), so a signal that reached one
// rank stops all ranks at the same step. Handlers stay installed until the
// process ends: a second signal (job scripts may forward TERM twice) finds
// the flag already set and changes nothing, so it cannot kill a rank that is
// writing or waiting for the checkpoint.
#pragma once

#include <string>
#include <vector>

namespace cifar {

class Communicator;

// Installs the SIGTERM and SIGUSR1 handlers (SA_RESTART: interrupted system
// calls resume). Idempotent. cifar_mpi installs them first thing in main(),
// before MPI starts, so that a signal during start-up is recorded, not fatal.
void install_preemption_handlers();

// Gives SIGTERM and SIGUSR1 back their default action (a run without
// --checkpoint-dir, --help, --check-env), and re-raises a signal recorded
// meanwhile so that it takes that action now, as if never caught.
void release_preemption_handlers();

// Creates the file that the environment variable CIFAR_SIGNALS_READY_FILE
// names (nothing when unset), on rank 0 only. Called once every rank has
// installed or released its handlers (after a collective that follows them):
// the launchers in jobs/ hold a stop asked for before the file exists,
// because a SIGUSR1 forwarded to a rank still loading its libraries would
// kill it instead of stopping it. A file that cannot be created is a
// warning: the launcher then forwards the stop after its time limit.
void announce_stop_handlers(int rank);

// The first signal received since installation (SIGTERM or SIGUSR1), or 0.
int preemption_signal();

// What the ranks agree on at a step: the highest signal number any rank has
// received (0: none), and the signals by name. Ranks may have received
// different signals first (SIGUSR1 on one, SIGTERM on another before its
// SIGUSR1 came): each is named, so the log never names only the later one.
struct AgreedPreemption {
  int signal = 0;
  std::string by;  // "SIGUSR1", "SIGUSR1 and SIGTERM"; "" when none
};
// `firsts`: each rank's first signal (0: none).
AgreedPreemption agree_on_signals(const std::vector<int>& firsts);
// Collective over `control` (a host communicator): agree_on_signals() of
// every rank's first signal. Every rank gets the same answer at the same step.
AgreedPreemption preemption_agreed(Communicator& control);

// "SIGTERM", "SIGUSR1", or "signal N".
const char* signal_name(int signal_number);
// A SIGTERM or SIGUSR1 during start-up (the handlers are installed before
// MPI starts), agreed over `control`: true when the run must stop before its
// first step, every rank alike, which rank 0 logs. Nothing was trained, so
// there is nothing new to save; `resumed` says which advice to give.
bool preempted_during_startup(Communicator& control, bool resumed);

}  // namespace cifar
