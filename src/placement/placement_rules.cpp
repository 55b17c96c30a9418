// The placement rules of `cifar_mpi --check-env` (see placement_rules.hpp).
#include "placement/placement_rules.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <boost/algorithm/string/join.hpp>

#include "gpu/gpu_binding.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

using Warnings = std::vector<PlacementWarning>;
using Node = std::vector<const RankTopology*>;  // the ranks of one host, in rank order

void warn(Warnings& out, const RankTopology& t, std::string problem, std::string fix) {
  out.push_back(PlacementWarning{t.host, {t.rank}, std::move(problem), std::move(fix)});
}

// A launcher that did not bind leaves the rank on every CPU of the node.
bool is_unbound(const RankTopology& t) {
  return t.node_cpus > 0 && static_cast<int>(t.bound_cpus.size()) >= t.node_cpus;
}

int numa_node_of(const RankTopology& t, int cpu) {
  for (size_t n = 0; n < t.numa_cpus.size(); ++n)
    if (std::count(t.numa_cpus[n].begin(), t.numa_cpus[n].end(), cpu)) return static_cast<int>(n);
  return -1;
}

// Cores each rank gets when the node's CPUs are split evenly among its ranks.
int cores_per_rank(const RankTopology& t) { return std::max(1, t.node_cpus / std::max(1, t.local_size)); }

// How to give a rank `cores` cores of its own, in the words of its launcher.
std::string binding_fix(const RankTopology& t, int cores) {
  const std::string srun = strprintf("srun --cpus-per-task=%d --cpu-bind=cores", cores);
  const std::string mpirun = strprintf("mpirun --map-by slot:PE=%d --bind-to core", cores);
  if (t.launcher == Launcher::Srun) return srun;
  if (t.launcher == Launcher::Mpirun) return mpirun;
  return srun + ", or " + mpirun;
}

// ---- GPUs ----------------------------------------------------------------------

// Each rank takes cuda:<local rank>, so it must see as many of the node's GPUs
// as there are ranks on the node, unless each rank sees one GPU of its own
// (per-task binding: Slurm's --gpus-per-task=1 or --gpu-bind=single:1), which
// it takes as its cuda:0. Other per-task options hide GPUs through
// CUDA_VISIBLE_DEVICES and leave ranks without one.
void check_gpu_visibility(const Node& node, const RankTopology& t, Warnings& out) {
  if (!t.wants_gpu || t.node_gpus <= t.visible_gpus || t.visible_gpus >= t.local_size) return;
  std::vector<std::string> single_gpus;
  for (const RankTopology* r : node) single_gpus.push_back(r->single_gpu);
  if (static_cast<int>(node.size()) == t.local_size && gpu::one_gpu_per_rank(single_gpus)) return;
  const bool slurm = t.launcher == Launcher::Srun || !t.slurm_gpus_per_task.empty();
  // Without the value of CUDA_VISIBLE_DEVICES, which differs per rank: the
  // ranks of a node then share one warning.
  std::string why = t.cuda_visible_devices == "unset" ? "" : "CUDA_VISIBLE_DEVICES hides the others";
  if (!t.slurm_gpus_per_task.empty())
    why += (why.empty() ? "" : ", ") + std::string("srun --gpus-per-task=") + t.slurm_gpus_per_task;
  std::string problem = strprintf(
      "sees %d of the node's %d GPUs%s while %d ranks run on the node; each rank takes cuda:<local rank>, so every "
      "rank must see all of them (NCCL refuses the job, and GPUs a rank cannot see cannot be its NVLink peers)",
      t.visible_gpus, t.node_gpus, why.empty() ? "" : (" (" + why + ")").c_str(), t.local_size);
  std::string fix = slurm
                        ? strprintf(
                              "request GPUs per node: srun --gpus-per-node=%d --ntasks-per-node=%d --gpu-bind=none "
                              "instead of --gpus-per-task, or exactly one GPU of its own per task (--gpus-per-task=1), "
                              "and keep each rank near its GPU with --cpu-bind=cores",
                              t.node_gpus, t.local_size)
                        : strprintf(
                              "leave CUDA_VISIBLE_DEVICES unset, or give every rank of the node the same %d GPUs; "
                              "--device cpu trains on CPUs",
                              t.node_gpus);
  warn(out, t, std::move(problem), std::move(fix));
}

