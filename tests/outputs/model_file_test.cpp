// Model files: save -> load round trips, atomic replacement, and one clear
// error naming the file and key for unwritable folders, corrupt files and
// files of another model.
#include <gtest/gtest.h>

#include <limits>

#include <torch/csrc/jit/serialization/pickle.h>

#include <fstream>

#include "outputs/model_file.hpp"
#include "support/temp_folder.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

class ModelIo : public test::TempFolderTest {
 protected:
  ModelIo() : TempFolderTest("cifar_model_io_") {}
  std::string path(const std::string& file) const { return at(file); }
};

std::shared_ptr<Model> seeded(const std::string& name, uint64_t seed) {
  torch::manual_seed(seed);
  return make_model(name);
}

void expect_same_state(const Model& a, const Model& b) {
  const auto sa = state_entries(a);
  const auto sb = state_entries(b);
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].first, sb[i].first);
    EXPECT_TRUE(torch::equal(sa[i].second, sb[i].second)) << sa[i].first;
  }
}

// The CheckpointError message of `fn`, or "no error".
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_F(ModelIo, ConvNetRoundTrip) {
  const auto saved = seeded("convnet", 0);
  save_state_dict(*saved, path("m.pth"));
  const auto loaded = seeded("convnet", 1);
  load_state_dict(*loaded, path("m.pth"));
  expect_same_state(*saved, *loaded);
  const auto x = torch::randn({3, 3, 32, 32});
  EXPECT_TRUE(torch::equal(saved->forward(x), loaded->forward(x)));
}

TEST_F(ModelIo, ResNetRoundTripKeepsBatchNormBuffers) {
  const auto saved = seeded("resnet18", 0);
  saved->train();
  for (int i = 0; i < 2; ++i) saved->forward(torch::randn({4, 3, 32, 32}));
  ASSERT_EQ(saved->named_buffers()["bn1.num_batches_tracked"].item<int64_t>(), 2);
  save_state_dict(*saved, path("r.pth"));
  const auto loaded = seeded("resnet18", 1);
  load_state_dict(*loaded, path("r.pth"));
  expect_same_state(*saved, *loaded);
  saved->eval();
  loaded->eval();
  const auto x = torch::randn({2, 3, 32, 32});
  EXPECT_TRUE(torch::equal(saved->forward(x), loaded->forward(x)));
}

TEST_F(ModelIo, SavesInStateDictOrderAsPlainContiguousTensors) {
  const auto m = seeded("resnet18", 0);
  set_memory_format(*m, torch::MemoryFormat::ChannelsLast);
  save_state_dict(*m, path("cl.pth"));
  const auto dict = torch::pickle_load(read_bytes(path("cl.pth"))).toGenericDict();
  const auto expected = state_entries(*m);
  ASSERT_EQ(dict.size(), expected.size());
  size_t i = 0;
  for (const auto& entry : dict) {  // c10::Dict keeps insertion order
    EXPECT_EQ(entry.key().toStringRef(), expected[i].first);
    EXPECT_TRUE(entry.value().toTensor().is_contiguous()) << expected[i].first;
    EXPECT_TRUE(torch::equal(entry.value().toTensor(), expected[i].second)) << expected[i].first;
    ++i;
  }
  const auto loaded = seeded("resnet18", 1);
  load_state_dict(*loaded, path("cl.pth"));
  expect_same_state(*m, *loaded);
}

TEST_F(ModelIo, ReplacesAnExistingFileAndLeavesNoTemporaries) {
  save_state_dict(*seeded("convnet", 0), path("m.pth"));
  const auto second = seeded("convnet", 5);
  save_state_dict(*second, path("m.pth"));
  const auto loaded = seeded("convnet", 0);
  load_state_dict(*loaded, path("m.pth"));
  expect_same_state(*second, *loaded);
  EXPECT_EQ(paths::list(root_), std::vector<std::string>{"m.pth"});
}

TEST_F(ModelIo, MissingFolderNamesThePath) {
  const std::string target = path("no/such/folder/m.pth");
  const std::string m = error_of([&] { save_state_dict(*seeded("convnet", 0), target); });
  EXPECT_NE(m.find(target), std::string::npos) << m;
  EXPECT_NE(m.find("No such file or directory"), std::string::npos) << m;
}

