// The loader of backend_plugin.hpp: finds and dlopens a plugin, checks its table
// (backend_plugin_abi.h) against this build, and wraps its plans and memory.
#include "core/backend_plugin.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "core/backend_plugin_abi.h"
#include "core/backend_registry.hpp"
#include "rnnx/config_fields.hpp"
#include "rnnx/error.hpp"
#include "rnnx/plugin.hpp"
#include "rnnx/version.hpp"

namespace rnnx::core {
namespace {

constexpr Backend kBackends[] = {Backend::reference, Backend::cpu, Backend::cuda};
constexpr int kSlots = static_cast<int>(std::size(kBackends));

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(Status::invalid_argument, msg);
}

std::string dl_reason() {
  const char* e = dlerror();
  return e != nullptr ? e : "no reason given";
}

// A plugin's failure as rnnx::Error: its status (an unknown value counts as internal) and
// its message, intact.
void check(int32_t status, const rnnx_plugin_error& error) {
  if (status == RNNX_PLUGIN_OK) return;
  const bool known = status >= static_cast<int32_t>(Status::invalid_argument) &&
                     status <= static_cast<int32_t>(Status::out_of_memory);
  throw Error(known ? static_cast<Status>(status) : Status::internal,
              std::string(error.message, strnlen(error.message, sizeof error.message)));
}

// Calls f(&error) and throws what the plugin reported.
template <typename F>
void call(F&& f) {
  rnnx_plugin_error error{};
  check(f(&error), error);
}

// The plugin tables, by backend, for the release functions of the buffers they allocate
// (core::Buffer's deleter is a plain function).
const rnnx_backend_plugin* g_tables[kSlots] = {};
template <int Slot>
void release(void* p) {
  g_tables[Slot]->memory_free(p);
}
constexpr void (*kRelease[kSlots])(void*) = {&release<0>, &release<1>, &release<2>};

class PluginMemory final : public Memory {
 public:
  PluginMemory(const rnnx_backend_plugin* t, void (*free_fn)(void*)) : t_(t), free_(free_fn) {}
  Buffer allocate(size_t bytes, const char* what, const char* part) const override {
    void* p = nullptr;
    call([&](rnnx_plugin_error* e) { return t_->memory_allocate(bytes, what, part, &p, e); });
    return Buffer(p, BufferFree{free_});
  }
  void zero(void* dst, size_t bytes, void* stream) const override {
    call([&](rnnx_plugin_error* e) { return t_->memory_zero(dst, bytes, stream, e); });
  }
  void copy_from_host(void* dst, const void* src, size_t bytes, void* stream) const override {
    call([&](rnnx_plugin_error* e) {
      return t_->memory_copy_from_host(dst, src, bytes, stream, e);
    });
  }
  void copy_to_host(void* dst, const void* src, size_t bytes, void* stream) const override {
    call([&](rnnx_plugin_error* e) { return t_->memory_copy_to_host(dst, src, bytes, stream, e); });
  }
  void wait(void* stream) const override {
    call([&](rnnx_plugin_error* e) { return t_->memory_wait(stream, e); });
  }
  bool on_device() const override { return t_->on_device != 0; }

