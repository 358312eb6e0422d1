// The algorithm search's memory: the choice made for each problem key, kept in memory for
// the process and, when RNNX_AUTOTUNE_CACHE names a file, on disk across processes. Keys
// and choices are texts owned by the backend that searches; this file only stores them.
#pragma once

#include <optional>
#include <string>

#include "rnnx/config.hpp"

namespace rnnx::core {

// The config's part of a search key, for the cpu and the cuDNN search alike: every field of
// the table (rnnx/config_fields.hpp) as name=value, but those that cannot change which
// algorithm is fastest: the dropout key (seed) and the value written at padded positions
// (padding_fill). `math` is left out too: the keys carry the resolved mode, what runs.
std::string config_search_key(const Config& config);

// RNNX_AUTOTUNE: unset or "1" searches, "0" takes the heuristic. Throws
// Error(invalid_argument) naming the variable for any other value.
bool autotune_enabled();
// RNNX_AUTOTUNE_CACHE, or "" when unset.
std::string cache_file();

// The choice stored for `key`: from memory, else from the file RNNX_AUTOTUNE_CACHE names
// (read when that name is first seen; lines "key<TAB>choice", the last line of a key wins,
// other lines are ignored). Empty when there is none.
std::optional<std::string> autotune_lookup(const std::string& key);

// Remembers a choice, and appends it to RNNX_AUTOTUNE_CACHE's file when set (one write of
// one line, so processes sharing the file do not interleave). A file that cannot be
// written is skipped: the cache is an optimisation, never a reason for a call to fail.
// Keys and choices must not contain tabs or newlines.
void autotune_store(const std::string& key, const std::string& choice);
// Remembers a choice for this process only (the file is not written).
void autotune_remember(const std::string& key, const std::string& choice);

// Forgets the in-memory choices and which files were read (tests).
void autotune_clear_memory();

}  // namespace rnnx::core