TEST_F(ModelIo, MissingFileNamesThePath) {
  const auto m = seeded("convnet", 0);
  const std::string msg = error_of([&] { load_state_dict(*m, path("absent.pth")); });
  EXPECT_NE(msg.find(path("absent.pth")), std::string::npos) << msg;
}

TEST_F(ModelIo, CorruptAndTruncatedFilesAreRejectedUnchanged) {
  const auto m = seeded("convnet", 0);
  save_state_dict(*m, path("good.pth"));
  auto bytes = read_bytes(path("good.pth"));
  write_bytes(path("half.pth"), std::vector<char>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  write_bytes(path("junk.pth"), std::vector<char>(4096, 'x'));
  const auto target = seeded("convnet", 1);
  const auto before = target->named_parameters()["fc2.bias"].clone();
  for (const char* name : {"half.pth", "junk.pth"}) {
    const std::string msg = error_of([&] { load_state_dict(*target, path(name)); });
    EXPECT_NE(msg.find(path(name)), std::string::npos) << msg;
    EXPECT_NE(msg.find("not a readable torch.save file"), std::string::npos) << msg;
  }
  EXPECT_TRUE(torch::equal(before, target->named_parameters()["fc2.bias"]));
}

TEST_F(ModelIo, FileOfAnotherModelNamesTheKey) {
  save_state_dict(*seeded("convnet", 0), path("convnet.pth"));
  save_state_dict(*seeded("resnet18", 0), path("resnet.pth"));
  const auto resnet = seeded("resnet18", 1);
  std::string msg = error_of([&] { load_state_dict(*resnet, path("convnet.pth")); });
  EXPECT_NE(msg.find("'conv1.weight' has shape [32, 3, 3, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expects [64, 3, 3, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model file '" + path("convnet.pth") + "' does not hold a ResNet18"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  const auto convnet = seeded("convnet", 1);
  msg = error_of([&] { load_state_dict(*convnet, path("resnet.pth")); });
  EXPECT_NE(msg.find("'conv1.weight'"), std::string::npos) << msg;
}

TEST_F(ModelIo, MissingAndExtraKeysAreNamed) {
  const auto m = seeded("convnet", 0);
  c10::Dict<std::string, at::Tensor> partial;
  c10::Dict<std::string, at::Tensor> extra;
  for (const auto& [name, t] : state_entries(*m)) {
    if (name != "fc2.bias") partial.insert(name, t);
    extra.insert(name, t);
  }
  extra.insert("fc3.weight", torch::zeros({1}));
  write_bytes(path("partial.pth"), torch::pickle_save(partial));
  write_bytes(path("extra.pth"), torch::pickle_save(extra));
  std::string msg = error_of([&] { load_state_dict(*m, path("partial.pth")); });
  EXPECT_NE(msg.find("has no 'fc2.bias'"), std::string::npos) << msg;
  msg = error_of([&] { load_state_dict(*m, path("extra.pth")); });
  EXPECT_NE(msg.find("'fc3.weight'"), std::string::npos) << msg;
}

TEST_F(ModelIo, NonDictFileIsRejected) {
  write_bytes(path("tensor.pt"), torch::pickle_save(torch::zeros({3})));
  const auto m = seeded("convnet", 0);
  const std::string msg = error_of([&] { load_state_dict(*m, path("tensor.pt")); });
  EXPECT_NE(msg.find("not a state dict"), std::string::npos) << msg;
}

// A model holding NaN or infinity is named by its first such entry.
TEST_F(ModelIo, TheFirstNonFiniteEntryIsNamed) {
  torch::manual_seed(1);
  const auto model = make_model("resnet18");
  EXPECT_EQ(first_non_finite_entry(*model), "");
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : state_entries(*model))
    if (name == "layer1.0.bn1.running_var") tensor[3] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(first_non_finite_entry(*model), "layer1.0.bn1.running_var");
}

}  // namespace
}  // namespace cifar