 private:
  const rnnx_backend_plugin* t_;
  void (*free_)(void*);
};

struct Loaded {
  std::string path;
  const rnnx_backend_plugin* table = nullptr;
  std::unique_ptr<PluginMemory> memory;
};

// Loaded plugins and registered paths, by backend; never unloaded (plans and buffers may
// outlive any owner here).
struct Plugins {
  std::mutex mutex;
  std::optional<Loaded> loaded[kSlots];
  std::string registered[kSlots];
};
Plugins& plugins() {
  static Plugins* p = new Plugins;  // never destroyed: buffers may be freed at exit
  return *p;
}

int slot(Backend b) {
  return static_cast<int>(b);
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Loads `path` (the caller holds the mutex). Throws Error(invalid_argument) naming it.
const Loaded& load_locked(Plugins& ps, const std::string& path) {
  const std::string who = "backend plugin " + path;
  if (path.empty()) invalid("backend plugin: the path is empty");
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) invalid(who + ": cannot load it: " + dl_reason());
  // Refused plugins are closed again; accepted ones stay for the process.
  const auto refuse = [&](const std::string& why) {
    dlclose(lib);
    invalid(who + ": " + why);
  };
  dlerror();
  void* entry = dlsym(lib, RNNX_PLUGIN_ENTRY_SYMBOL);
  if (entry == nullptr) {
    refuse(std::string("not an rnnx backend plugin (no symbol ") + RNNX_PLUGIN_ENTRY_SYMBOL + ": " +
           dl_reason() + ")");
  }
  const rnnx_backend_plugin* t = reinterpret_cast<rnnx_backend_plugin_entry_fn>(entry)();
  if (t == nullptr) refuse("its entry returned no table");
  if (t->abi_version != RNNX_PLUGIN_ABI_VERSION) {
    refuse("it speaks plugin ABI version " + std::to_string(t->abi_version) +
           ", this librnnx (rnnx " RNNX_VERSION_STRING ") speaks version " +
           std::to_string(RNNX_PLUGIN_ABI_VERSION) + ": install the plugin of this rnnx version");
  }
  const std::string version = t->rnnx_version != nullptr ? t->rnnx_version : "(none)";
  if (version != RNNX_VERSION_STRING) {
    refuse("it was built for rnnx " + version +
           ", this librnnx is rnnx " RNNX_VERSION_STRING
           ": install the plugin of the same version");
  }
  const std::string name = t->backend != nullptr ? t->backend : "";
  Backend backend{};
  try {
    backend = backend_from_string(name);
  } catch (const Error&) {
    refuse("it brings backend \"" + name + "\", which this rnnx does not know");
  }
  if (backend_built(backend)) {
    refuse("it brings backend " + name + ", which this librnnx has built in");
  }
  std::optional<Loaded>& l = ps.loaded[slot(backend)];
  if (l) {
    if (l->table == t) {
      dlclose(lib);  // the same file again: one reference is enough
      return *l;
    }
    refuse("it brings backend " + name + ", whose plugin is already loaded from " + l->path);
  }
  g_tables[slot(backend)] = t;
  l.emplace();
  l->path = path;
  l->table = t;
  l->memory = std::make_unique<PluginMemory>(t, kRelease[slot(backend)]);
  return *l;
}

// Where librnnx (this code) was loaded from: its folder, or "" when unknown.
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_folder), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  const std::string file = info.dli_fname;
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? "." : file.substr(0, slash);
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// Where b's plugin would come from, with the place named for messages; nullopt when none.
std::optional<std::pair<std::string, std::string>> candidate(const Plugins& ps, Backend b) {
  const std::string name = to_string(b);
  if (!ps.registered[slot(b)].empty()) {
    return std::pair{ps.registered[slot(b)], std::string("registered by register_backend_plugin")};
  }
  const std::string var = "RNNX_" + upper(name) + "_PLUGIN";
  if (const char* env = std::getenv(var.c_str()); env != nullptr && *env != '\0') {
    return std::pair{std::string(env), "from " + var};
  }
  const std::string beside = own_folder() + "/librnnx_" + name + ".so";
  if (file_exists(beside)) return std::pair{beside, std::string("beside librnnx")};
  return std::nullopt;
}

// b's loaded plugin, loading it from its candidate; nullptr when there is none. Throws
// Error(invalid_argument) from load_locked, the place added.
const Loaded* find_locked(Plugins& ps, Backend b) {
  if (ps.loaded[slot(b)]) return &*ps.loaded[slot(b)];
  const auto where = candidate(ps, b);
  if (!where) return nullptr;
  try {
    return &load_locked(ps, where->first);
  } catch (const Error& e) {
    invalid(std::string(e.what()) + " [" + where->second + "]");
  }
}