// Host-device copies and the data loader run on the rank's cores: cores on
// another NUMA node than the GPU send all of it across the socket link.
void check_gpu_numa(const RankTopology& t, Warnings& out) {
  if (t.gpu < 0 || t.gpu_numa < 0 || t.numa_cpus.size() < 2 || is_unbound(t)) return;
  if (t.gpu_numa >= static_cast<int>(t.numa_cpus.size())) return;
  std::set<int> nodes;
  for (int cpu : t.bound_cpus)
    if (numa_node_of(t, cpu) != t.gpu_numa) nodes.insert(numa_node_of(t, cpu));
  if (nodes.empty()) return;
  std::vector<std::string> names;
  for (int n : nodes) names.push_back(n < 0 ? "unknown" : std::to_string(n));
  const int numa_count = static_cast<int>(t.numa_cpus.size());
  const int ranks_per_numa = std::max(1, (t.local_size + numa_count - 1) / numa_count);
  const int cores = std::max(1, static_cast<int>(t.numa_cpus[t.gpu_numa].size()) / ranks_per_numa);
  warn(out, t,
       strprintf("computes on cuda:%d, attached to NUMA node %d (CPUs %s), but is bound to cores %s on NUMA "
                 "node(s) %s: its host-device copies and data loading cross the socket link",
                 t.gpu, t.gpu_numa, format_cpu_list(t.numa_cpus[t.gpu_numa]).c_str(),
                 format_cpu_list(t.bound_cpus).c_str(), boost::algorithm::join(names, ", ").c_str()),
       strprintf("bind ranks in GPU order, NUMA node by NUMA node: srun --cpu-bind=cores --distribution=block:block "
                 "--cpus-per-task=%d, or mpirun --map-by ppr:%d:numa:PE=%d --bind-to core "
                 "(nvidia-smi topo -m shows each GPU's CPU affinity)",
                 cores, ranks_per_numa, cores));
}

// ---- launcher -------------------------------------------------------------------

// Since Slurm 22.05 srun no longer takes --cpus-per-task from sbatch: without
// SRUN_CPUS_PER_TASK every rank gets one core while the job paid for more.
void check_srun_cpus(const RankTopology& t, Warnings& out) {
  const int bound = static_cast<int>(t.bound_cpus.size());
  if (t.launcher != Launcher::Srun || t.slurm_cpus_per_task <= bound || is_unbound(t)) return;
  warn(out, t,
       strprintf("srun bound it to %d core(s) (%s) though the job has --cpus-per-task=%d", bound,
                 format_cpu_list(t.bound_cpus).c_str(), t.slurm_cpus_per_task),
       strprintf("export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK before srun, or srun --cpus-per-task=%d "
                 "(since Slurm 22.05 srun does not inherit sbatch's --cpus-per-task; jobs/run_cifar.sh exports it)",
                 t.slurm_cpus_per_task));
}

// ---- NCCL's network settings ----------------------------------------------------------

// NCCL's list syntax, shared by NCCL_SOCKET_IFNAME and NCCL_IB_HCA: "^" first
// excludes the listed names, "=" makes them exact (otherwise each is a prefix).
struct NcclList {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> entries;
};

NcclList parse_nccl_list(std::string text) {
  NcclList list;
  list.exclude = !text.empty() && text[0] == '^';
  if (list.exclude) text.erase(0, 1);
  list.exact = !text.empty() && text[0] == '=';
  if (list.exact) text.erase(0, 1);
  std::istringstream in(text);
  std::string entry;
  while (std::getline(in, entry, ','))
    if (!entry.empty()) list.entries.push_back(entry);
  return list;
}

bool name_matches(const NcclList& list, const std::string& entry, const std::string& name) {
  return list.exact ? name == entry : name.compare(0, entry.size(), entry) == 0;
}

std::string first_not_loopback(const std::vector<std::string>& interfaces) {
  for (const auto& i : interfaces)
    if (i != "lo") return i;
  return "eth0";
}

