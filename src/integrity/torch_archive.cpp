// Size checks of torch zip archives before LibTorch reads them (see torch_archive.hpp).
#include "integrity/torch_archive.hpp"

#include <c10/core/ScalarType.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/serialization/import_read.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "util/crc32.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {
// Its own namespace: the unity build compiles src/checkpoint/ as one unit.
namespace archive_detail {

// Sizes and signatures of the zip format (APPNOTE.TXT), as miniz names them.
constexpr uint32_t kEndSig = 0x06054b50;  // end of central directory
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kCentralSize = 46;
constexpr size_t kLocalSize = 30;
constexpr uint16_t kZip64ExtraId = 0x0001;
// The end record may be followed by a comment of up to 65,535 bytes; miniz
// searches that far back (in 4 KiB blocks, so a little further).
constexpr size_t kEndSearch = 0xFFFF + kEndSize + 4096;
// Deflate cannot expand more than about 1032:1 (258 bytes per 2-bit code).
constexpr uint64_t kMaxDeflateRatio = 1032;

// Appends rather than inserting: GCC 12 at -O3 reports string::insert's
// memcpy in C++20 (constexpr std::string) as exceeding the object size.
std::string n(uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

uint64_t le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

struct Entry {
  std::string name;
  uint64_t header = 0;  // local header's offset
  uint64_t data = 0;    // the data's offset
  uint64_t compressed = 0;
  uint64_t size = 0;  // uncompressed: what LibTorch allocates
  uint32_t crc = 0;   // the CRC-32 of the uncompressed bytes, as the writer recorded it
  bool stored = true;
};

class Zip {
 public:
  Zip(const unsigned char* bytes, uint64_t size) : b_(bytes), size_(size) { read(); }

  const std::vector<Entry>& entries() const { return entries_; }
  const std::string& archive_name() const { return archive_name_; }
  uint64_t total_size() const { return total_; }
  const Entry* find(const std::string& name) const {
    const auto it = by_name_.find(lower(name));
    return it == by_name_.end() ? nullptr : &entries_[it->second];
  }
  const unsigned char* bytes() const { return b_; }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw ArchiveError("zip " + what); }

  void read() {
    if (size_ < kEndSize) fail("of " + n(size_) + " bytes: too short for an end-of-central-directory record");
    // miniz takes the last end record in the file's tail.
    uint64_t end = size_;
    for (uint64_t p = size_ - 4 + 1; p-- > (size_ > kEndSearch ? size_ - kEndSearch : 0);)
      if (le(b_ + p, 4) == kEndSig) {
        end = p;
        break;
      }
    if (end == size_) fail("without an end-of-central-directory record (not a zip file, or truncated)");
    if (end + kEndSize > size_) fail("end-of-central-directory record at byte " + n(end) + " runs past the end");
    const unsigned char* e = b_ + end;
    uint64_t disk = le(e + 4, 2), cdir_disk = le(e + 6, 2), on_disk = le(e + 8, 2), files = le(e + 10, 2);
    uint64_t cdir_size = le(e + 12, 4), cdir_ofs = le(e + 16, 4);
    if (end >= kZip64LocatorSize + kZip64EndSize && le(e - kZip64LocatorSize, 4) == kZip64LocatorSig) {
      const unsigned char* loc = e - kZip64LocatorSize;
      const uint64_t z = le(loc + 8, 8);
      if (z > size_ - kZip64EndSize) fail("zip64 end record's offset " + n(z) + " is past the end");
      const unsigned char* r = b_ + z;
      if (le(r, 4) == kZip64EndSig) {  // miniz: the zip64 record's values replace the end record's
        if (le(loc + 16, 4) != 1) fail("zip64 locator names " + n(le(loc + 16, 4)) + " disks, not 1");
        disk = le(r + 16, 4);
        cdir_disk = le(r + 20, 4);
        on_disk = le(r + 24, 8);
        files = le(r + 32, 8);
        cdir_size = le(r + 40, 8);
        cdir_ofs = le(r + 48, 8);
      }
    }
    if (files != on_disk || (disk | cdir_disk) != 0)
      fail("end record describes a multi-disk archive (" + n(files) + " entries, " + n(on_disk) + " on this disk)");
    if (cdir_ofs > size_ || cdir_size > size_ - cdir_ofs)
      fail("central directory of " + n(cdir_size) + " bytes at byte " + n(cdir_ofs) + " reaches past the file's " +
           n(size_) + " bytes");
    if (files > cdir_size / kCentralSize)
      fail("end record claims " + n(files) + " entries, more than its central directory of " + n(cdir_size) +
           " bytes holds");
    if (files == 0) fail("archive holds no entries");

    uint64_t p = cdir_ofs;
    const uint64_t cdir_end = cdir_ofs + cdir_size;
    for (uint64_t i = 0; i < files; ++i) entries_.push_back(central_entry(p, cdir_end, i, cdir_ofs));

    std::vector<const Entry*> order;
    for (const Entry& x : entries_) order.push_back(&x);
    std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) { return a->header < b->header; });
    for (size_t i = 0; i + 1 < order.size(); ++i)
      if (order[i]->data + order[i]->compressed > order[i + 1]->header)
        fail("entries '" + order[i]->name + "' and '" + order[i + 1]->name + "' overlap");
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (!by_name_.emplace(lower(entries_[i].name), i).second)
        fail("entry name '" + entries_[i].name + "' appears twice (names are compared ignoring case)");
      total_ += entries_[i].size;
    }
    const std::string& first = entries_.front().name;
    archive_name_ = first.substr(0, first.find('/'));
  }

  Entry central_entry(uint64_t& p, uint64_t cdir_end, uint64_t index, uint64_t cdir_ofs) const {
    const std::string which = "central directory entry " + n(index) + " (byte " + n(p) + ")";
    if (cdir_end - p < kCentralSize || le(b_ + p, 4) != kCentralSig) fail(which + " is damaged");
    const unsigned char* c = b_ + p;
    const uint64_t method = le(c + 10, 2), flags = le(c + 8, 2);
    const uint64_t name_len = le(c + 28, 2), extra_len = le(c + 30, 2), comment_len = le(c + 32, 2);
    if (kCentralSize + name_len + extra_len + comment_len > cdir_end - p)
      fail(which + " runs past the central directory's end");
    Entry x;
    x.name.assign(reinterpret_cast<const char*>(c + kCentralSize), name_len);
    const std::string entry = "entry '" + x.name + "'";
    x.compressed = le(c + 20, 4);
    x.size = le(c + 24, 4);
    x.header = le(c + 42, 4);
    // miniz reads the central directory's CRC-32 (the local header's copy is
    // zero where a data descriptor follows the data; torch writes none).
    x.crc = static_cast<uint32_t>(le(c + 16, 4));
    constexpr uint64_t kSaturated = 0xFFFFFFFF;
    if (std::max({x.compressed, x.size, x.header}) == kSaturated) {
      // The zip64 extended information field holds the 64-bit values, in this
      // order, of the fields that are saturated (miniz's mz_zip_file_stat_internal).
      const unsigned char* f = c + kCentralSize + name_len;
      uint64_t left = extra_len;
      bool found = false;
      while (left >= 4 && !found) {
        const uint64_t id = le(f, 2), len = le(f + 2, 2);
        if (len + 4 > left) fail(entry + ": an extra field runs past its entry");
        if (id == kZip64ExtraId) {
          found = true;
          const unsigned char* v = f + 4;
          uint64_t remaining = len;
          for (uint64_t* field : {&x.size, &x.compressed, &x.header}) {
            if (*field != kSaturated) continue;
            if (remaining < 8) fail(entry + ": its zip64 field is too short");
            *field = le(v, 8);
            v += 8;
            remaining -= 8;
          }
        }
        f += len + 4;
        left -= len + 4;
      }
    }
    if (flags & 1) fail(entry + " is encrypted");
    if (method == 0) {
      if (x.size != x.compressed)
        fail(entry + " is stored, but claims " + n(x.size) + " bytes uncompressed and " + n(x.compressed) +
             " stored (they must be equal)");
    } else if (method == 8) {
      x.stored = false;
      if (x.size / kMaxDeflateRatio > x.compressed)
        fail(entry + " claims " + n(x.size) + " bytes uncompressed from " + n(x.compressed) +
             " deflated, more than deflate can expand");
    } else {
      fail(entry + " uses compression method " + n(method) + " (torch writes entries stored or deflated)");
    }
    // The local header and the data lie before the central directory.
    if (x.header > cdir_ofs || cdir_ofs - x.header < kLocalSize || le(b_ + x.header, 4) != kLocalSig)
      fail(entry + ": no local header at byte " + n(x.header));
    const unsigned char* l = b_ + x.header;
    x.data = x.header + kLocalSize + le(l + 26, 2) + le(l + 28, 2);
    if (x.data > cdir_ofs || x.compressed > cdir_ofs - x.data)
      fail(entry + " claims " + n(x.compressed) + (x.stored ? " bytes" : " compressed bytes") + " at byte " +
           n(x.data) + ", past the archive's data (" + n(cdir_ofs) + " bytes before its central directory; " +
           n(size_) + " in all)");
    p += kCentralSize + name_len + extra_len + comment_len;
    return x;
  }

  const unsigned char* b_;
  uint64_t size_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> by_name_;
  std::string archive_name_;
  uint64_t total_ = 0;  // uncompressed bytes of all entries
};

