// The start-up sequence (see startup.hpp): its stages, in order, and the
// agreement each runs under.
#include "train/startup.hpp"

#include "comm/agreement.hpp"
#include "process/startup_deadline.hpp"

namespace cifar {
namespace {

enum class Agreement { Agreed, NodeChecks, Own };

struct Stage {
  StartupStage stage;
  const char* name;
  Agreement agreement;
  void (StartupWalk::*run)() = nullptr;                        // Agreed, Own
  std::vector<NodeFailure> (StartupWalk::*probe)() = nullptr;  // NodeChecks
};

// The one list, in order.
const std::vector<Stage>& stages() {
  using S = StartupStage;
  using W = StartupWalk;
  static const std::vector<Stage> list = {
      {S::Configuration, "configuration", Agreement::Agreed, &W::configuration},
      {S::NodeLaunch, "node launch", Agreement::NodeChecks, nullptr, &W::node_launch},
      {S::Device, "device", Agreement::Agreed, &W::device},
      {S::Outputs, "outputs", Agreement::Agreed, &W::outputs},
      {S::Data, "data", Agreement::Agreed, &W::data},
      {S::Model, "model", Agreement::Own, &W::model},
      {S::NodeResources, "node resources", Agreement::NodeChecks, nullptr, &W::node_resources},
      {S::Communication, "communication", Agreement::Own, &W::communication},
      {S::Resume, "resume", Agreement::Own, &W::resume},
  };
  return list;
}

}  // namespace

const char* stage_name(StartupStage stage) {
  for (const Stage& s : stages())
    if (s.stage == stage) return s.name;
  return "?";
}

std::string startup_stage_list() {
  std::string list;
  for (const Stage& s : stages()) list += (list.empty() ? "" : ", ") + std::string(s.name);
  return list;
}

void walk_startup(MPI_Comm comm, const std::string& host, StartupWalk& walk, bool write_failed_nodes,
                  StartupStage last) {
  for (const Stage& s : stages()) {
    walk.stage_ = s.stage;
    enter_startup_stage(s.name, s.agreement == Agreement::Own ? StageMeeting::Inside : StageMeeting::AtItsEnd);
    switch (s.agreement) {
      case Agreement::Agreed:
        agree_on_startup(comm, [&] {
          (walk.*s.run)();
          wait_for_other_ranks();
        });
        break;
      case Agreement::NodeChecks:
        agree_on_node_checks(
            comm, host,
            [&] {
              auto failures = (walk.*s.probe)();
              wait_for_other_ranks();
              return failures;
            },
            write_failed_nodes);
        break;
      case Agreement::Own: (walk.*s.run)(); break;
    }
    if (s.stage == last) return;
  }
}

}  // namespace cifar
