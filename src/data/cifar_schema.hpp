// The cifar_mpi HDF5 schema (version 1) and the official binary release's
// layout, shared by the packer, the reader and the tests; the task's own
// constants (image shape, classes) come from util/cifar10.hpp. docs/data.md
// describes the same schema for users; change both together and bump
// kSchemaVersion.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "util/cifar10.hpp"

namespace cifar::schema {

inline constexpr int kSchemaVersion = 1;

using cifar10::default_class_names;
using cifar10::kChannels;
using cifar10::kHeight;
using cifar10::kImageBytes;
using cifar10::kNumClasses;
using cifar10::kPlaneBytes;
using cifar10::kWidth;

// Splits, each a group holding `images` uint8 [N,3,32,32] and `labels` uint8 [N].
inline constexpr const char* kTrain = "train";
inline constexpr const char* kTest = "test";
inline const std::array<std::string, 2> kSplits = {kTrain, kTest};
inline std::string images_path(const std::string& split) { return "/" + split + "/images"; }
inline std::string labels_path(const std::string& split) { return "/" + split + "/labels"; }

// Root attributes.
inline constexpr const char* kAttrSchemaVersion = "schema_version";  // int32
inline constexpr const char* kAttrClassNames = "class_names";        // string[10]
inline constexpr const char* kAttrSourceMd5 = "source_md5";          // string, 32 hex digits
inline constexpr const char* kAttrSourceMd5Of = "source_md5_of";     // string: what was hashed
inline constexpr const char* kAttrSourceKind = "source_kind";        // string, see SourceKind
inline constexpr const char* kAttrSourceNote = "source_note";        // string, human-readable
// Split-group attributes.
inline constexpr const char* kAttrCount = "count";               // int64
inline constexpr const char* kAttrClassCounts = "class_counts";  // int64[10]
inline constexpr const char* kAttrMean = "mean";                 // float64[3], of pixel/255
inline constexpr const char* kAttrStd = "std";                   // float64[3], population std of pixel/255

// Images per chunk: ~3 MB chunks, each guarded by its own Fletcher32 checksum.
inline constexpr int64_t kImagesPerChunk = 1024;
inline constexpr int64_t kLabelsPerChunk = 16384;

// The official CIFAR-10 binary release (cifar-10-binary.tar.gz).
inline constexpr const char* kOfficialArchiveMd5 = "c32a1d4ab5d03f1284b67883e8d87530";
inline constexpr int64_t kRecordBytes = 1 + kImageBytes;  // label byte + image
inline constexpr int64_t kRecordsPerBatch = 10000;
inline constexpr int64_t kBatchFileBytes = kRecordBytes * kRecordsPerBatch;  // 30,730,000
inline const std::array<std::string, 5> kTrainBatchFiles = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                                            "data_batch_4.bin", "data_batch_5.bin"};
inline constexpr const char* kTestBatchFile = "test_batch.bin";
inline constexpr const char* kMetaFile = "batches.meta.txt";
inline constexpr const char* kBatchesFolder = "cifar-10-batches-bin";

}  // namespace cifar::schema