// A value on the unpickler's stack, as far as the checks need it: integers,
// strings and tuples (a storage's persistent id), anything else opaque.
struct Value {
  enum class Kind { Other, Int, String, Tuple } kind = Kind::Other;
  int64_t i = 0;
  std::shared_ptr<const std::string> s;
  std::shared_ptr<const std::vector<Value>> t;
};

// Walks one pickle as LibTorch 1.13's Unpickler does (protocol 2, the opcodes
// it reads) without building anything: see torch_archive.hpp for what it refuses.
class PickleCheck {
 public:
  PickleCheck(const Zip& zip, const Entry& pickle, const unsigned char* bytes, uint64_t size, uint64_t& storage_bytes)
      : zip_(zip), name_(pickle.name), p_(bytes), size_(size), storage_bytes_(storage_bytes) {
    // "<archive>/data.pkl" loads its storages from "<archive>/data/<key>"; a
    // debug_pkl (TorchScript source ranges) loads none.
    if (ends_with(lower(name_), ".pkl")) storage_dir_ = name_.substr(0, name_.size() - 4) + "/";
  }

  void run() {
    if (size_ < 2 || p_[0] != 0x80 || p_[1] != 2) fail(0, "does not begin with PROTO 2");
    pos_ = 2;
    while (true) {
      if (pos_ >= size_) fail(pos_, "ends without STOP (truncated?)");
      const uint64_t at = pos_;
      const unsigned char op = p_[pos_++];
      if (!step(op, at)) break;
    }
    if (stack_.size() != 1) fail(pos_, "leaves " + n(stack_.size()) + " values at STOP, not 1");
  }

