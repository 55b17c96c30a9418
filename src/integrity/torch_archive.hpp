// Reading torch zip archives (checkpoints, model files, optimiser states)
// safely: their sizes checked before LibTorch 1.13 reads them, and a reader
// that never reads past the end.
//
// LibTorch's readers allocate whatever the bytes claim before reading them:
// the zip reader (PyTorchStreamReader::getRecord) mallocs an entry's
// uncompressed size, from the central directory or its zip64 extra field; the
// unpickler reserves a string of the length a BINUNICODE claims, grows its memo
// table to the index a BINPUT/LONG_BINPUT names (16 bytes per entry: a LONG_BINPUT
// of 0x76696863 asked for 31.8 GB, a checkpoint fuzz finding), and reads a
// storage's record once per persistent id while sizing the storage from the
// element count the pickle gives. A damaged checkpoint or model file then makes
// the program die on bad_alloc, thrash the node's memory, or read past a
// record.
//
// check_torch_archive() walks the zip as miniz does, checks every entry's
// bytes against the CRC-32 its writer recorded (LibTorch's miniz is built
// without that check, so a damaged tensor loaded as it was), and walks every
// pickle in it
// (every entry whose name ends in "pkl") as LibTorch's unpickler does, and
// refuses any size that no torch writer produces:
//  - the end-of-central-directory records (zip64 included) and every central
//    directory entry lie within the file; each entry is stored (its two sizes
//    equal) or deflated (at most 1032 x its compressed size, deflate's limit),
//    its local header and data lie before the central directory and overlap no
//    other entry's; no two names are equal (miniz looks names up ignoring case);
//  - every entry's uncompressed bytes have the CRC-32 the central directory
//    records for them (a deflated entry is inflated to check it), else
//    DamagedArchiveError naming the entry;
//  - every pickle is stored, begins with PROTO 2, ends with STOP, and every
//    opcode is one LibTorch reads, with its argument inside the pickle: string
//    lengths within the bytes left, memo indices at most the number of entries
//    stored before (both writers number them 0, 1, 2, ...), gets of stored
//    entries only, pops never below the stack's bottom or the last mark;
//  - every storage a pickle loads (BINPERSID) names its element type, a record
//    that exists, and an element count whose bytes fit that record; all
//    storages loaded together read no more than the archive's records hold.
// It allocates at most a few times the archive's own size.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cifar {

// How a file whose zip entry fails its CRC-32 is named (checkpoints and model
// files alike): "checkpoint 'PATH' is damaged (...): zip entry ...".
inline constexpr const char* kDamagedFile = "is damaged (changed after it was written)";

// What is wrong with an archive, naming the entry (and byte offset) concerned.
class ArchiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An entry whose bytes do not match the CRC-32 its writer recorded: the file
// was changed after it was written (a damaged disk, a partial copy, an edit).
class DamagedArchiveError : public ArchiveError {
 public:
  DamagedArchiveError(std::string entry, const std::string& what) : ArchiveError(what), entry_(std::move(entry)) {}
  const std::string& entry() const { return entry_; }  // "archive/data/3"

 private:
  std::string entry_;
};

// Throws ArchiveError when `size` bytes at `data` are not a zip archive whose
// sizes a torch writer could have written (above); returns otherwise.
void check_torch_archive(const char* data, size_t size);

// Throws ArchiveError unless every source file ("*.py") of the TorchScript
// archive at `data` (already through check_torch_archive) is one that torch
// writes for a module holding only attributes, as torch::serialize::
// OutputArchive's modules do (an optimiser's state): a "class X(Module):"
// line, the parameter and buffer lists, "name : Type" and
// '__annotations__["name"] = Type' lines, with Type a scalar, Tensor, a
// List/Optional/Dict/Tuple of those or a __torch__ class. LibTorch 1.13
// compiles these files when it loads the archive, and its compiler crashed on
// damaged ones: a class-level "__annotations_ = []" (a constant without a
// type) made ScriptTypeParser::parseClassConstant read through a null
// pointer (SEGV; a checkpoint fuzz finding).
void check_module_sources(const char* data, size_t size);

// torch::pickle_load's result for pickle_save's zip layout (checkpoints, model
// files): the pickle "data.pkl" and its tensors, read without LibTorch 1.13's
// unchecked reads. pickle_load hands its bytes to the zip reader through an
// adapter that copies whatever range the reader asks for, and a damaged zip
// directory made it read past the buffer (a heap-buffer-overflow found by the
// checkpoint fuzz harness, tests/fuzz/regression/checkpoint); this reads
// through an adapter that never reads past the end, so a short read makes the
// zip reader fail with a c10::Error instead, after check_torch_archive().
// Throws ArchiveError, c10::Error and, from LibTorch's parsers, other
// std::exceptions on a damaged file.
c10::IValue unpickle_zip(const std::vector<char>& bytes);

}  // namespace cifar
