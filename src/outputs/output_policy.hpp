// The rules every program's output file follows: cifar_mpi's (run_outputs,
// owner_records) and the tools' (cifar_eval --json, cifar_pack --output and
// --synthetic-binary ARCHIVE). Checked before anything is read or written:
//  * never an input of the same command (the same file, also through a link);
//  * never a file a run owns: one with an owner record beside it (a
//    checkpoint, a model file, a metrics file; a record that cannot be read
//    is refused too: whose file it is cannot be told), nor a name that
//    --resume auto would take for a checkpoint;
//  * never a file of another kind: an existing file that is not empty is
//    replaced only when it begins as the program's own output of that kind
//    does (cifar_eval's JSON, a data file cifar_pack packed, ...);
//  * never a folder, a FIFO or a device, and only in a folder that can be
//    written.
// A refusal is a ConfigError (exit code 2: the command line names the wrong
// file; no file is damaged) naming the option, the file and why; nothing
// has been written. Replacing the program's own earlier output is allowed,
// and the program says so in one line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cifar {

// What a program writes: its name in messages ("evaluation JSON of
// cifar_eval") and the bytes every such file begins with.
struct OutputFileKind {
  std::string name;
  std::string signature;
};

// An option and the file it names.
struct NamedFile {
  std::string option;  // without the dashes: "json", "data"
  std::string path;
};

// The first `n` bytes of the file at `path` (fewer when it is shorter, none
// when it cannot be read): what a file's kind is told by.
std::string file_head(const std::string& path, size_t n);

// The same file: the same inode where both exist, else the same absolute path.
bool same_file(const std::string& a, const std::string& b);

// Checks `output` of `program` against the rules above, with the command's
// `inputs` (empty paths are skipped; so is an empty output). Returns "" for
// a new file, else the line to print when it has been replaced ("replaced
// the earlier evaluation JSON of cifar_eval e.json (1234 bytes)").
std::string check_tool_output(const std::string& program, const NamedFile& output, const OutputFileKind& kind,
                              const std::vector<NamedFile>& inputs);

}  // namespace cifar