 private:
  [[noreturn]] void fail(uint64_t at, const std::string& what) const {
    throw ArchiveError("pickle '" + name_ + "' (byte " + n(at) + " of " + n(size_) + "): " + what);
  }

  const unsigned char* arg(uint64_t bytes, uint64_t at, const char* op) {
    if (bytes > size_ - pos_)
      fail(at, std::string(op) + " needs " + n(bytes) + " bytes, but only " + n(size_ - pos_) + " remain");
    const unsigned char* a = p_ + pos_;
    pos_ += bytes;
    return a;
  }

  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }

  Value pop(uint64_t at, const char* op) {
    if (stack_.size() <= floor()) fail(at, std::string(op) + " pops below the stack's bottom or its last MARK");
    Value v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }

  // The values above the last MARK, which the opcode consumes with it.
  std::vector<Value> pop_mark(uint64_t at, const char* op) {
    if (marks_.empty()) fail(at, std::string(op) + " without a MARK");
    const size_t start = marks_.back();
    marks_.pop_back();
    std::vector<Value> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(start)),
                             std::make_move_iterator(stack_.end()));
    stack_.resize(start);
    return items;
  }

  void push_string(uint64_t length, uint64_t at, const char* op) {
    const unsigned char* a = arg(length, at, op);
    Value v;
    v.kind = Value::Kind::String;
    v.s = std::make_shared<const std::string>(reinterpret_cast<const char*>(a), length);
    stack_.push_back(std::move(v));
  }

  void push_int(int64_t i) {
    Value v;
    v.kind = Value::Kind::Int;
    v.i = i;
    stack_.push_back(std::move(v));
  }

  void push_tuple(std::vector<Value> items) {
    Value v;
    v.kind = Value::Kind::Tuple;
    v.t = std::make_shared<const std::vector<Value>>(std::move(items));
    stack_.push_back(std::move(v));
  }

  std::string line(uint64_t at) {
    const void* nl = std::memchr(p_ + pos_, '\n', size_ - pos_);
    if (!nl) fail(at, "GLOBAL's name runs past the end");
    const auto* end = static_cast<const unsigned char*>(nl);
    std::string s(reinterpret_cast<const char*>(p_ + pos_), static_cast<size_t>(end - (p_ + pos_)));
    pos_ = static_cast<uint64_t>(end - p_) + 1;
    return s;
  }

  void put(uint64_t id, uint64_t at) {
    // LibTorch grows its memo table to the index (16 bytes an entry); torch's
    // and Python's picklers number entries 0, 1, 2, ...
    if (id > puts_)
      fail(at,
           "memo index " + n(id) + " stored after only " + n(puts_) + " memo entries (a writer numbers them in order)");
    if (stack_.empty()) fail(at, "memo store from an empty stack");
    memo_[id] = stack_.back();
    ++puts_;
  }

  void get(uint64_t id, uint64_t at) {
    const auto it = memo_.find(id);
    if (it == memo_.end()) fail(at, "memo index " + n(id) + " read before it was stored");
    stack_.push_back(it->second);
  }

  void persistent_id(uint64_t at) {
    const Value id = pop(at, "BINPERSID");
    const auto* t = id.kind == Value::Kind::Tuple ? id.t.get() : nullptr;
    if (!t || t->size() < 5 || (*t)[0].kind != Value::Kind::String || *(*t)[0].s != "storage" ||
        (*t)[2].kind != Value::Kind::String || (*t)[4].kind != Value::Kind::Int)
      fail(at, "a persistent id that is not ('storage', type, key, device, elements)");
    if ((*t)[1].kind != Value::Kind::Int || (*t)[1].i < 0 ||
        (*t)[1].i >= static_cast<int64_t>(c10::ScalarType::Undefined))
      fail(at, "a storage without a known element type");
    const uint64_t item = c10::elementSize(static_cast<c10::ScalarType>((*t)[1].i));
    const std::string& key = *(*t)[2].s;
    const int64_t elements = (*t)[4].i;
    if (elements < 0) fail(at, "storage '" + key + "' claims " + std::to_string(elements) + " elements");
    if (elements > 0) {
      if (storage_dir_.empty()) fail(at, "loads storage '" + key + "', but this pickle has no storages");
      const Entry* record = zip_.find(storage_dir_ + key);
      if (!record) fail(at, "loads storage '" + key + "', which has no record '" + storage_dir_ + key + "'");
      uint64_t bytes = 0;
      if (__builtin_mul_overflow(static_cast<uint64_t>(elements), item, &bytes) || bytes > record->size)
        fail(at, "storage '" + key + "' claims " + n(static_cast<uint64_t>(elements)) + " elements of " + n(item) +
                     " bytes, more than its record '" + record->name + "' holds (" + n(record->size) + " bytes)");
      // LibTorch reads the record again for every persistent id naming it.
      storage_bytes_ += record->size;
      if (storage_bytes_ > zip_.total_size())
        fail(at, "storages loaded so far read " + n(storage_bytes_) + " bytes, more than the archive's " +
                     n(zip_.total_size()) + " (a storage loaded over and over)");
    }
    stack_.emplace_back();  // the tensor
  }

  // One opcode; false at STOP.
  bool step(unsigned char op, uint64_t at) {
    switch (op) {
      case '.':  // STOP
        return false;
      case '(':  // MARK
        marks_.push_back(stack_.size());
        break;
      case ')':
      case ']':
      case '}':
      case 'N':
      case 0x88:
      case 0x89:  // empty tuple/list/dict, None, True, False
        stack_.emplace_back();
        break;
      case 'K': push_int(static_cast<int64_t>(le(arg(1, at, "BININT1"), 1))); break;
      case 'M': push_int(static_cast<int64_t>(le(arg(2, at, "BININT2"), 2))); break;
      case 'J': push_int(static_cast<int32_t>(le(arg(4, at, "BININT"), 4))); break;
      case 0x8a: {  // LONG1: LibTorch reads 8-byte ones only
        const uint64_t length = le(arg(1, at, "LONG1"), 1);
        const unsigned char* a = arg(length, at, "LONG1");
        if (length == 8) push_int(static_cast<int64_t>(le(a, 8)));
        else stack_.emplace_back();
        break;
      }
      case 'X': {  // BINUNICODE: LibTorch allocates the length before reading
        const uint64_t length = le(arg(4, at, "BINUNICODE"), 4);
        if (length > size_ - pos_)
          fail(at, "BINUNICODE claims a string of " + n(length) + " bytes, but only " + n(size_ - pos_) + " remain");
        push_string(length, at, "BINUNICODE");
        break;
      }
      case 'G':
        arg(8, at, "BINFLOAT");
        stack_.emplace_back();
        break;
      case 't': push_tuple(pop_mark(at, "TUPLE")); break;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        std::vector<Value> items(static_cast<size_t>(op - 0x84));
        for (size_t k = items.size(); k-- > 0;) items[k] = pop(at, "TUPLEn");
        push_tuple(std::move(items));
        break;
      }
      case 'e':  // APPENDS: the list stays below the mark
        pop_mark(at, "APPENDS");
        if (stack_.empty()) fail(at, "APPENDS without a list");
        break;
      case 'l':
        pop_mark(at, "LIST");
        stack_.emplace_back();
        break;
      case 'd':
        if (pop_mark(at, "DICT").size() % 2) fail(at, "DICT of an odd number of keys and values");
        stack_.emplace_back();
        break;
      case 'u':
        if (pop_mark(at, "SETITEMS").size() % 2) fail(at, "SETITEMS of an odd number of keys and values");
        if (stack_.empty()) fail(at, "SETITEMS without a dict");
        break;
      case 's':  // SETITEM: dict, key, value
        pop(at, "SETITEM");
        pop(at, "SETITEM");
        if (stack_.size() <= floor()) fail(at, "SETITEM without a dict");
        break;
      case 'q': put(le(arg(1, at, "BINPUT"), 1), at); break;
      case 'r': put(le(arg(4, at, "LONG_BINPUT"), 4), at); break;
      case 'h': get(le(arg(1, at, "BINGET"), 1), at); break;
      case 'j': get(le(arg(4, at, "LONG_BINGET"), 4), at); break;
      case 'c': {  // GLOBAL: LibTorch pushes a torch.<Type>Storage as its scalar type
        const std::string module = line(at), name = line(at);
        int64_t scalar = -1;
#define CIFAR_STORAGE_NAME(_, type) \
  if (name == #type "Storage") scalar = static_cast<int64_t>(c10::ScalarType::type);
        if (module == "torch") {
          AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS(CIFAR_STORAGE_NAME)
        }
#undef CIFAR_STORAGE_NAME
        if (scalar >= 0) push_int(scalar);
        else stack_.emplace_back();
        break;
      }
      case 0x81: pop(at, "NEWOBJ"); break;  // LibTorch drops the empty tuple; the class stays
      case 'b':
      case 'R':  // BUILD, REDUCE: callable and argument become the result
        pop(at, "REDUCE");
        pop(at, "REDUCE");
        stack_.emplace_back();
        break;
      case 'Q': persistent_id(at); break;
      default: fail(at, strprintf("opcode 0x%02x, which LibTorch's unpickler does not read", op));
    }
    return true;
  }

  const Zip& zip_;
  const std::string& name_;
  const unsigned char* p_;
  uint64_t size_;
  uint64_t& storage_bytes_;
  std::string storage_dir_;
  uint64_t pos_ = 0;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, Value> memo_;
  uint64_t puts_ = 0;
};

