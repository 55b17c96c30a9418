// cifar_pack: packs CIFAR-10 into the cifar_mpi HDF5 schema.
//   cifar_pack --input cifar-10-binary.tar.gz --output cifar10.h5      (archive or extracted folder)
//   cifar_pack --synthetic 5000 --test-count 1000 --seed 1 --output synth.h5
//   cifar_pack --synthetic-binary DIR_OR.tar.gz --seed 1              (official layout, 50000/10000)
// Exit codes: 0 ok, 1 I/O failure, 2 bad command line (also an output that
// would replace the input, a run's file or a file of another kind), 6 bad input data.
#include <boost/program_options.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "data/cifar_schema.hpp"
#include "data/packed_header.hpp"
#include "outputs/output_policy.hpp"
#include "pack/cifar_binary.hpp"
#include "pack/packer.hpp"
#include "pack/synthetic.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/memory.hpp"
#include "util/paths.hpp"

namespace po = boost::program_options;
using namespace cifar;

namespace {

// What --output writes: a file that begins with its checksum header.
const OutputFileKind kPackedFile{"data file packed by cifar_pack", packed_header::kMagic};
// What --synthetic-binary ARCHIVE writes: a gzip stream.
const OutputFileKind kBinaryArchive{"gzip archive", "\x1f\x8b"};

void print_summary(const PackSummary& s, const std::string& output, double seconds) {
  std::printf("wrote %s in %.2f s\n", output.c_str(), seconds);
  std::printf("source: %s, md5 %s (%s)\n  %s\n", s.source.kind.c_str(), s.source.md5.c_str(), s.source.md5_of.c_str(),
              s.source.note.c_str());
  auto split_line = [](const char* name, int64_t n, const std::array<int64_t, 10>& classes, const ChannelStats& st) {
    std::printf("%s: %lld images; per class", name, static_cast<long long>(n));
    for (int64_t c : classes) std::printf(" %lld", static_cast<long long>(c));
    std::printf("\n  pixel sums R G B: %llu %llu %llu\n  mean %.4f %.4f %.4f  std %.4f %.4f %.4f\n",
                static_cast<unsigned long long>(st.pixel_sum[0]), static_cast<unsigned long long>(st.pixel_sum[1]),
                static_cast<unsigned long long>(st.pixel_sum[2]), st.mean[0], st.mean[1], st.mean[2], st.std[0],
                st.std[1], st.std[2]);
  };
  split_line("train", s.train_count, s.train_classes, s.train_stats);
  split_line("test", s.test_count, s.test_classes, s.test_stats);
}

// Counts from the command line, checked before anything is allocated for
// them: both splits need samples, and all of them must fit in memory.
void check_synthetic_counts(int64_t train, int64_t test) {
  CIFAR_CHECK(train >= 1 && test >= 1, ConfigError,
              strprintf("cifar_pack: --synthetic and --test-count must be at least 1 (got %lld and %lld)",
                        static_cast<long long>(train), static_cast<long long>(test)));
  const int64_t limit = physical_memory_bytes() / schema::kRecordBytes;
  CIFAR_CHECK(train <= limit && test <= limit - train, ConfigError,
              strprintf("cifar_pack: %lld + %lld synthetic samples do not fit in this machine's memory (at most %lld)",
                        static_cast<long long>(train), static_cast<long long>(test), static_cast<long long>(limit)));
}

int run(int argc, char** argv) {
  std::string input, output, synthetic_binary;
  int64_t synthetic = 0, test_count = 10000;
  uint64_t seed = 0;
  int gzip = 0;
  po::options_description opts("cifar_pack options");
  opts.add_options()("help,h", "show this help")("input,i", po::value(&input),
                                                 "cifar-10-binary.tar.gz or its extracted cifar-10-batches-bin folder")(
      "output,o", po::value(&output), "HDF5 file to write (written atomically)")(
      "gzip", po::value(&gzip)->default_value(0), "deflate level 0..9 (0: none; Fletcher32 is always on)")(
      "synthetic", po::value(&synthetic), "write N synthetic training samples instead of reading --input")(
      "test-count", po::value(&test_count)->default_value(10000), "synthetic test samples")(
      "seed", po::value(&seed)->default_value(0), "seed of the synthetic data")(
      "synthetic-binary", po::value(&synthetic_binary),
      "write 50000/10000 synthetic samples in the official binary layout: a .tar.gz archive or a folder");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(std::string("cifar_pack: ") + e.what() + " (see --help)");
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return kExitOk;
  }
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const int modes = !input.empty() + vm.count("synthetic") + !synthetic_binary.empty();
  CIFAR_CHECK(modes == 1, ConfigError, "cifar_pack: give exactly one of --input, --synthetic, --synthetic-binary");
  if (vm.count("synthetic")) check_synthetic_counts(synthetic, test_count);
  if (!synthetic_binary.empty()) {
    // An archive is one file, under the rules of every program's outputs;
    // a folder gets its own cifar-10-batches-bin inside.
    const std::string replaced =
        is_binary_archive_name(synthetic_binary)
            ? check_tool_output("cifar_pack", {"synthetic-binary", synthetic_binary}, kBinaryArchive, {})
            : check_binary_folder_output(synthetic_binary);
    write_cifar10_binary(make_synthetic_cifar(5 * schema::kRecordsPerBatch, schema::kRecordsPerBatch, seed),
                         synthetic_binary);
    std::printf("wrote synthetic CIFAR-10 binary layout to %s in %.2f s\n", synthetic_binary.c_str(), elapsed());
    if (!replaced.empty()) std::printf("%s\n", replaced.c_str());
    return kExitOk;
  }
  CIFAR_CHECK(!output.empty(), ConfigError, "cifar_pack: --output FILE.h5 is required");
  // Before the input is read: an output that cannot be written, or that
  // would replace the input, a run's file or a file of another kind, fails
  // in one line (the rules of every program's outputs).
  const std::string replaced = check_tool_output("cifar_pack", {"output", output}, kPackedFile, {{"input", input}});
  const H5WriteOptions options{gzip};
  const PackSummary summary = vm.count("synthetic")
                                  ? pack_cifar_data(make_synthetic_cifar(synthetic, test_count, seed), output, options)
                                  : pack_cifar10(input, output, options);
  if (summary.source.kind == "archive") {
    std::fprintf(stderr,
                 "note: %s is not the official CIFAR-10 archive (md5 %s, official %s); accepted after the "
                 "structure check\n",
                 input.c_str(), summary.source.md5.c_str(), schema::kOfficialArchiveMd5);
  }
  print_summary(summary, output, elapsed());
  if (!replaced.empty()) std::printf("%s\n", replaced.c_str());
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "cifar_pack: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cifar_pack: error: %s\n", e.what());
    return kExitFailure;
  }
}
