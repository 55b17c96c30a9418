// Collectives of text and topologies (see text_collectives.hpp).
#include "comm/text_collectives.hpp"

#include <torch/torch.h>

#include <cstring>
#include <limits>

#include "comm/communicator.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

int checked_length(const std::string& text) {
  CIFAR_CHECK(text.size() <= static_cast<size_t>(std::numeric_limits<int>::max()), Error,
              strprintf("a text of %zu bytes is too long for one MPI message", text.size()));
  return static_cast<int>(text.size());
}

// Cuts the concatenation `all` into the ranks' texts of `lengths`.
std::vector<std::string> split_texts(const std::string& all, const std::vector<int>& lengths,
                                     const std::vector<int>& offsets) {
  std::vector<std::string> texts;
  texts.reserve(lengths.size());
  for (size_t r = 0; r < lengths.size(); ++r)
    texts.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
  return texts;
}

// Offsets of the concatenation; its total length must fit MPI's int counts.
std::vector<int> offsets_of(const std::vector<int>& lengths, int& total) {
  std::vector<int> offsets(lengths.size(), 0);
  long long sum = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = static_cast<int>(sum);
    sum += lengths[r];
    CIFAR_CHECK(sum <= std::numeric_limits<int>::max(), Error,
                strprintf("the ranks' texts add up to more than %d bytes, too long for one MPI message",
                          std::numeric_limits<int>::max()));
  }
  total = static_cast<int>(sum);
  return offsets;
}

int size_of(MPI_Comm comm) {
  int size = 0;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  return size;
}

int rank_of(MPI_Comm comm) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  return rank;
}

}  // namespace

std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& text, int root) {
  const int size = size_of(comm), rank = rank_of(comm);
  int length = checked_length(text);
  std::vector<int> lengths(static_cast<size_t>(size));
  MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm));
  int total = 0;
  const std::vector<int> offsets = rank == root ? offsets_of(lengths, total) : std::vector<int>(lengths.size(), 0);
  std::string all(static_cast<size_t>(std::max(total, 1)), '\0');  // a valid buffer even when every text is empty
  MPI_CHECK(
      MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, root, comm));
  if (rank != root) return {};
  return split_texts(all, lengths, offsets);
}

std::string broadcast_string(Communicator& comm, const std::string& text, int root) {
  // Tensors, not MPI calls: the Communicator is the run's one way to talk,
  // with its --comm-timeout watch.
  auto length = torch::tensor({static_cast<int64_t>(text.size())});
  comm.broadcast(length, root);
  auto bytes = torch::zeros({length.item<int64_t>()}, torch::kUInt8);
  if (comm.rank() == root && !text.empty()) std::memcpy(bytes.data_ptr(), text.data(), text.size());
  if (bytes.numel() > 0) comm.broadcast(bytes, root);
  return std::string(static_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(bytes.numel()));
}

}  // namespace cifar