// One line of a module's source, as torch's printer writes it for a module
// that only holds attributes (torch/csrc/jit/serialization/python_print.cpp:
// the class header, the parameter and buffer lists, and one line per
// attribute).
class SourceLine {
 public:
  explicit SourceLine(const std::string& s) : s_(s) {}

  bool matches() {
    if (s_.empty()) return true;
    if (lit("class ")) return ident() && lit("(Module):") && end();
    if (!lit("  ")) return false;
    const size_t body = i_;
    for (const char* list :
         {"__parameters__ = ", "__buffers__ = ", "__forward_pre_hooks__ = ", "__forward_hooks__ = "}) {
      i_ = body;
      if (lit(list)) return strings() && end();
    }
    i_ = body;
    if (lit("__annotations__ = []")) return end();
    i_ = body;
    if (lit("__annotations__[")) return string() && lit("] = ") && type(0) && end();
    i_ = body;
    return ident() && lit(" : ") && type(0) && end();  // an attribute: "name : Type"
  }

 private:
  bool end() const { return i_ == s_.size(); }
  bool lit(const char* t) {
    const size_t k = std::strlen(t);
    if (s_.compare(i_, k, t) != 0) return false;
    i_ += k;
    return true;
  }
  static bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
  bool ident() {
    if (i_ >= s_.size() || !(std::isalpha(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) return false;
    while (i_ < s_.size() && word_char(s_[i_])) ++i_;
    return true;
  }
  // A name as the printer quotes it: printable ASCII, no quote or backslash.
  bool string() {
    if (!lit("\"")) return false;
    while (i_ < s_.size() && s_[i_] != '"') {
      const unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c < 0x20 || c > 0x7e || c == '\\') return false;
    }
    return lit("\"");
  }
  // ["a", "b", ]
  bool strings() {
    if (!lit("[")) return false;
    while (!lit("]"))
      if (!string() || !lit(", ")) return false;
    return true;
  }
  // The types an attribute of a serialized module has: a scalar or Tensor, a
  // generic of those, or a module class (__torch__.<path>).
  bool type(int depth) {
    const size_t start = i_;
    if (depth > 8 || !ident()) return false;
    while (lit("."))
      if (!ident()) return false;
    const std::string name = s_.substr(start, i_ - start);
    for (const char* plain : {"Tensor", "int", "float", "bool", "str", "NoneType", "Device"})
      if (name == plain) return true;
    if (name.compare(0, 10, "__torch__.") == 0) return true;
    int arity = 0;  // -1: one or more
    if (name == "List" || name == "Optional") arity = 1;
    else if (name == "Dict") arity = 2;
    else if (name == "Tuple") arity = -1;
    else return false;
    if (!lit("[") || !type(depth + 1)) return false;
    int count = 1;
    for (; lit(", "); ++count)
      if (!type(depth + 1)) return false;
    return lit("]") && (arity < 0 || count == arity);
  }

  const std::string& s_;
  size_t i_ = 0;
};

// Every entry's bytes against the CRC-32 its writer recorded in the central
// directory: LibTorch's zip reader (miniz, built without its CRC checks)
// never compares them, so a damaged tensor would load as it is.
void check_crc(const Entry& e, uint32_t actual) {
  if (actual != e.crc)
    throw DamagedArchiveError(
        e.name, strprintf("zip entry '%s' does not match its CRC-32 (its bytes give %08x, its writer recorded %08x%s)",
                          e.name.c_str(), actual, e.crc,
                          e.crc == 0 ? "; or it was saved without CRC-32s: save it again with them" : ""));
}

// Stored entries (all of torch's tensors and pickles, and the version record
// LibTorch's reader parses when it opens the archive), checked where they
// lie, before any reader sees them.
void check_stored_crcs(const Zip& zip) {
  for (const Entry& e : zip.entries())
    if (e.stored) check_crc(e, crc32(zip.bytes() + e.data, e.compressed));
}

// Deflated entries (TorchScript's source files and debug pickles), inflated
// by `reader` within the sizes Zip checked.
void check_deflated_crcs(const Zip& zip, caffe2::serialize::PyTorchStreamReader& reader, const std::string& prefix) {
  for (const Entry& e : zip.entries()) {
    if (e.stored) continue;
    if (lower(e.name).compare(0, prefix.size(), prefix) != 0)
      throw ArchiveError("zip entry '" + e.name + "' is deflated and outside the archive's folder '" + prefix +
                         "' (torch writes every entry inside it)");
    uint32_t actual = 0;
    try {
      const auto record = reader.getRecord(e.name.substr(prefix.size()));
      actual = crc32(std::get<0>(record).get(), std::get<1>(record));
    } catch (const c10::Error&) {
      throw DamagedArchiveError(
          e.name, "zip entry '" + e.name + "' does not inflate (its deflated bytes are not a deflate stream)");
    }
    check_crc(e, actual);
  }
}

}  // namespace archive_detail

