// The official CIFAR-10 binary release layout (cifar-10-batches-bin/:
// data_batch_1..5.bin, test_batch.bin, batches.meta.txt; each record is one
// label byte and 3072 image bytes in R, G, B planes): reading it from the
// .tar.gz archive (libarchive, one streaming pass that also computes the
// archive's md5) or from the extracted folder, and writing it (tests generate
// archives to pack).
#pragma once

#include <string>

#include "data/cifar_data.hpp"

namespace cifar {

// `input` is the archive (.tar.gz, .tgz or .tar) or a folder: the
// cifar-10-batches-bin folder itself or one that contains it. Checks the
// structure (six .bin files of exactly 30,730,000 bytes, labels 0..9) and
// fills data.source: an archive whose md5 is the official one is
// "official-archive"; any other is "archive" with a note saying it is not the
// official release. Throws DataError naming the input and the file inside it.
CifarData read_cifar10_binary(const std::string& input);

// Writes `data` (50,000 train and 10,000 test samples) in the official layout:
// an archive when `output` ends in .tar.gz or .tgz (gzip level 1), otherwise
// the folder `output`/cifar-10-batches-bin. Each file is published atomically.
void write_cifar10_binary(const CifarData& data, const std::string& output);
// Whether write_cifar10_binary writes `output` as an archive (.tar.gz, .tgz).
bool is_binary_archive_name(const std::string& output);

// The folder form's output rule (an archive is one file, under
// outputs/output_policy.hpp): `output`/cifar-10-batches-bin is written only
// where it is absent, empty, or cifar_pack's own earlier synthetic layout
// (the marker file write_cifar10_binary leaves there), never over the real
// CIFAR-10 batches or anything else. Throws ConfigError (exit code 2) naming
// the folder; returns the line to print when an earlier synthetic layout is
// replaced, else "".
std::string check_binary_folder_output(const std::string& output);

}  // namespace cifar
