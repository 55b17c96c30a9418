// All ranks agree on a failure. Every rank runs the same check (configuration,
// data files, a checkpoint write); if it threw a cifar::Error on any rank, all
// ranks learn it, the lowest failing rank prints its one message, and every
// rank leaves through AgreedFailure with that rank's exit code: a clean exit
// on every rank instead of an MPI_Abort, and no rank left waiting.
#pragma once

#include <mpi.h>

#include <functional>

#include "util/error.hpp"

namespace cifar {

class Communicator;

// Before the job has a Communicator (start-up: configuration, placement, data).
void agree_on_startup(MPI_Comm comm, const std::function<void()>& check);
// During the run, over the job's control communicator (checkpoint writes).
void agree_on(Communicator& comm, const std::function<void()>& check);

// For a failure that every rank detects alike at the same point without
// communicating (a verdict on the averaged gradients, which every rank
// holds): rank `reporter` logs `error` once and every rank leaves through
// AgreedFailure with its exit code, as after agree_on.
[[noreturn]] void fail_on_every_rank(const Error& error, int rank, int reporter = 0);

}  // namespace cifar