// A zip reader's source that never reads past the end of its bytes (which
// must outlive it): a short read fails the zip reader with a c10::Error.
class BoundedBytesReader final : public caffe2::serialize::ReadAdapterInterface {
 public:
  BoundedBytesReader(const char* data, size_t size) : data_(data), size_(size) {}
  explicit BoundedBytesReader(const std::vector<char>& bytes) : BoundedBytesReader(bytes.data(), bytes.size()) {}
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= size_) return 0;
    n = std::min<size_t>(n, size_ - static_cast<size_t>(pos));
    std::memcpy(buf, data_ + pos, n);
    return n;
  }

 private:
  const char* data_;
  size_t size_;
};

}  // namespace

void check_torch_archive(const char* data, size_t size) {
  using namespace archive_detail;
  const Zip zip(reinterpret_cast<const unsigned char*>(data), size);
  // Every entry's sizes are now within the archive: LibTorch's own zip reader
  // allocates no more than the entries hold, and gives each pickle's bytes as
  // its unpickler will see them (TorchScript archives deflate source-range
  // pickles of more than 200 bytes; miniz looks names up ignoring case).
  check_stored_crcs(zip);
  caffe2::serialize::PyTorchStreamReader reader(std::make_shared<BoundedBytesReader>(data, size));
  const std::string prefix = lower(zip.archive_name() + "/");
  check_deflated_crcs(zip, reader, prefix);
  uint64_t storage_bytes = 0;
  for (const Entry& e : zip.entries()) {
    const std::string name = lower(e.name);
    if (!ends_with(name, "pkl") || name.compare(0, prefix.size(), prefix) != 0) continue;
    const auto record = reader.getRecord(e.name.substr(prefix.size()));
    PickleCheck(zip, e, static_cast<const unsigned char*>(std::get<0>(record).get()), std::get<1>(record),
                storage_bytes)
        .run();
  }
}

