// Collectives of text: what --check-env gathers (each rank's placement line
// and problem) and what the checkpointer
// broadcasts (rank 0's choice of file). Variable-length payloads need their
// lengths exchanged first; that bookkeeping lives here once, tested at
// several world sizes (tests/comm/text_collectives_test.cpp), instead of in
// each caller.
//
// Contract, as for every collective: all ranks of the communicator call the
// same function in the same order with the same root.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace cifar {

class Communicator;

// Over the raw MPI communicator: for start-up and --check-env, before any
// Communicator exists.
//
// Each rank's `text` on `root`, in rank order (size() entries; empty texts
// kept); the other ranks get an empty vector.
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& text, int root = 0);

// Over a Communicator (during the run: the control communicator): `root`'s
// `text` on every rank; the others' `text` is ignored.
std::string broadcast_string(Communicator& comm, const std::string& text, int root = 0);

}  // namespace cifar