void check_socket_ifname(const RankTopology& t, Warnings& out) {
  if (t.nccl_socket_ifname.empty() || t.interfaces.empty()) return;  // empty: /sys/class/net unreadable
  const NcclList list = parse_nccl_list(t.nccl_socket_ifname);
  const std::string have = boost::algorithm::join(t.interfaces, ", ");
  std::vector<std::string> unmatched;
  for (const auto& entry : list.entries) {
    bool found = false;
    for (const auto& i : t.interfaces) found = found || name_matches(list, entry, i);
    if (!found) unmatched.push_back(entry);
  }
  const std::string fix = strprintf(
      "name interfaces that exist (each name is a prefix; =name is exact), e.g. "
      "NCCL_SOCKET_IFNAME=%s, or unset it and let NCCL choose",
      first_not_loopback(t.interfaces).c_str());
  if (list.exclude) {
    bool all_excluded = true;
    for (const auto& i : t.interfaces) {
      bool excluded = false;
      for (const auto& entry : list.entries) excluded = excluded || name_matches(list, entry, i);
      all_excluded = all_excluded && excluded;
    }
    if (all_excluded)
      warn(out, t,
           strprintf("NCCL_SOCKET_IFNAME=%s excludes every network interface of this host (%s)",
                     t.nccl_socket_ifname.c_str(), have.c_str()),
           fix);
    return;
  }
  if (unmatched.empty()) return;
  warn(out, t,
       strprintf("NCCL_SOCKET_IFNAME=%s: no network interface here matches %s (interfaces: %s)%s",
                 t.nccl_socket_ifname.c_str(), boost::algorithm::join(unmatched, ", ").c_str(), have.c_str(),
                 unmatched.size() == list.entries.size() ? "; NCCL's bootstrap will find no interface and fail" : ""),
       fix);
}

// An NCCL_IB_HCA entry "name[:port]" matches an existing "device:port".
bool hca_entry_exists(const NcclList& list, const std::string& entry, const std::vector<std::string>& ports) {
  const auto colon = entry.find(':');
  const std::string device = entry.substr(0, colon);
  for (const auto& p : ports) {
    const std::string dev = p.substr(0, p.find(':'));
    if (!name_matches(list, device, dev)) continue;
    if (colon == std::string::npos || p.substr(p.find(':') + 1) == entry.substr(colon + 1)) return true;
  }
  return false;
}

void check_ib_hca(const RankTopology& t, Warnings& out) {
  if (t.nccl_ib_hca.empty()) return;
  const NcclList list = parse_nccl_list(t.nccl_ib_hca);
  if (list.exclude) return;  // excluding adapters (even all of them) is a valid way to keep NCCL off IB
  std::vector<std::string> unmatched;
  for (const auto& entry : list.entries)
    if (!hca_entry_exists(list, entry, t.ib_ports)) unmatched.push_back(entry);
  if (unmatched.empty()) return;
  const std::string problem =
      t.ib_ports.empty()
          ? strprintf(
                "NCCL_IB_HCA=%s names InfiniBand adapters, but this host has none (/sys/class/infiniband is "
                "empty: no InfiniBand/RoCE adapter, or no driver)",
                t.nccl_ib_hca.c_str())
          : strprintf("NCCL_IB_HCA=%s: no InfiniBand adapter port here matches %s (adapter:port here: %s)",
                      t.nccl_ib_hca.c_str(), boost::algorithm::join(unmatched, ", ").c_str(),
                      boost::algorithm::join(t.ib_ports, ", ").c_str());
  warn(out, t, problem,
       t.ib_ports.empty()
           ? std::string("unset NCCL_IB_HCA on hosts without InfiniBand; NCCL then uses TCP sockets (NET/Socket "
                         "in NCCL_DEBUG=INFO), far slower across nodes")
           : strprintf("name adapters that exist (a name is a prefix; =name:port is exact), e.g. NCCL_IB_HCA=%s, "
                       "or unset it and let NCCL use every adapter",
                       t.ib_ports.front().c_str()));
}

