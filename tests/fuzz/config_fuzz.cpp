// Fuzz harness: the command line and the INI file (parse_config).
//
// Input: command-line arguments, one per line, then optionally a NUL byte and
// the text of an INI file, which the harness writes to its scratch folder and
// names with a final `--config PATH`. The contract under test: parse_config
// returns a validated RunConfig or throws ConfigError; any other exception,
// crash or sanitizer report is a bug.
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "app/registries.hpp"
#include "config/run_config.hpp"
#include "fuzz_support.hpp"
#include "util/error.hpp"

namespace cifar::fuzz {

void write_seeds(const std::string& dir) {
  // The repository's own config files, each as the INI part after an empty command line.
  for (const char* name : {"default.ini", "smoke.ini", "resnet18.ini", "speed94.ini"}) {
    std::ifstream in(std::string(CIFAR_CONFIG_DIR) + "/" + name, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().empty()) throw std::runtime_error(std::string("fuzz: cannot read config/") + name);
    write_file(dir + "/ini-" + name, std::string("\0", 1) + text.str());
  }
  const std::string seeds[][2] = {
      {"cli-recipe",
       "--epochs\n2\n--batch-size=64\n--lr\n0.01\n--optimizer\nsgd\n--nesterov\ntrue\n--schedule\nonecycle"},
      {"cli-everything",
       "--data=x.h5\n--model\nresnet18\n--augment\ntrue\n--flip\nalternating\n--crop-padding\nreflect\n"
       "--precision\nbf16\n--tta\nmirror\n--checkpoint-dir\nck\n--resume\nauto\n--global-batch-size\n512\n"
       "--accumulate\n2\n--label-smoothing\n0.2\n--target-accuracy\n0.9\n--comm-timeout\n30\n"
       "--bucket-mb\n4\n--first-bucket-mb\n0.5\n--blas-threads\n-1\n--loader-threads\n0\n--metrics="},
      {"cli-help", "--help"},
      {"cli-check-env", "--check-env\n--backend\nmpi"},
      {"cli-and-ini", std::string("--epochs\n3\n", 11) + '\0' +
                          "# sections\n[data]\ndata = data/synthetic.h5\nshuffle = false\n[training]\nbatch-size = 8\n"
                          "epochs = 5\n[optim]\nlr = 0.5\nwarmup-epochs = 0.5\n[output]\nmetrics =\nlog-every = 1\n"},
      {"ini-bad-section", std::string("\0", 1) + "[train\nbatch-size = 8\n"},
  };
  for (const auto& [name, bytes] : seeds) write_file(dir + "/" + name, bytes);
}

}  // namespace cifar::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* begin = reinterpret_cast<const char*>(data);
  const char* nul = static_cast<const char*>(std::memchr(begin, '\0', size));
  const std::string command_line(begin, nul ? nul : begin + size);

  std::vector<std::string> args = {"cifar_mpi"};
  std::istringstream lines(command_line);
  for (std::string line; std::getline(lines, line);) args.push_back(line);
  if (nul) {
    args.push_back("--config");
    args.push_back(cifar::fuzz::write_scratch_file("fuzz.ini", nul + 1, size - static_cast<size_t>(nul + 1 - begin)));
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);

  try {
    const cifar::RunConfig config =
        cifar::parse_config(static_cast<int>(args.size()), argv.data(), cifar::registered_names());
    // What a run prints and stores in its checkpoints.
    const auto lines_out = config.describe();
    if (lines_out.empty()) __builtin_trap();
  } catch (const cifar::ConfigError&) {
    // The documented failure: one message, exit code 2.
  }
  return 0;
}
