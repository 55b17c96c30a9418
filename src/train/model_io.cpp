// Model state dict save/load in torch.save's zip+pickle format; see model_io.hpp.
#include "train/model_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "util/error.hpp"

namespace cifar {
namespace {

std::string system_reason() { return std::strerror(errno); }

std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void write_all(int fd, const std::vector<char>& bytes, const std::string& temp) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw CheckpointError("cannot write '" + temp + "': " + system_reason() + " (is the disk full?)");
    done += static_cast<size_t>(n);
  }
}

void fsync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) throw CheckpointError("cannot open folder '" + folder + "' to sync it: " + system_reason());
  const int rc = ::fsync(fd);
  const std::string reason = system_reason();
  ::close(fd);
  if (rc != 0) throw CheckpointError("cannot sync folder '" + folder + "': " + reason);
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError("cannot open model file '" + path + "': " + system_reason());
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw CheckpointError("cannot read model file '" + path + "': " + system_reason());
  return bytes;
}

std::string shape_text(at::IntArrayRef sizes) {
  std::ostringstream os;
  os << sizes;
  return os.str();
}

// The file's top-level dict as name -> tensor, or a CheckpointError saying
// why the file is not a state dict.
bool contains(const std::vector<char>& bytes, const std::string& text) {
  return std::search(bytes.begin(), bytes.end(), text.begin(), text.end()) != bytes.end();
}

c10::Dict<c10::IValue, c10::IValue> read_state_dict(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  c10::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const c10::Error& e) {
    // torch.save(model.state_dict()) pickles a collections.OrderedDict, which
    // LibTorch 1.13's unpickler reads as None; torch.save stores the pickle
    // uncompressed, so the class name is visible in the raw bytes.
    if (contains(bytes, "collections\nOrderedDict"))
      throw CheckpointError("model file '" + path +
                            "' holds a Python OrderedDict (torch.save(model.state_dict())), which LibTorch cannot "
                            "read; re-save it as a plain dict: python3 -c \"import torch; "
                            "torch.save(dict(torch.load('" + path + "')), '" + path + "')\"");
    throw CheckpointError("model file '" + path + "' is not a readable torch.save file (truncated or corrupt?): " +
                          e.what_without_backtrace());
  }
  if (!value.isGenericDict())
    throw CheckpointError("model file '" + path + "' holds a " + value.tagKind() +
                          ", not a state dict (a dict of name -> tensor)");
  return value.toGenericDict();
}

}  // namespace

void write_file_atomically(const std::string& path, const std::vector<char>& bytes) {
  const std::string folder = folder_of(path);
  std::string temp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0)
    throw CheckpointError("cannot create a file in folder '" + folder + "' to write '" + path +
                          "': " + system_reason() + " (does the folder exist and is it writable?)");
  try {
    write_all(fd, bytes, temp);
    if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0)
      throw CheckpointError("cannot sync '" + temp + "': " + system_reason());
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const std::string reason = system_reason();
    ::unlink(temp.c_str());
    throw CheckpointError("cannot close '" + temp + "': " + reason);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string reason = system_reason();
    ::unlink(temp.c_str());
    throw CheckpointError("cannot rename '" + temp + "' to '" + path + "': " + reason);
  }
  fsync_folder(folder);
}

void save_state_dict(const Model& model, const std::string& path) {
  c10::Dict<std::string, at::Tensor> dict;  // insertion-ordered, like state_dict()
  for (const auto& [name, tensor] : state_entries(model))
    dict.insert(name, tensor.detach().to(torch::kCPU).contiguous().clone());
  write_file_atomically(path, torch::pickle_save(c10::IValue(dict)));
}

void load_state_dict(Model& model, const std::string& path) {
  const auto file = read_state_dict(path);
  // Check everything before copying anything: a rejected file leaves the model as it was.
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;  // (target, source)
  std::set<std::string> expected;
  for (auto& [name, target] : state_entries(model)) {
    expected.insert(name);
    const auto it = file.find(c10::IValue(name));
    if (it == file.end())
      throw CheckpointError("model file '" + path + "' has no '" + name + "': it was saved from another model (" +
                            "this one is " + model.name() + "; check --model)");
    if (!it->value().isTensor())
      throw CheckpointError("model file '" + path + "': '" + name + "' is a " + it->value().tagKind() +
                            ", not a tensor");
    const at::Tensor source = it->value().toTensor();
    if (source.sizes() != target.sizes())
      throw CheckpointError("model file '" + path + "': '" + name + "' has shape " + shape_text(source.sizes()) +
                            " but " + model.name() + " expects " + shape_text(target.sizes()) +
                            " (saved from another model? check --model)");
    copies.emplace_back(target, source);
  }
  for (const auto& entry : file) {
    const std::string key = entry.key().isString() ? entry.key().toStringRef() : entry.key().tagKind();
    if (!expected.count(key))
      throw CheckpointError("model file '" + path + "' has '" + key + "', which " + model.name() +
                            " does not have (saved from another model? check --model)");
  }
  torch::NoGradGuard no_grad;
  for (auto& [target, source] : copies) target.copy_(source);
}

}  // namespace cifar
