// name=value texts (key_value_text.hpp).
#include "core/key_value_text.hpp"

#include "rnnx/error.hpp"

namespace rnnx::core {

std::vector<std::pair<std::string, std::string>> parse_key_values(std::string_view text,
                                                                  const char* what,
                                                                  const char* noun) {
  std::vector<std::pair<std::string, std::string>> items;
  size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ' ') {
      ++pos;
      continue;
    }
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(pos, end - pos);
    pos = end;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      throw Error(Status::invalid_argument, std::string(what) + ": \"" + std::string(item) +
                                                "\" is not of the form " + noun + "=value");
    }
    std::string name(item.substr(0, eq));
    for (const auto& [seen, value] : items) {
      if (seen == name) {
        throw Error(Status::invalid_argument, std::string(what) + ": " + name + " is given twice");
      }
    }
    items.emplace_back(std::move(name), std::string(item.substr(eq + 1)));
  }
  return items;
}

}  // namespace rnnx::core
