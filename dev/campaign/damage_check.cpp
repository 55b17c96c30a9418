// damage_check: the content-damage campaign's reader (dev/campaign/
// damage_campaign.sh). Makes COUNT damaged copies of a clean file -- each with
// 1 to 4 bytes changed at uniformly random offsets -- writes each to a
// scratch file and reads it through the program's own reader, the one
// training and cifar_eval use:
//   checkpoint  read_checkpoint (--resume)
//   model       load_state_dict into a --model (cifar_eval, compare_models)
//   h5          load_dataset, both splits (training, --check-env, cifar_eval)
// Each copy is refused (the reader threw the documented error), or accepted
// and proven harmless (what was loaded is bitwise what the clean file loads:
// the changed bytes were in zip padding, an ignored header field, ...), or
// ACCEPTED-HARMFUL. Another exception is counted apart (a bug, as harmful).
// Prints one summary line per outcome (tab-separated, to stdout) and keeps
// every harmful copy in --keep DIR for replay.
//
//   damage_check KIND CLEAN COUNT SEED [--model convnet] [--keep DIR]
//   damage_check cost CHECKPOINT   what verifying costs next to reading:
//                                  milliseconds (median of 15) of the CRC-32s
//                                  alone, of check_torch_archive (structure,
//                                  CRC-32s, pickles) and of read_checkpoint
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/format.hpp"
#include "data/dataset.hpp"
#include "integrity/torch_archive.hpp"
#include "model/model.hpp"
#include "outputs/model_file.hpp"
#include "util/crc32.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

using namespace cifar;

namespace {

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_all(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// A tensor's bytes (contiguous CPU copy), for a bitwise comparison: NaNs
// compare as their bits, -0 and 0 differ.
std::string bits(const at::Tensor& t) {
  if (!t.defined()) return "<undefined>";
  const at::Tensor c = t.detach().to(torch::kCPU).contiguous();
  std::string s(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * c.element_size());
  std::ostringstream shape;
  shape << c.sizes() << c.scalar_type();
  return shape.str() + s;
}

// What a reader loaded, as one byte string: equal strings, equal loads.
using Loader = std::function<std::string(const std::string&)>;

Loader loader_for(const std::string& kind, const std::string& model_name) {
  if (kind == "checkpoint")  // everything read, encoded again by the writer (deterministic)
    return [](const std::string& path) {
      const std::vector<char> b = encode_checkpoint(read_checkpoint(path));
      return std::string(b.begin(), b.end());
    };
  if (kind == "model")
    return [model_name](const std::string& path) {
      const auto model = make_model(model_name);
      load_state_dict(*model, path);
      std::string s;
      for (const auto& [name, t] : state_entries(*model)) s += name + "=" + bits(t) + ";";
      return s;
    };
  if (kind == "h5")
    return [](const std::string& path) {
      DataConfig config;
      config.path = path;
      const Dataset d = load_dataset(config, SplitRequest{true, true});
      std::string s = d.identity + "|";
      for (int c = 0; c < 3; ++c)
        s += std::to_string(d.normalization.mean[c]) + "/" + std::to_string(d.normalization.std[c]) + ",";
      for (const Split* split : {&d.train, &d.test}) {
        s += split->name + bits(split->images) + bits(split->labels);
        for (const auto& c : split->class_names) s += c + ",";
      }
      return s;
    };
  throw std::runtime_error("unknown kind '" + kind + "' (checkpoint, model or h5)");
}

// A refusal's kind, for the table: its message with the path, quoted names,
// hex digests and numbers taken out, cut short.
std::string shape_of(std::string m, const std::string& path) {
  for (size_t at; (at = m.find(path)) != std::string::npos;) m.replace(at, path.size(), "F");
  m = std::regex_replace(m, std::regex("'[^']*'"), "''");
  m = std::regex_replace(m, std::regex("\\b[0-9a-f]{8,}\\b"), "#");
  m = std::regex_replace(m, std::regex("[0-9][0-9,]*"), "#");
  return m.substr(0, 120);
}

template <typename F>
double median_ms(F&& f) {
  std::vector<double> ms;
  for (int i = 0; i < 15; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    ms.push_back(1000 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int cost(const std::string& path) {
  const std::vector<char> b = read_all(path);
  volatile uint32_t sink = 0;
  const double crc = median_ms([&] { sink = sink + crc32(b.data(), b.size()); });
  const double check = median_ms([&] { check_torch_archive(b.data(), b.size()); });
  const double read = median_ms([&] { read_checkpoint(path); });
  std::printf(
      "%s: %zu bytes; CRC-32 of all bytes %.2f ms (%.2f GB/s); check_torch_archive %.2f ms; "
      "read_checkpoint (with its checks) %.2f ms: the check is %.0f%% of the read\n",
      path.c_str(), b.size(), crc, b.size() / crc / 1e6, check, read, 100 * check / read);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "cost") return cost(argv[2]);
  if (argc < 5) {
    std::fprintf(stderr, "usage: damage_check KIND CLEAN COUNT SEED [--model NAME] [--keep DIR]\n");
    return 2;
  }
  const std::string kind = argv[1], clean_path = argv[2];
  const long count = std::stol(argv[3]);
  const unsigned seed = static_cast<unsigned>(std::stoul(argv[4]));
  std::string model_name = "convnet", keep;
  for (int i = 5; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--model") model_name = argv[i + 1];
    else if (std::string(argv[i]) == "--keep") keep = argv[i + 1];
  }
  try {
    const Loader load = loader_for(kind, model_name);
    const std::vector<char> clean = read_all(clean_path);
    const std::string reference = load(clean_path);  // the clean file loads
    const std::string scratch = paths::make_temp_directory("damage_check");
    const std::string ext = clean_path.substr(clean_path.rfind('.'));
    const std::string path = paths::join(scratch, "damaged" + ext);
    std::mt19937_64 rng(seed);
    std::map<std::string, long> refused_by;  // message shape -> count
    long refused = 0, harmless = 0, harmful = 0, other = 0;
    double seconds = 0;
    for (long i = 0; i < count; ++i) {
      std::vector<char> b = clean;
      const int changes = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < changes; ++k) b[rng() % b.size()] ^= static_cast<char>(1 + rng() % 255);  // a different byte
      if (b == clean) {
        --i;
        continue;
      }  // two changes cancelled out: not a damaged file
      write_all(path, b);
      const auto start = std::chrono::steady_clock::now();
      try {
        const std::string got = load(path);
        if (got == reference) ++harmless;
        else {
          ++harmful;
          if (!keep.empty()) write_all(paths::join(keep, kind + "-harmful-" + std::to_string(i) + ext), b);
        }
      } catch (const Error& e) {  // CheckpointError, DataError: the documented refusals
        ++refused;
        ++refused_by[shape_of(e.what(), path)];
      } catch (const std::exception& e) {
        ++other;
        std::fprintf(stderr, "copy %ld: %s\n", i, e.what());
        if (!keep.empty()) write_all(paths::join(keep, kind + "-other-" + std::to_string(i) + ext), b);
      }
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    paths::remove_all(scratch);
    std::printf(
        "%s\t%zu bytes\t%ld files\trefused %ld\taccepted-harmless %ld\tACCEPTED-HARMFUL %ld\tother-exception %ld"
        "\tread %.1f ms/file\n",
        kind.c_str(), clean.size(), count, refused, harmless, harmful, other, 1000 * seconds / count);
    for (const auto& [shape, n] : refused_by) std::printf("  %-6ld %s\n", n, shape.c_str());
    return harmful + other == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "damage_check: %s\n", e.what());
    return 2;
  }
}