// ---- per node -------------------------------------------------------------------------

// Threads beyond the rank's share of its cores (ranks bound to identical cores
// split them) wait for each other at every parallel region.
void check_threads(const Node& node, const RankTopology& t, Warnings& out) {
  int same = 0;
  for (const RankTopology* other : node) same += other->bound_cpus == t.bound_cpus ? 1 : 0;
  const int bound = static_cast<int>(t.bound_cpus.size());
  const int share = std::max(1, bound / std::max(1, same));
  const std::string cores = same > 1 ? strprintf("%d core(s) %s shared by %d ranks, %d each", bound,
                                                 format_cpu_list(t.bound_cpus).c_str(), same, share)
                                     : strprintf("%d core(s) %s", bound, format_cpu_list(t.bound_cpus).c_str());
  if (t.intra_op_threads > share) {
    warn(out, t, strprintf("runs %d intra-op threads on %s", t.intra_op_threads, cores.c_str()),
         strprintf("use at most %d thread(s) per rank (--threads 0 picks it), or give each rank %d cores: %s", share,
                   t.intra_op_threads, binding_fix(t, t.intra_op_threads).c_str()));
  }
}

bool overlap(const std::vector<int>& a, const std::vector<int>& b) {
  for (int cpu : a)
    if (std::count(b.begin(), b.end(), cpu)) return true;
  return false;
}

// Bound ranks whose cores overlap compete for them (Open MPI binds to a whole
// socket above 2 ranks); unbound ranks are check_unbound's.
void check_shared_cores(const Node& node, Warnings& out) {
  std::vector<bool> grouped(node.size(), false);
  for (size_t i = 0; i < node.size(); ++i) {
    if (grouped[i] || is_unbound(*node[i])) continue;
    std::vector<size_t> group{i};
    grouped[i] = true;
    for (size_t g = 0; g < group.size(); ++g)  // grows while overlapping ranks are found
      for (size_t j = 0; j < node.size(); ++j)
        if (!grouped[j] && !is_unbound(*node[j]) && overlap(node[group[g]]->bound_cpus, node[j]->bound_cpus)) {
          grouped[j] = true;
          group.push_back(j);
        }
    if (group.size() < 2) continue;
    std::vector<int> ranks;
    std::vector<std::string> bindings;
    for (size_t k : group) {
      ranks.push_back(node[k]->rank);
      bindings.push_back(strprintf("rank %d: %s", node[k]->rank, format_cpu_list(node[k]->bound_cpus).c_str()));
    }
    const RankTopology& t = *node[i];
    out.push_back(PlacementWarning{
        t.host, ranks,
        "are bound to overlapping cores (" + boost::algorithm::join(bindings, "; ") + ") and compete for them",
        strprintf("give each rank its own cores: %s (Open MPI binds to a whole socket above 2 ranks)",
                  binding_fix(t, cores_per_rank(t)).c_str())});
  }
}

// Unbound ranks on a node with several NUMA nodes drift away from their
// memory (and GPU); on a single NUMA node the program's thread split suffices.
void check_unbound(const Node& node, Warnings& out) {
  for (const RankTopology* t : node) {
    if (!is_unbound(*t) || t->local_size < 2 || t->numa_cpus.size() < 2) continue;
    warn(out, *t,
         strprintf("is not bound to cores: it may run on all %d CPUs of the node's %zu NUMA nodes, so the kernel "
                   "moves its threads away from its memory%s",
                   t->node_cpus, t->numa_cpus.size(), t->gpu >= 0 ? " and its GPU" : ""),
         strprintf("bind each rank to %d cores of one NUMA node: %s, not --bind-to none", cores_per_rank(*t),
                   binding_fix(*t, cores_per_rank(*t)).c_str()));
  }
}