// A plan of a plugin's backend: the plugin builds and runs it.
class PluginBackend final : public BackendImpl {
 public:
  PluginBackend(const PlanContext& ctx, const Loaded& plugin)
      : BackendImpl(ctx), t_(plugin.table), memory_(plugin.memory.get()) {
    const std::string config = to_string(ctx.config);
    const std::string cpu = to_string(ctx.options.cpu);
    const SequenceShape& s = ctx.shape;
    rnnx_plugin_plan_desc d{};
    d.config = config.c_str();
    d.layout = static_cast<int32_t>(s.layout);
    d.max_seq_len = s.max_seq_len;
    d.batch = s.batch;
    d.lengths = s.lengths.data();
    d.num_lengths = s.lengths.size();
    d.batch_sizes = s.batch_sizes.data();
    d.num_batch_sizes = s.batch_sizes.size();
    d.sorted_indices = s.sorted_indices.data();
    d.num_sorted_indices = s.sorted_indices.size();
    d.backend = static_cast<int32_t>(ctx.options.backend);
    d.num_threads = ctx.options.num_threads;
    d.purpose = static_cast<int32_t>(ctx.options.purpose);
    d.cpu_choices = cpu.c_str();
    d.math = static_cast<int32_t>(ctx.math);
    call([&](rnnx_plugin_error* e) { return t_->plan_create(&d, &plan_, e); });
    try {
      call([&](rnnx_plugin_error* e) { return t_->plan_sizes(plan_, &sizes_, e); });
      char text[512] = {};
      call([&](rnnx_plugin_error* e) { return t_->plan_name(plan_, text, sizeof text, e); });
      name_ = std::string(text, strnlen(text, sizeof text));
    } catch (...) {
      t_->plan_destroy(plan_);
      throw;
    }
  }
  ~PluginBackend() override { t_->plan_destroy(plan_); }
  PluginBackend(const PluginBackend&) = delete;
  PluginBackend& operator=(const PluginBackend&) = delete;

  std::string name() const override { return name_; }
  size_t forward_workspace_size(bool training) const override {
    return training ? sizes_.forward_workspace_training : sizes_.forward_workspace_inference;
  }
  size_t backward_workspace_size() const override { return sizes_.backward_workspace; }
  size_t reserve_size() const override { return sizes_.reserve; }

  void forward(const ForwardArgs& a, void* workspace) override {
    const rnnx_plugin_forward_args f{.x = a.x,
                                     .h0 = a.h0,
                                     .c0 = a.c0,
                                     .weights = a.weights,
                                     .y = a.y,
                                     .hy = a.hy,
                                     .cy = a.cy,
                                     .training = a.training ? 1 : 0,
                                     .dropout_counter = a.dropout_counter,
                                     .workspace = a.workspace,
                                     .workspace_size = a.workspace_size,
                                     .reserve = a.reserve,
                                     .reserve_size = a.reserve_size,
                                     .stream = a.stream};
    call([&](rnnx_plugin_error* e) { return t_->plan_forward(plan_, &f, workspace, e); });
  }
  void backward(const BackwardArgs& a, void* workspace, uint64_t dropout_counter) override {
    const rnnx_plugin_backward_args b{.x = a.x,
                                      .h0 = a.h0,
                                      .c0 = a.c0,
                                      .weights = a.weights,
                                      .dy = a.dy,
                                      .dhy = a.dhy,
                                      .dcy = a.dcy,
                                      .dx = a.dx,
                                      .dh0 = a.dh0,
                                      .dc0 = a.dc0,
                                      .dweights = a.dweights,
                                      .weight_grad_mode = static_cast<int32_t>(a.weight_grad_mode),
                                      .workspace = a.workspace,
                                      .workspace_size = a.workspace_size,
                                      .reserve = a.reserve,
                                      .reserve_size = a.reserve_size,
                                      .stream = a.stream};
    call([&](rnnx_plugin_error* e) {
      return t_->plan_backward(plan_, &b, workspace, dropout_counter, e);
    });
  }
  const Memory& memory() const override { return *memory_; }
  bool takes_stream() const override { return t_->takes_stream != 0; }

