// Model state dict save/load in torch.save's zip+pickle format; see model_file.hpp.
#include "outputs/model_file.hpp"

#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "integrity/torch_archive.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/memory.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

std::string system_reason() { return std::strerror(errno); }

// The file's bytes. Checked first as a regular file: a folder opened as a
// stream threw "basic_filebuf::underflow ... Is a directory" out of the
// stream library, from every rank; a FIFO would block.
std::vector<char> read_file(const std::string& path) {
  const paths::FileCheck check = paths::check_regular_file(path, physical_memory_bytes());
  if (!check && check.problem != paths::FileProblem::Missing)  // missing: said by the open below
    throw CheckpointError("model file '" + path + "' " + check.reason +
                          " (pass a model file: cifar_mpi's --output, or Python's torch.save(model.state_dict()))");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError("cannot open model file '" + path + "': " + system_reason());
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw CheckpointError("cannot read model file '" + path + "': " + system_reason());
  return bytes;
}

// LibTorch's messages may run over several lines; ours are one.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

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

// The 14 bytes torch.save's legacy (pre-zip) format begins with: pickle
// protocol 2 and LONG1 of its magic number 0x1950a86a20f9469cfc6c.
const std::string kLegacyMagic("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 14);

// The command that writes the file again as a plain dict of its tensors.
std::string resave_command(const std::string& path, const std::string& of) {
  return "python3 -c \"import torch; torch.save(dict(" + of + "), '" + path + "')\"";
}

// Throws when LibTorch could not read a Python file, naming what Python wrote:
// torch.save's legacy format, a whole pickled nn.Module, or an OrderedDict
// (torch.save(model.state_dict())), which LibTorch 1.13's unpickler cannot
// build. torch.save stores its pickle uncompressed, so the class names are
// visible in the raw bytes (a module's "_parameters" as BINUNICODE).
void name_python_file(const std::string& path, const std::vector<char>& bytes) {
  const std::string file = "model file '" + path + "'";
  const std::string load = "torch.load('" + path + "')";
  if (bytes.size() >= kLegacyMagic.size() && std::equal(kLegacyMagic.begin(), kLegacyMagic.end(), bytes.begin()))
    throw CheckpointError(file +
                          " is in torch.save's legacy format (_use_new_zipfile_serialization=False), which "
                          "LibTorch cannot read; save it again in the zip format: " +
                          resave_command(path, load));
  if (contains(bytes, "torch.nn.modules") || contains(bytes, std::string("X\x0b\x00\x00\x00_parameters", 16)))
    throw CheckpointError(file +
                          " holds a pickled nn.Module (torch.save(model)), not a state dict; save the "
                          "model's state dict instead: torch.save(dict(model.state_dict()), '" +
                          path + "'), or " + resave_command(path, load + ".state_dict()") +
                          " where the model's class can be imported");
  // The pickle's first object (every tensor's rebuild also names an
  // OrderedDict, for its hooks: a plain dict's file has the name too).
  if (contains(bytes,
               "\x80\x02"
               "ccollections\nOrderedDict\n"))
    throw CheckpointError(file +
                          " holds a Python OrderedDict (torch.save(model.state_dict())), which LibTorch cannot "
                          "read; save it again as a plain dict: " +
                          resave_command(path, load));
}

[[noreturn]] void refuse_unreadable(const std::string& path, const std::vector<char>& bytes, const std::string& why) {
  name_python_file(path, bytes);
  throw CheckpointError("model file '" + path +
                        "' is not a readable torch.save file (truncated or corrupt?): " + first_line(why));
}

c10::Dict<c10::IValue, c10::IValue> read_state_dict(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  c10::IValue value;
  try {
    value = unpickle_zip(bytes);  // not torch::pickle_load: see integrity/torch_archive.hpp
  } catch (const c10::Error& e) {
    refuse_unreadable(path, bytes, e.what_without_backtrace());
  } catch (const DamagedArchiveError& e) {  // an entry whose bytes fail its CRC-32
    throw CheckpointError("model file '" + path + "' " + kDamagedFile + ": " + e.what() +
                          "; copy it again from where it was written, or write it again");
  } catch (const ArchiveError& e) {  // a size past the file (integrity/torch_archive.hpp)
    refuse_unreadable(path, bytes, e.what());
  } catch (const std::exception& e) {
    // LibTorch's parsers also throw other types (torch::jit::ErrorReport, std::runtime_error).
    refuse_unreadable(path, bytes, e.what());
  }
  if (value.isNone()) name_python_file(path, bytes);  // an OrderedDict reads as None
  if (!value.isGenericDict())
    throw CheckpointError("model file '" + path + "' holds a " + value.tagKind() +
                          ", not a state dict (a dict of name -> tensor)");
  return value.toGenericDict();
}

// torch.save's zip layout (torch::pickle_save's), with the dict pickled as a
// plain dict. torch::pickle_save tags every dict with its TorchScript type
// through the global torch.jit._pickle.restore_type_tag, which torch.load
// refuses by default since PyTorch 2.6 (weights_only=True; seen with torch
// 2.11); an untagged dict of tensors loads there as it is.
std::vector<char> save_untagged(const c10::IValue& value) {
  std::vector<char> pickle;
  torch::jit::Pickler pickler([&](const char* data, size_t size) { pickle.insert(pickle.end(), data, data + size); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr,
                              /*memoized_class_types=*/nullptr, /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(value);
  pickler.stop();
  std::vector<char> out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
    const char* bytes = static_cast<const char*>(data);
    out.insert(out.end(), bytes, bytes + size);
    return size;
  });
  torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();  // the zip's central directory: `out` is complete only now
  return out;
}

}  // namespace