// More ranks than CPUs on a node: however they are bound, ranks wait for a
// core at every step, and each all-reduce waits for the slowest of them.
void check_oversubscribed(const Node& node, Warnings& out) {
  const RankTopology& t = *node.front();
  const int ranks = static_cast<int>(node.size());
  if (t.node_cpus <= 0 || ranks <= t.node_cpus) return;
  std::vector<int> all;
  for (const RankTopology* r : node) all.push_back(r->rank);
  out.push_back(PlacementWarning{
      t.host, all,
      strprintf("%d ranks run on a node with %d CPU core(s), so they take turns on them", ranks, t.node_cpus),
      strprintf("run at most %d rank(s) per node (%s), or spread the ranks over more nodes", t.node_cpus,
                t.launcher == Launcher::Srun     ? strprintf("srun --ntasks-per-node=%d", t.node_cpus).c_str()
                : t.launcher == Launcher::Mpirun ? strprintf("mpirun --map-by ppr:%d:node", t.node_cpus).c_str()
                                                 : strprintf("srun --ntasks-per-node=%d, or mpirun --map-by "
                                                             "ppr:%d:node",
                                                             t.node_cpus, t.node_cpus)
                                                       .c_str())});
}

// Identical (host, problem, fix) from several ranks become one warning.
Warnings merge(const Warnings& all) {
  Warnings merged;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
  for (const auto& w : all) {
    const auto key = std::make_tuple(w.host, w.problem, w.fix);
    const auto it = index.find(key);
    if (it == index.end()) {
      index.emplace(key, merged.size());
      merged.push_back(w);
    } else {
      auto& ranks = merged[it->second].ranks;
      ranks.insert(ranks.end(), w.ranks.begin(), w.ranks.end());
    }
  }
  for (auto& w : merged) std::sort(w.ranks.begin(), w.ranks.end());
  return merged;
}

}  // namespace

std::string PlacementWarning::text() const {
  return strprintf("host %s, rank%s %s: %s. Fix: %s", host.c_str(), ranks.size() > 1 ? "s" : "",
                   format_cpu_list(ranks).c_str(), problem.c_str(), fix.c_str());
}

std::vector<PlacementWarning> check_placement(const std::vector<RankTopology>& ranks) {
  std::vector<std::string> hosts;  // in order of their lowest rank
  std::map<std::string, Node> nodes;
  std::vector<const RankTopology*> by_rank;
  for (const auto& t : ranks) by_rank.push_back(&t);
  std::sort(by_rank.begin(), by_rank.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  for (const RankTopology* t : by_rank) {
    if (!nodes.count(t->host)) hosts.push_back(t->host);
    nodes[t->host].push_back(t);
  }
  Warnings all;
  for (const auto& host : hosts) {
    const Node& node = nodes[host];
    check_oversubscribed(node, all);
    check_shared_cores(node, all);
    check_unbound(node, all);
    for (const RankTopology* t : node) {
      check_gpu_visibility(node, *t, all);
      check_gpu_numa(*t, all);
      check_threads(node, *t, all);
      check_srun_cpus(*t, all);
      check_socket_ifname(*t, all);
      check_ib_hca(*t, all);
    }
  }
  Warnings merged = merge(all);
  std::stable_sort(merged.begin(), merged.end(), [&](const auto& a, const auto& b) {
    const auto ha = std::find(hosts.begin(), hosts.end(), a.host) - hosts.begin();
    const auto hb = std::find(hosts.begin(), hosts.end(), b.host) - hosts.begin();
    return ha != hb ? ha < hb : a.ranks.front() < b.ranks.front();
  });
  return merged;
}

// ---- CPU lists --------------------------------------------------------------------------

std::vector<int> parse_cpu_list(const std::string& text, const std::string& what) {
  std::vector<int> cpus;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) part.pop_back();
    if (part.empty()) continue;
    int first = -1, last = -1;
    char dash = 0, extra = 0;
    const int n = std::sscanf(part.c_str(), "%d%c%d%c", &first, &dash, &last, &extra);
    if (n == 1) last = first;
    if (!(n == 1 || (n == 3 && dash == '-')) || first < 0 || last < first)
      throw Error(
          strprintf("%s: '%s' is not a CPU list like 0-3,8 (at '%s')", what.c_str(), text.c_str(), part.c_str()));
    for (int c = first; c <= last; ++c) cpus.push_back(c);
  }
  return cpus;
}

