// Node checks: the decisions, and the agreement that ends the job on them.
#include "placement/node_checks.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <regex>
#include <set>
#include <utility>

#include "comm/text_collectives.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

std::string mib(int64_t bytes) { return strprintf("%.1f MiB", static_cast<double>(bytes) / (1 << 20)); }

void check_world_size(const NodeFacts& f, std::vector<NodeFailure>& out) {
  if (!f.srun_direct || f.launcher_tasks <= 0 || f.launcher_tasks == f.world_size) return;
  out.push_back({"world size", f.host,
                 strprintf("srun started this rank as one of %ld task(s), but MPI made a world of %d rank(s): the "
                           "ranks did not wire up through PMI, so the step would run as %ld separate jobs",
                           f.launcher_tasks, f.world_size, f.launcher_tasks / std::max(1, f.world_size)),
                 "launch with srun --mpi=pmix (check that `srun --mpi=list` shows pmix, and that Open MPI was built "
                 "with PMIx support), or with mpirun inside the allocation (CIFAR_LAUNCHER=mpirun)",
                 kExitUsage, false});
}

// Two sizes for one line: MiB with one decimal, more where they would read
// equal, and the bytes where even six decimals do.
std::pair<std::string, std::string> distinct_mib(int64_t a, int64_t b) {
  for (int decimals = 1; decimals <= 6; ++decimals) {
    auto text = [&](int64_t bytes) { return strprintf("%.*f MiB", decimals, static_cast<double>(bytes) / (1 << 20)); };
    if (a == b || text(a) != text(b)) return {text(a), text(b)};
  }
  return {strprintf("%s (%lld bytes)", mib(a).c_str(), static_cast<long long>(a)),
          strprintf("%s (%lld bytes)", mib(b).c_str(), static_cast<long long>(b))};
}

void check_checkpoint_space(const NodeFacts& f, std::vector<NodeFailure>& out) {
  if (f.checkpoint_dir.empty() || f.checkpoint_free < 0 || f.checkpoint_bytes <= 0) return;
  const CheckpointSpace space = checkpoint_space(f);
  if (space.need == 0 || f.checkpoint_free >= space.need) return;
  const auto [free, need] = distinct_mib(f.checkpoint_free, space.need);
  const std::string writes = f.max_writes >= 0 ? strprintf(", %ld written by the run", f.max_writes) : "";
  const std::string what =
      space.model_after
          ? strprintf("the model file of %s beside %lld new checkpoint(s) of about %s", mib(f.model_file_bytes).c_str(),
                      static_cast<long long>(space.files_after), mib(f.checkpoint_bytes).c_str())
          : strprintf("%lld new checkpoint(s) of about %s at once", static_cast<long long>(space.files_writing),
                      mib(f.checkpoint_bytes).c_str());
  out.push_back({"checkpoint space", f.host,
                 strprintf("--checkpoint-dir %s has %s free, but the run needs %s: %s (--keep-checkpoints %d, %d "
                           "already there%s)",
                           f.checkpoint_dir.c_str(), free.c_str(), need.c_str(), what.c_str(), f.keep,
                           f.existing_checkpoints, writes.c_str()),
                 "free space there, choose a --checkpoint-dir on a larger file system, or keep fewer checkpoints "
                 "(--keep-checkpoints)",
                 // A full node-local folder is the node's failure: the job goes on without the node. A
                 // shared one fails the same way wherever the job restarts: exit 2, no restart.
                 f.checkpoint_local ? kExitNodeCheck : kExitUsage, f.checkpoint_local});
}

void check_shm(const NodeFacts& f, std::vector<NodeFailure>& out) {
  if (!f.nccl_shares_node || f.shm_free < 0 || f.shm_free >= kMinShmBytes) return;
  out.push_back({"/dev/shm", f.host,
                 strprintf("/dev/shm has %s free for %d NCCL ranks on the node; NCCL's shared-memory transport "
                           "needs more (it would fail later with \"failed to extend /dev/shm/nccl-…\")",
                           mib(f.shm_free).c_str(), f.local_size),
                 strprintf("give the node (or container) at least %s of /dev/shm: docker/podman run --shm-size=1g, "
                           "or free it; or leave the node out",
                           mib(kMinShmBytes).c_str()),
                 7, true});
}

void check_gpus(const NodeFacts& f, std::vector<NodeFailure>& out) {
  if (f.granted_gpus <= 0 || f.usable_gpus < 0 || f.usable_gpus >= f.granted_gpus) return;
  out.push_back({"GPUs", f.host,
                 strprintf("the launcher gave this rank %d GPU(s) (CUDA_VISIBLE_DEVICES) but CUDA can use only %d: "
                           "a GPU failed, fell off the bus or is held in another mode",
                           f.granted_gpus, f.usable_gpus),
                 "check the node with nvidia-smi (Xid errors in dmesg) and drain it (scontrol update "
                 "NodeName=<node> State=DRAIN Reason=gpu); the job scripts leave it out",
                 7, true});
}

}  // namespace