void check_module_sources(const char* data, size_t size) {
  using namespace archive_detail;
  const Zip zip(reinterpret_cast<const unsigned char*>(data), size);
  caffe2::serialize::PyTorchStreamReader reader(std::make_shared<BoundedBytesReader>(data, size));
  const std::string prefix = lower(zip.archive_name() + "/");
  for (const Entry& e : zip.entries()) {
    const std::string name = lower(e.name);
    if (!ends_with(name, ".py") || name.compare(0, prefix.size(), prefix) != 0) continue;
    const auto record = reader.getRecord(e.name.substr(prefix.size()));
    const std::string text(static_cast<const char*>(std::get<0>(record).get()), std::get<1>(record));
    size_t begin = 0, number = 1;
    bool in_class = false;
    for (; begin <= text.size(); ++number) {
      const size_t nl = std::min(text.find('\n', begin), text.size());
      const std::string line = text.substr(begin, nl - begin);
      if (!SourceLine(line).matches() || (!in_class && !line.empty() && line.compare(0, 6, "class ") != 0)) {
        std::string shown = line.substr(0, 80);
        for (char& c : shown)
          if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
        throw ArchiveError("source '" + e.name + "' line " + n(number) +
                           " is not one torch writes for a module "
                           "of attributes: '" +
                           shown + "'");
      }
      in_class = in_class || line.compare(0, 6, "class ") == 0;
      begin = nl + 1;
    }
  }
}

c10::IValue unpickle_zip(const std::vector<char>& bytes) {
  check_torch_archive(bytes.data(), bytes.size());
  caffe2::serialize::PyTorchStreamReader reader(std::make_shared<BoundedBytesReader>(bytes));
  return torch::jit::readArchiveAndTensors("data", /*pickle_prefix=*/"", /*tensor_prefix=*/"",
                                           /*type_resolver=*/c10::nullopt, /*obj_loader=*/c10::nullopt,
                                           /*device=*/c10::nullopt, reader);
}

}  // namespace cifar