std::string format_cpu_list(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string s;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(cpus[i]) + (j > i ? "-" + std::to_string(cpus[j]) : "");
    i = j + 1;
  }
  return s;
}

// ---- text form ----------------------------------------------------------------------------
namespace {

constexpr const char* kLaunchers[] = {"unknown", "mpirun", "srun"};

// Every field of RankTopology with its key, for encode() and decode().
template <typename T, typename Visitor>
void visit_fields(T& t, Visitor&& v) {
  v("rank", t.rank);
  v("local_rank", t.local_rank);
  v("local_size", t.local_size);
  v("host", t.host);
  v("bound_cpus", t.bound_cpus);
  v("node_cpus", t.node_cpus);
  v("numa_cpus", t.numa_cpus);
  v("intra_op_threads", t.intra_op_threads);
  v("wants_gpu", t.wants_gpu);
  v("visible_gpus", t.visible_gpus);
  v("single_gpu", t.single_gpu);
  v("node_gpus", t.node_gpus);
  v("gpu", t.gpu);
  v("gpu_numa", t.gpu_numa);
  v("cuda_visible_devices", t.cuda_visible_devices);
  v("nccl_socket_ifname", t.nccl_socket_ifname);
  v("nccl_ib_hca", t.nccl_ib_hca);
  v("interfaces", t.interfaces);
  v("ib_ports", t.ib_ports);
  v("launcher", t.launcher);
  v("slurm_cpus_per_task", t.slurm_cpus_per_task);
  v("slurm_gpus_per_task", t.slurm_gpus_per_task);
}

std::string to_text(int v) { return std::to_string(v); }
std::string to_text(bool v) { return v ? "1" : "0"; }
std::string to_text(const std::string& v) { return v; }
std::string to_text(const std::vector<int>& v) { return format_cpu_list(v); }
std::string to_text(const std::vector<std::string>& v) { return boost::algorithm::join(v, ","); }
std::string to_text(Launcher v) { return kLaunchers[static_cast<int>(v)]; }
std::string to_text(const std::vector<std::vector<int>>& v) {
  std::vector<std::string> lists;
  for (const auto& cpus : v) lists.push_back(format_cpu_list(cpus));
  return boost::algorithm::join(lists, ";");
}

// Every part, empty ones included ("0-3;" is two NUMA nodes, the second
// without CPUs); none for "".
std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  if (text.empty()) return parts;
  size_t start = 0;
  for (size_t end; (end = text.find(separator, start)) != std::string::npos; start = end + 1)
    parts.push_back(text.substr(start, end - start));
  parts.push_back(text.substr(start));
  return parts;
}

void from_text(const std::string& s, int& v) { v = std::stoi(s); }
void from_text(const std::string& s, bool& v) { v = s == "1"; }
void from_text(const std::string& s, std::string& v) { v = s; }
void from_text(const std::string& s, std::vector<int>& v) { v = parse_cpu_list(s); }
void from_text(const std::string& s, std::vector<std::string>& v) { v = split(s, ','); }
void from_text(const std::string& s, Launcher& v) {
  for (int i = 0; i < 3; ++i)
    if (s == kLaunchers[i]) v = static_cast<Launcher>(i);
}
void from_text(const std::string& s, std::vector<std::vector<int>>& v) {
  v.clear();
  for (const auto& list : split(s, ';')) v.push_back(parse_cpu_list(list));
}

}  // namespace

std::string encode(const RankTopology& t) {
  std::string out;
  visit_fields(t, [&](const char* key, const auto& field) {
    std::string value = to_text(field);
    std::replace(value.begin(), value.end(), '\n', ' ');  // one line per field, whatever the environment held
    out += std::string(key) + "=" + value + "\n";
  });
  return out;
}

RankTopology decode_rank_topology(const std::string& text) {
  std::map<std::string, std::string> values;
  for (const auto& line : split(text, '\n')) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  RankTopology t;
  visit_fields(t, [&](const char* key, auto& field) {
    const auto it = values.find(key);
    if (it == values.end())
      throw Error(std::string("placement report without '") + key + "': do all ranks run the same build?");
    from_text(it->second, field);
  });
  return t;
}

}  // namespace cifar