CheckpointSpace checkpoint_space(const NodeFacts& f) {
  CheckpointSpace s;
  if (f.checkpoint_bytes <= 0) return s;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto times = [](int64_t n, int64_t each) {  // saturating: past int64_t is more than any disk
    int64_t bytes = 0;
    return __builtin_mul_overflow(n, each, &bytes) ? kMax : bytes;
  };
  auto plus = [](int64_t a, int64_t b) { return a > kMax - b ? kMax : a + b; };
  const int64_t keep = std::max(1, f.keep), existing = std::max(0, f.existing_checkpoints);
  const int64_t writes = f.max_writes < 0 ? kMax : static_cast<int64_t>(f.max_writes);
  if (writes > 0) {
    // Before each write the run prunes to `keep`; the new file joins them:
    // the last write holds the most, the kept ones (those there and those
    // written before it) and itself. Those already there take no new room.
    const int64_t kept_before_last = std::min(keep, existing + std::min(writes - 1, keep));
    s.files_writing = std::max<int64_t>(0, kept_before_last + 1 - existing);
    // After the last write's prune, `keep` at most stay while the model file is written.
    s.files_after = std::max<int64_t>(0, std::min(keep, existing + std::min(writes, keep)) - existing);
  }
  const int64_t writing = times(s.files_writing, f.checkpoint_bytes);
  const int64_t after = plus(times(s.files_after, f.checkpoint_bytes), std::max<int64_t>(0, f.model_file_bytes));
  s.model_after = after > writing;
  s.need = std::max(writing, after);
  return s;
}

std::string NodeFailure::text() const { return "node " + host + ": " + check + ": " + found + ". Fix: " + fix; }

std::vector<NodeFailure> check_node(const NodeFacts& facts) {
  std::vector<NodeFailure> out;
  check_world_size(facts, out);
  check_checkpoint_space(facts, out);
  check_shm(facts, out);
  check_gpus(facts, out);
  return out;
}

std::string nccl_network_from_log(const std::vector<std::string>& lines) {
  // "host:123:456 [0] NCCL INFO Using network IB" (2.19+: "Using network Socket",
  // a plugin's name such as "AWS Libfabric"); before that "NET/IB : Using
  // [0]mlx5_0:1/IB ..." or "NET/Socket : Using [0]eth0:10.0.0.1<0>".
  static const std::regex using_network(R"(NCCL INFO Using network (.+?)\s*$)");
  static const std::regex net_using(R"(NCCL INFO NET/(\w+) ?: Using )");
  std::string fallback;
  for (const auto& line : lines) {
    std::smatch m;
    if (std::regex_search(line, m, using_network)) return m[1];
    if (fallback.empty() && std::regex_search(line, m, net_using)) fallback = m[1];
  }
  return fallback;
}

std::vector<NodeFailure> check_nccl_network(const std::string& host, const std::string& network, bool allow_socket) {
  if (network != "Socket" || allow_socket) return {};
  return {{"NCCL network", host,
           "NCCL chose TCP sockets between the nodes (\"Using network Socket\"), not InfiniBand or RoCE: an "
           "all-reduce runs several times slower",
           "check the node's InfiniBand ports (ibstat; NCCL_IB_HCA must name an active one, NCCL_IB_DISABLE unset) "
           "and leave the node out, or allow TCP with --allow-socket-network",
           7, true}};
}

namespace {
constexpr char kField = '\x1f';
constexpr char kRecord = '\x1e';

std::vector<std::string> split_on(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (size_t end; (end = text.find(separator, begin)) != std::string::npos; begin = end + 1)
    parts.push_back(text.substr(begin, end - begin));
  parts.push_back(text.substr(begin));
  return parts;
}
}  // namespace

std::string encode_failures(const std::vector<NodeFailure>& failures) {
  std::string out;
  for (const auto& f : failures) {
    out += f.check + kField + f.host + kField + f.found + kField + f.fix + kField + std::to_string(f.exit_code) +
           kField + (f.node_at_fault ? "1" : "0") + kRecord;
  }
  return out;
}

std::vector<NodeFailure> decode_failures(const std::string& text) {
  std::vector<NodeFailure> out;
  for (const auto& record : split_on(text, kRecord)) {
    const auto f = split_on(record, kField);
    if (f.size() != 6) continue;
    out.push_back({f[0], f[1], f[2], f[3], std::atoi(f[4].c_str()), f[5] == "1"});
  }
  return out;
}

int node_checks_exit_code(const std::vector<NodeFailure>& failures) {
  if (failures.empty()) return kExitOk;
  for (const auto& f : failures)
    if (f.exit_code == kExitUsage) return kExitUsage;
  return kExitNodeCheck;
}

void agree_on_node_checks(MPI_Comm comm, const std::string& host,
                          const std::function<std::vector<NodeFailure>()>& probe, bool write_failed_nodes) {
  std::vector<NodeFailure> mine;
  try {
    mine = probe();
  } catch (const std::exception& e) {
    mine = {{"probe", host, std::string("the node checks could not run: ") + e.what(),
             "see the message; run cifar_mpi --check-env on the node", 7, false}};
  }
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const std::vector<std::string> gathered = gather_strings(comm, encode_failures(mine));
  int code = kExitOk;
  if (rank == 0) {
    std::vector<NodeFailure> all;
    std::set<std::string> seen;  // several ranks of one node find the same
    for (const auto& text : gathered) {
      for (auto& f : decode_failures(text))
        if (seen.insert(f.text()).second) all.push_back(std::move(f));
    }
    code = node_checks_exit_code(all);
    std::vector<std::string> nodes;
    for (const auto& f : all) {
      log::error("node check failed: " + f.text());
      if (f.node_at_fault && std::find(nodes.begin(), nodes.end(), f.host) == nodes.end()) nodes.push_back(f.host);
    }
    const char* file = std::getenv("CIFAR_FAILED_NODES_FILE");
    if (write_failed_nodes && file && *file && !nodes.empty()) {
      std::string lines;
      for (const auto& n : nodes) lines += n + "\n";
      try {
        write_file_atomically(file, std::vector<char>(lines.begin(), lines.end()));
      } catch (const Error& e) {
        log::error(std::string("cannot write the failed nodes for the job scripts: ") + e.what());
      }
    }
  }
  MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, 0, comm));
  if (code != kExitOk) throw AgreedFailure(code, rank == 0);
}

}  // namespace cifar
