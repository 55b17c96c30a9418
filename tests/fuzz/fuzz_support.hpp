// Shared pieces of the libFuzzer harnesses (tests/fuzz, docs/dev/fuzzing.md): a
// private scratch folder for the readers that take paths, and the seed writer
// each harness provides.
//
// Each harness defines LLVMFuzzerTestOneInput and cifar::fuzz::write_seeds().
// Started with CIFAR_FUZZ_WRITE_SEEDS=DIR in the environment, a harness writes
// its seed inputs into DIR (made by the project's own writers) and exits; the
// seed corpora in tests/fuzz/corpus/ were made that way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cifar::fuzz {

// The harness's own seeds, written as files into `dir` (which exists).
void write_seeds(const std::string& dir);

// A folder of this process's own under /dev/shm (memory, when writable) or
// $TMPDIR, made on first use and removed at exit. The readers under test take
// paths, so every input is written here first.
const std::string& scratch_dir();
// Writes bytes to scratch_dir()/name (replacing it) and returns the path.
std::string write_scratch_file(const std::string& name, const void* data, size_t size);
// Empties scratch_dir(): every input starts from nothing.
void clear_scratch();

// Writes bytes to `path`; throws std::runtime_error on failure (seed writing).
void write_file(const std::string& path, const void* data, size_t size);
inline void write_file(const std::string& path, const std::string& bytes) {
  write_file(path, bytes.data(), bytes.size());
}

}  // namespace cifar::fuzz