 private:
  const rnnx_backend_plugin* t_;
  const PluginMemory* memory_;
  void* plan_ = nullptr;
  rnnx_plugin_sizes sizes_{};
  std::string name_;
};

}  // namespace

std::unique_ptr<BackendImpl> make_plugin_backend(const PlanContext& ctx, const std::string& built) {
  const Backend b = ctx.options.backend;
  const std::string name = to_string(b);
  const std::string head = "backend (= " + name + ") is not in this build, which has " + built;
#ifdef RNNX_INSIDE_PLUGIN
  // A plugin's own copy of core (cmake/CudaPlugin.cmake) loads no plugins.
  throw Error(Status::unsupported, head);
#endif
  Plugins& ps = plugins();
  const Loaded* plugin = nullptr;
  {
    std::lock_guard<std::mutex> lock(ps.mutex);
    try {
      plugin = find_locked(ps, b);
    } catch (const Error& e) {
      throw Error(Status::unsupported, head + ", and its plugin did not load: " + e.what());
    }
  }
  if (plugin == nullptr) {
    throw Error(Status::unsupported,
                head + "; no plugin for it was found (rnnx::load_backend_plugin, RNNX_" +
                    upper(name) + "_PLUGIN, or librnnx_" + name + ".so beside librnnx; the " +
                    "pip wheel rnnx-" + name + " brings one)");
  }
  return std::make_unique<PluginBackend>(ctx, *plugin);
}

std::string describe_plugins() {
#ifdef RNNX_INSIDE_PLUGIN
  return "";
#endif
  Plugins& ps = plugins();
  std::lock_guard<std::mutex> lock(ps.mutex);
  std::string text;
  for (Backend b : kBackends) {
    if (backend_built(b)) continue;
    std::string line;
    try {
      const Loaded* l = find_locked(ps, b);
      if (l == nullptr) continue;
      char described[1024] = {};
      rnnx_plugin_error error{};
      const int32_t status = l->table->describe(described, sizeof described, &error);
      line =
          std::string(to_string(b)) + " from " + l->path + " (" + l->table->built_with + "; " +
          (status == RNNX_PLUGIN_OK ? std::string(described, strnlen(described, sizeof described))
                                    : std::string("describe failed: ") + error.message) +
          ")";
    } catch (const Error& e) {
      line = std::string(to_string(b)) + " not loaded: " + e.what();
    }
    text += (text.empty() ? "" : "; ") + line;
  }
  return text;
}

}  // namespace rnnx::core

namespace rnnx {

Backend load_backend_plugin(const std::string& path) {
  core::Plugins& ps = core::plugins();
  std::lock_guard<std::mutex> lock(ps.mutex);
  const core::Loaded& l = core::load_locked(ps, path);
  return backend_from_string(l.table->backend);
}

void register_backend_plugin(Backend backend, const std::string& path) {
  if (core::slot(backend) < 0 || core::slot(backend) >= core::kSlots) {
    core::invalid("register_backend_plugin: backend (= " +
                  std::to_string(static_cast<int>(backend)) + ") is not a backend");
  }
  const std::string name = to_string(backend);
  if (path.empty()) core::invalid("register_backend_plugin: the path for " + name + " is empty");
  if (core::backend_built(backend)) {
    core::invalid("register_backend_plugin: backend " + name + " is built into this librnnx");
  }
  core::Plugins& ps = core::plugins();
  std::lock_guard<std::mutex> lock(ps.mutex);
  ps.registered[core::slot(backend)] = path;
}

}  // namespace rnnx