c10::Dict<std::string, at::Tensor> cpu_state_dict(const Model& model) {
  c10::Dict<std::string, at::Tensor> dict;  // insertion-ordered, like state_dict()
  for (const auto& [name, tensor] : state_entries(model))
    dict.insert(name, tensor.detach().to(torch::kCPU).contiguous().clone());
  return dict;
}

void save_state_dict(const Model& model, const std::string& path) {
  write_file_atomically(path, save_untagged(c10::IValue(cpu_state_dict(model))));
}

namespace {

constexpr const char* kDdpPrefix = "module.";

bool starts_with_ddp_prefix(const c10::IValue& key) {
  return key.isString() && key.toStringRef().compare(0, std::strlen(kDdpPrefix), kDdpPrefix) == 0;
}

// A state dict that Python's DistributedDataParallel saved (ddp.state_dict())
// names every entry "module.<name>": read as the model's own names when every
// key has the prefix and no name of the model does, said once.
c10::Dict<c10::IValue, c10::IValue> without_ddp_prefix(c10::Dict<c10::IValue, c10::IValue> file, const Model& model,
                                                       const std::string& path) {
  if (file.empty() ||
      !std::all_of(file.begin(), file.end(), [](const auto& e) { return starts_with_ddp_prefix(e.key()); }))
    return file;
  for (const auto& entry : state_entries(model))
    if (starts_with_ddp_prefix(c10::IValue(entry.first))) return file;
  c10::impl::GenericDict stripped(file.keyType(), file.valueType());
  for (const auto& e : file) stripped.insert(e.key().toStringRef().substr(std::strlen(kDdpPrefix)), e.value());
  log::info("model file '" + path +
            "': every key begins with DistributedDataParallel's 'module.' prefix "
            "(torch.save(ddp.state_dict())); read without it");
  return stripped;
}

}  // namespace

void load_state_dict(Model& model, const std::string& path) {
  apply_state_dict(model, without_ddp_prefix(read_state_dict(path), model, path), path);
}

// Every refusal is one line: the file, the model it is not, the first key
// that differs, and the fix.
void apply_state_dict(Model& model, const c10::Dict<c10::IValue, c10::IValue>& file, const std::string& path) {
  const std::string not_this = "model file '" + path + "' does not hold a " + model.name() + ": ";
  const std::string fix = " (saved from another model? check --model)";
  // Check everything before copying anything: a rejected file leaves the model as it was.
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;  // (target, source)
  std::set<std::string> expected;
  for (auto& [name, target] : state_entries(model)) {
    expected.insert(name);
    const auto it = file.find(c10::IValue(name));
    if (it == file.end()) throw CheckpointError(not_this + "it has no '" + name + "'" + fix);
    if (!it->value().isTensor())
      throw CheckpointError(not_this + "'" + name + "' is a " + it->value().tagKind() + ", not a tensor");
    const at::Tensor source = it->value().toTensor();
    if (source.sizes() != target.sizes())
      throw CheckpointError(not_this + "'" + name + "' has shape " + shape_text(source.sizes()) + " but " +
                            model.name() + " expects " + shape_text(target.sizes()) + fix);
    copies.emplace_back(target, source);
  }
  for (const auto& entry : file) {
    const std::string key = entry.key().isString() ? entry.key().toStringRef() : entry.key().tagKind();
    if (!expected.count(key))
      throw CheckpointError(not_this + "it has '" + key + "', which " + model.name() + " does not have" + fix);
  }
  torch::NoGradGuard no_grad;
  for (auto& [target, source] : copies) target.copy_(source);
}

std::string first_non_finite_entry(const Model& model) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : state_entries(model))
    if (tensor.is_floating_point() && !torch::isfinite(tensor).all().item<bool>()) return name;
  return "";
}

}  // namespace cifar
