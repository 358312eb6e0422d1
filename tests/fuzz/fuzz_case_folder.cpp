// Fuzz target: `rnnx run`'s case folder (tools/rnnx/case_runner.cpp) held in memory: the
// input is case.json's text, then files, each after a line "=== NAME" (see split_folder).
// The runner parses, checks and runs the case (cpu backend, or the reference for a quarter
// of the inputs); nothing is written.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "case_runner.hpp"
#include "fuzz_common.hpp"

namespace {

constexpr std::string_view kFileMark = "\n=== ";

struct Folder {
  std::string case_json;
  std::map<std::string, std::vector<unsigned char>> files;
};

// "case.json text\n=== x.npy\n<bytes>\n=== h0.npy\n<bytes>": a later file of the same name
// replaces an earlier one, as a folder holds each name once.
Folder split_folder(std::string_view in) {
  Folder f;
  size_t mark = in.find(kFileMark);
  f.case_json = std::string(in.substr(0, mark));
  while (mark != std::string_view::npos) {
    const size_t name_start = mark + kFileMark.size();
    const size_t name_end = in.find('\n', name_start);
    if (name_end == std::string_view::npos) break;
    const size_t next = in.find(kFileMark, name_end);
    const std::string_view body =
        in.substr(name_end + 1,
                  next == std::string_view::npos ? std::string_view::npos : next - name_end - 1);
    f.files[std::string(in.substr(name_start, name_end - name_start))] =
        std::vector<unsigned char>(body.begin(), body.end());
    mark = next;
  }
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rnnx::fuzz::set_up_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rnnx::tool;
  namespace fs = std::filesystem;
  const Folder folder = split_folder(std::string_view(reinterpret_cast<const char*>(data), size));
  const std::string dir = "case";
  CaseSource source;
  source.dir = dir;
  source.read_case = [&](const std::string& path) {
    return parse_case_text(path, folder.case_json);
  };
  source.npy_names = [&] {
    // What a directory listing can hold: plain names, no separators, extension .npy.
    std::vector<std::string> names;
    for (const auto& [name, bytes] : folder.files) {
      if (name.empty() || name.find('/') != std::string::npos ||
          name.find('\0') != std::string::npos || name == "." || name == "..")
        continue;
      if (fs::path(name).extension() == ".npy") names.push_back(name);
    }
    return names;
  };
  source.read_npy = [&](const std::string& path) {
    const std::string name = fs::path(path).filename().string();
    return parse_npy(path, folder.files.at(name));
  };
  // A quarter of the inputs (by length, so that each input always takes the same path) run
  // on the reference backend, which checks and schedules on its own.
  const char* backend = size % 4 == 3 ? "reference" : "cpu";
  rnnx::fuzz::refused_cleanly("run_case", [&] { run_case(source, backend, 1, std::nullopt); });
  return 0;
}
