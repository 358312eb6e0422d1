// In-memory and on-disk store of the algorithm search's choices (autotune_cache.hpp).
#include "core/autotune_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "rnnx/config_fields.hpp"
#include "rnnx/cpu.hpp"
#include "rnnx/error.hpp"

namespace rnnx::core {
namespace {

struct Store {
  std::mutex mutex;
  std::map<std::string, std::string> choices;
  std::set<std::string> files_read;
};

Store& store() {
  static Store s;
  return s;
}

// Adds the file's lines to the memory (caller holds the lock). A missing or unreadable file
// is empty; a line without its newline (a writer's append still under way, or a file cut
// short) and a line without a key and a choice are left out; a choice the backend cannot
// parse is its to refuse.
void read_file(Store& s, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // the last line had no newline
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 == line.size()) continue;
    s.choices[line.substr(0, tab)] = line.substr(tab + 1);
  }
}

}  // namespace

std::string config_search_key(const Config& config) {
  std::string key;
  for_each_config_field([&](const char* name, auto) {
    const std::string field = name;
    if (field == "seed" || field == "padding_fill" || field == "math") return;
    if (!key.empty()) key += ' ';
    key += field + "=" + config_field_text(config, field);
  });
  return key;
}

std::string cache_file() {
  const char* path = std::getenv("RNNX_AUTOTUNE_CACHE");
  return path ? path : "";
}

bool autotune_enabled() {
  const char* env = std::getenv("RNNX_AUTOTUNE");
  const std::string v = env ? env : "";
  if (v.empty() || v == "1") return true;
  if (v == "0") return false;
  throw Error(Status::invalid_argument,
              "RNNX_AUTOTUNE (= \"" + v + "\") must be 1 (search), 0 (heuristic), or unset");
}

std::optional<std::string> autotune_lookup(const std::string& key) {
  Store& s = store();
  const std::string path = cache_file();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!path.empty() && s.files_read.insert(path).second) read_file(s, path);
  const auto it = s.choices.find(key);
  if (it == s.choices.end()) return std::nullopt;
  return it->second;
}

void autotune_store(const std::string& key, const std::string& choice) {
  Store& s = store();
  const std::string path = cache_file();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.choices[key] = choice;
  if (path.empty()) return;
  const std::string line = key + "\t" + choice + "\n";
  // One write(2) of the whole line to a file opened for appending: the kernel places it at
  // the end as one piece, so lines of processes sharing the file never interleave.
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
}

void autotune_remember(const std::string& key, const std::string& choice) {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.choices[key] = choice;
}

void autotune_clear_memory() {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.choices.clear();
  s.files_read.clear();
}

}  // namespace rnnx::core

namespace rnnx {

bool autotune_enabled() {
  return core::autotune_enabled();
}
std::string autotune_cache_file() {
  return core::cache_file();
}

}  // namespace rnnx
