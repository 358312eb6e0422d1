// rnnx._rnnx: the pybind11 layer over the C++ API. Config (ONNX's cell options included),
// weight layout, the ONNX weight converters and Plan, with execution on caller buffers passed
// through the buffer protocol (NumPy arrays, or torch tensors through .numpy()): nothing is
// copied and the GIL is released while a plan runs. rnnx::Error becomes rnnx.Error subclasses
// chosen by its code.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rnnx/config_fields.hpp"
#include "rnnx/rnnx.hpp"

namespace py = pybind11;
using namespace py::literals;

namespace {

// ---- exceptions -------------------------------------------------------------------------

// Created once at import and kept for the life of the process, like py::exception does.
struct ExceptionTypes {
  PyObject* error = nullptr;
  PyObject* invalid_argument = nullptr;
  PyObject* unsupported = nullptr;
  PyObject* internal = nullptr;
  PyObject* out_of_memory = nullptr;
};
ExceptionTypes g_exc;

PyObject* new_exception(py::module_& m, const char* name, const py::tuple& bases, py::object code,
                        const char* doc) {
  py::dict attrs;
  attrs["code"] = std::move(code);
  const std::string qualified = std::string("rnnx.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), attrs.ptr());
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

void register_exceptions(py::module_& m) {
  g_exc.error = new_exception(m, "Error", py::make_tuple(py::handle(PyExc_Exception)), py::none(),
                              "An error reported by rnnx. `code` names its kind: "
                              "'invalid_argument', 'unsupported', 'internal', 'out_of_memory'.");
  py::handle base(g_exc.error);
  g_exc.invalid_argument =
      new_exception(m, "InvalidArgumentError", py::make_tuple(base, py::handle(PyExc_ValueError)),
                    py::str("invalid_argument"), "The input breaks rnnx's contract.");
  g_exc.unsupported = new_exception(
      m, "UnsupportedError", py::make_tuple(base, py::handle(PyExc_NotImplementedError)),
      py::str("unsupported"), "Valid input that this backend or build cannot run.");
  g_exc.internal =
      new_exception(m, "InternalError", py::make_tuple(base, py::handle(PyExc_RuntimeError)),
                    py::str("internal"), "A bug in rnnx or a failure of a library it calls.");
  g_exc.out_of_memory =
      new_exception(m, "OutOfMemoryError", py::make_tuple(base, py::handle(PyExc_MemoryError)),
                    py::str("out_of_memory"), "rnnx could not allocate memory.");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const rnnx::Error& e) {
      PyObject* type = g_exc.internal;
      switch (e.code()) {
        case rnnx::Status::invalid_argument:
          type = g_exc.invalid_argument;
          break;
        case rnnx::Status::unsupported:
          type = g_exc.unsupported;
          break;
        case rnnx::Status::out_of_memory:
          type = g_exc.out_of_memory;
          break;
        default:
          break;
      }
      PyErr_SetString(type, e.what());
    }
  });
}

[[noreturn]] void invalid(const std::string& msg) {
  throw rnnx::Error(rnnx::Status::invalid_argument, msg);
}

// ---- enums as strings -------------------------------------------------------------------

// "weight_ih" for "weight_ih_l1_reverse": the parameter's kind, by PyTorch's naming.
std::string kind_of(const rnnx::WeightParam& p) {
  return p.name.substr(0, p.name.rfind("_l"));
}

py::object clip_value(const rnnx::Clip& c) {
  if (!c.enabled) return py::none();
  return py::make_tuple(c.lo, c.hi);
}

// ---- ONNX activations --------------------------------------------------------------------

// Optional alpha/beta of one activation entry: None keeps ONNX's default.
double activation_param(const py::handle& v, double fallback, const std::string& what) {
  if (v.is_none()) return fallback;
  try {
    return v.cast<double>();
  } catch (const py::cast_error&) {
    invalid(what + " must be a number or None, got " + std::string(py::repr(v)));
  }
}

// One entry of Config(activations=[...]): "LeakyRelu", ("LeakyRelu", 0.1),
// ("ScaledTanh", 2.0, 0.5) or {"name": "Elu", "alpha": 0.5}; names are ONNX's, in any case.
rnnx::Activation parse_activation(const py::handle& e, size_t index) {
  const std::string where = "activations[" + std::to_string(index) + "]";
  py::object name = py::none(), alpha = py::none(), beta = py::none();
  if (py::isinstance<py::str>(e)) {
    name = py::reinterpret_borrow<py::object>(e);
  } else if (py::isinstance<py::dict>(e)) {
    for (auto item : py::reinterpret_borrow<py::dict>(e)) {
      const std::string key = py::str(item.first);
      if (key == "name") {
        name = py::reinterpret_borrow<py::object>(item.second);
      } else if (key == "alpha") {
        alpha = py::reinterpret_borrow<py::object>(item.second);
      } else if (key == "beta") {
        beta = py::reinterpret_borrow<py::object>(item.second);
      } else {
        invalid(where + " has key '" + key + "'; the keys are name, alpha, beta");
      }
    }
  } else if (py::isinstance<py::sequence>(e)) {
    const auto seq = py::reinterpret_borrow<py::sequence>(e);
    if (seq.size() < 1 || seq.size() > 3) {
      invalid(where + " has " + std::to_string(seq.size()) +
              " items; give (name), (name, alpha) or (name, alpha, beta)");
    }
    name = seq[0];
    if (seq.size() > 1) alpha = seq[1];
    if (seq.size() > 2) beta = seq[2];
  } else {
    invalid(where + " must be a name, a tuple (name, alpha, beta) or a dict, got " +
            std::string(py::repr(e)));
  }
  if (!py::isinstance<py::str>(name)) {
    invalid(where + ": the name must be a string, got " + std::string(py::repr(name)));
  }
  rnnx::Activation a;
  try {
    a = rnnx::default_activation(rnnx::activation_from_string(name.cast<std::string>()));
  } catch (const rnnx::Error& err) {
    invalid(where + ": " + err.what());
  }
  a.alpha = activation_param(alpha, a.alpha, where + " alpha");
  a.beta = activation_param(beta, a.beta, where + " beta");
  return a;
}

std::vector<rnnx::Activation> parse_activations(const py::object& acts) {
  std::vector<rnnx::Activation> out;
  if (acts.is_none()) return out;
  if (py::isinstance<py::str>(acts) || !py::isinstance<py::sequence>(acts)) {
    invalid(
        "activations must be None or a list of ONNX activation names, (name, alpha, beta) "
        "tuples or dicts, got " +
        std::string(py::repr(acts)));
  }
  size_t i = 0;
  for (const auto e : acts) out.push_back(parse_activation(e, i++));
  return out;
}

py::tuple activation_value(const rnnx::Activation& a) {
  return py::make_tuple(rnnx::to_string(a.kind), a.alpha, a.beta);
}

py::list activation_list(const std::vector<rnnx::Activation>& acts) {
  py::list out;
  for (const auto& a : acts) out.append(activation_value(a));
  return out;
}

// ---- Config from the field table (rnnx/config_fields.hpp) ----------------------------------

// One conversion each way per value type of a field: a new field of an existing type needs
// no code here.
[[noreturn]] void wrong_type(const char* field, const char* takes, const py::handle& v) {
  throw py::type_error(std::string(field) + " must be " + takes + ", got " +
                       std::string(py::repr(v)));
}

template <typename T>
T cast_field(const py::handle& v, const char* field, const char* takes) {
  try {
    return v.cast<T>();
  } catch (const py::cast_error&) {
    wrong_type(field, takes, v);
  }
}

std::string string_field(const py::handle& v, const char* field) {
  if (!py::isinstance<py::str>(v)) wrong_type(field, "a string", v);
  return v.cast<std::string>();
}

void from_py(rnnx::CellType* out, const char* f, const py::handle& v) {
  *out = rnnx::cell_from_string(string_field(v, f));
}
void from_py(rnnx::DataType* out, const char* f, const py::handle& v) {
  *out = rnnx::dtype_from_string(string_field(v, f));
}
void from_py(rnnx::NanPolicy* out, const char* f, const py::handle& v) {
  *out = rnnx::nan_policy_from_string(string_field(v, f));
}
void from_py(rnnx::MathMode* out, const char* f, const py::handle& v) {
  *out = rnnx::math_mode_from_string(string_field(v, f));
}
void from_py(bool* out, const char* f, const py::handle& v) {
  *out = cast_field<bool>(v, f, "True or False");
}
void from_py(int64_t* out, const char* f, const py::handle& v) {
  if (py::isinstance<py::float_>(v)) wrong_type(f, "an integer", v);
  *out = cast_field<int64_t>(v, f, "an integer");
}
void from_py(uint64_t* out, const char* f, const py::handle& v) {
  if (py::isinstance<py::float_>(v)) wrong_type(f, "an integer", v);
  if (py::isinstance<py::int_>(v) && v.cast<py::int_>() < py::int_(0)) {
    invalid(std::string(f) + " (= " + std::string(py::str(v)) + ") must be in [0, 2**64)");
  }
  *out = cast_field<uint64_t>(v, f, "an integer in [0, 2**64)");
}
void from_py(double* out, const char* f, const py::handle& v) {
  *out = cast_field<double>(v, f, "a real number");
}
void from_py(rnnx::Clip* out, const char* f, const py::handle& v) {
  if (v.is_none()) {
    *out = rnnx::Clip{};
    return;
  }
  if (!py::isinstance<py::sequence>(v) || py::isinstance<py::str>(v) || py::len(v) != 2) {
    wrong_type(f, "None or a pair (lo, hi)", v);
  }
  const std::string name(f);
  *out =
      rnnx::Clip{true, cast_field<double>(v[py::int_(0)], (name + " lo").c_str(), "a real number"),
                 cast_field<double>(v[py::int_(1)], (name + " hi").c_str(), "a real number")};
}
void from_py(std::vector<rnnx::Activation>* out, const char*, const py::handle& v) {
  *out = parse_activations(py::reinterpret_borrow<py::object>(v));
}

py::object to_py(rnnx::CellType v) {
  return py::str(rnnx::to_string(v));
}
py::object to_py(rnnx::DataType v) {
  return py::str(rnnx::to_string(v));
}
py::object to_py(rnnx::NanPolicy v) {
  return py::str(rnnx::to_string(v));
}
py::object to_py(rnnx::MathMode v) {
  return py::str(rnnx::to_string(v));
}
py::object to_py(bool v) {
  return py::bool_(v);
}
py::object to_py(int64_t v) {
  return py::int_(v);
}
py::object to_py(uint64_t v) {
  return py::int_(v);
}
py::object to_py(double v) {
  return py::float_(v);
}
py::object to_py(const rnnx::Clip& v) {
  return clip_value(v);
}
py::object to_py(const std::vector<rnnx::Activation>& v) {
  return activation_list(v);
}

rnnx::Config config_from_kwargs(const py::kwargs& kwargs) {
  for (const auto& item : kwargs) {  // first, so that a misspelt field is named as such
    const std::string key = py::str(item.first);
    if (!rnnx::is_config_field(key)) {
      std::string fields;
      rnnx::for_each_config_field([&](const char* name, auto) {
        if (!fields.empty()) fields += ", ";
        fields += name;
      });
      throw py::type_error("rnnx.Config: unexpected keyword argument '" + key +
                           "' (the fields: " + fields + ")");
    }
  }
  for (const char* required : rnnx::kRequiredConfigFields) {
    if (!kwargs.contains(required)) {
      throw py::type_error(std::string("rnnx.Config: the keyword argument ") + required +
                           " is required (cell, input_size and hidden_size always are)");
    }
  }
  rnnx::Config c;
  rnnx::for_each_config_field([&](const char* name, auto member) {
    if (kwargs.contains(name)) from_py(&(c.*member), name, kwargs[name]);
  });
  rnnx::validate(c);
  return c;
}

py::dict config_dict(const rnnx::Config& c) {
  py::dict d;
  rnnx::for_each_config_field([&](const char* name, auto member) { d[name] = to_py(c.*member); });
  return d;
}

// The required fields, then every field that differs from its default, as keyword
// arguments that rebuild the config.
std::string config_repr(const rnnx::Config& c) {
  const rnnx::Config defaults;
  std::string s = "rnnx.Config(";
  rnnx::for_each_config_field([&](const char* name, auto member) {
    bool required = false;
    for (const char* r : rnnx::kRequiredConfigFields) required = required || std::string(r) == name;
    if (!required && c.*member == defaults.*member) return;
    if (s.back() != '(') s += ", ";
    const py::object value = to_py(c.*member);
    std::string text = py::repr(value);
    if (py::isinstance<py::float_>(value) && !std::isfinite(value.cast<double>())) {
      text = "float('" + text + "')";  // nan, inf and -inf have no literal
    }
    s += std::string(name) + "=" + text;
  });
  return s + ")";
}

// ---- buffers ----------------------------------------------------------------------------

// Holds the Py_buffer views of one call; released (with the GIL held) when it goes out of
// scope after the computation.
class Views {
 public:
  // A dense tensor of `numel` elements of the plan's dtype, or nullptr for None.
  void* tensor(const py::object& obj, const std::string& name, bool writable, int64_t numel,
               rnnx::DataType dtype) {
    if (obj.is_none()) return nullptr;
    py::buffer_info& info = request(obj, name, writable);
    const int64_t elem = rnnx::dtype_size(dtype);
    std::string fmt = info.format;
    if (!fmt.empty() && (fmt[0] == '@' || fmt[0] == '=' || fmt[0] == '<')) fmt.erase(0, 1);
    // bfloat16 has no buffer format (NumPy has no such type): its bits come as 16-bit
    // integers (a torch.bfloat16 tensor viewed as torch.int16, or np.uint16). float16 is
    // NumPy's float16 ('e').
    const bool bf16 = dtype == rnnx::DataType::bf16;
    const char want = dtype == rnnx::DataType::f32 ? 'f' : dtype == rnnx::DataType::f16 ? 'e' : 'd';
    const bool format_ok =
        fmt.size() == 1 && (bf16 ? (fmt[0] == 'H' || fmt[0] == 'h') : fmt[0] == want);
    if (info.itemsize != elem || !format_ok) {
      invalid(name + " has element format '" + info.format + "' (itemsize " +
              std::to_string(info.itemsize) + ") but the plan's dtype is " +
              rnnx::to_string(dtype) + (bf16 ? " (pass its bits as int16 or uint16)" : ""));
    }
    int64_t expected_stride = elem, count = 1;
    for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
      if (info.shape[d] != 1 && info.strides[d] != expected_stride) {
        invalid(name + " must be C-contiguous (dim " + std::to_string(d) + " has stride " +
                std::to_string(info.strides[d]) + " bytes, dense would be " +
                std::to_string(expected_stride) + ")");
      }
      expected_stride *= info.shape[d];
      count *= info.shape[d];
    }
    if (count != numel) {
      invalid(name + " has " + std::to_string(count) + " elements but the plan needs " +
              std::to_string(numel));
    }
    return info.ptr;
  }

  // Raw bytes (workspace, reserve): any C-contiguous buffer; returns its size in bytes.
  std::pair<void*, size_t> bytes(const py::object& obj, const std::string& name, bool writable) {
    if (obj.is_none()) return {nullptr, 0};
    py::buffer_info& info = request(obj, name, writable);
    int64_t expected_stride = info.itemsize;
    for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
      if (info.shape[d] != 1 && info.strides[d] != expected_stride) {
        invalid(name + " must be C-contiguous");
      }
      expected_stride *= info.shape[d];
    }
    return {info.ptr, static_cast<size_t>(info.size * info.itemsize)};
  }

 private:
  py::buffer_info& request(const py::object& obj, const std::string& name, bool writable) {
    if (!PyObject_CheckBuffer(obj.ptr())) {
      invalid(name + " must support the buffer protocol (a NumPy array), got " +
              std::string(py::str(py::type::of(obj).attr("__name__"))));
    }
    try {
      views_.push_back(py::reinterpret_borrow<py::buffer>(obj).request(writable));
    } catch (py::error_already_set& e) {
      invalid(name + ": " + (writable ? "a writable buffer is needed: " : "") + e.what());
    }
    return views_.back();
  }

  std::vector<py::buffer_info> views_;
};

// ---- ONNX weights -----------------------------------------------------------------------

using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

// An ONNX tensor as a dense float64 array (one conversion copy unless it already is one) of
// exactly `shape`; an empty optional for None.
std::optional<DoubleArray> onnx_tensor(const py::object& obj, const std::string& name,
                                       const std::vector<int64_t>& shape, const char* dims) {
  if (obj.is_none()) return std::nullopt;
  DoubleArray a = DoubleArray::ensure(obj);
  if (!a) {
    PyErr_Clear();
    invalid(name + " must be a numeric array, got " +
            std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  std::vector<int64_t> have(a.shape(), a.shape() + a.ndim());
  if (have != shape) {
    invalid(name + " has shape " + shape_string(have) + ", expected " + shape_string(shape) + " " +
            dims);
  }
  return a;
}

// The ONNX shapes of one layer: W [D, G*H, I_l], R [D, G*H, H], B [D, 2*G*H], P [D, 3*H].
struct OnnxShapes {
  std::vector<int64_t> W, R, B, P;
};

OnnxShapes onnx_shapes(const rnnx::Config& c, const rnnx::WeightLayout& layout, int64_t layer) {
  if (layer < 0 || layer >= c.num_layers) {
    invalid("layer (= " + std::to_string(layer) +
            ") must be in [0, num_layers (= " + std::to_string(c.num_layers) + "))");
  }
  const int64_t D = c.num_directions(), GH = rnnx::gates_per_cell(c.cell) * c.hidden_size;
  const int64_t in = layout.get(layer, 0, rnnx::WeightKind::w_ih)->cols;
  return {{D, GH, in}, {D, GH, c.hidden_size}, {D, 2 * GH}, {D, 3 * c.hidden_size}};
}

void import_onnx(const rnnx::Config& c, int64_t layer, const py::object& W, const py::object& R,
                 const py::object& B, const py::object& P, const py::object& flat) {
  const rnnx::WeightLayout layout(c);
  const OnnxShapes s = onnx_shapes(c, layout, layer);
  const auto w = onnx_tensor(W, "W", s.W, "[num_directions, gates*hidden_size, input_size]");
  const auto r = onnx_tensor(R, "R", s.R, "[num_directions, gates*hidden_size, hidden_size]");
  const auto b = onnx_tensor(B, "B", s.B, "[num_directions, 2*gates*hidden_size]");
  const auto p = onnx_tensor(P, "P", s.P, "[num_directions, 3*hidden_size]");
  if (!w || !r) invalid("import_onnx_layer: W and R are required");
  Views v;
  void* out = v.tensor(flat, "import_onnx_layer: weights", true, layout.numel(), c.dtype);
  if (out == nullptr) invalid("import_onnx_layer: weights is required");
  rnnx::import_onnx_layer(c, layout, layer, w->data(), r->data(), b ? b->data() : nullptr,
                          p ? p->data() : nullptr, out);
}

// (W, R, B, P) of one layer as new float64 arrays; B is None without bias, P without peepholes.
py::tuple export_onnx(const rnnx::Config& c, int64_t layer, const py::object& flat) {
  const rnnx::WeightLayout layout(c);
  const OnnxShapes s = onnx_shapes(c, layout, layer);
  Views v;
  const void* in = v.tensor(flat, "export_onnx_layer: weights", false, layout.numel(), c.dtype);
  if (in == nullptr) invalid("export_onnx_layer: weights is required");
  DoubleArray W(s.W), R(s.R);
  std::optional<DoubleArray> B, P;
  if (c.bias) B.emplace(s.B);
  if (c.peephole) P.emplace(s.P);
  rnnx::export_onnx_layer(c, layout, layer, in, W.mutable_data(), R.mutable_data(),
                          B ? B->mutable_data() : nullptr, P ? P->mutable_data() : nullptr);
  return py::make_tuple(W, R, B ? py::object(*B) : py::none(), P ? py::object(*P) : py::none());
}

// The bounds are formulas in the sizes: a negative size gave 0 or NaN, a bound that any
// comparison passes (or none does), rather than an error.
void check_bound_sizes(int64_t max_seq_len, int64_t batch) {
  if (max_seq_len < 0) invalid("max_seq_len (= " + std::to_string(max_seq_len) + ") must be >= 0");
  if (batch < 0) invalid("batch (= " + std::to_string(batch) + ") must be >= 0");
}

// ---- plan -------------------------------------------------------------------------------

// The GIL is released while a plan runs, and several threads may run one plan at once
// (rnnx/plan.hpp), each with its own buffers.
// A plan in Python: a batch's shape on a network (rnnx/network.hpp), which Plan.padded and
// Plan.packed make for the plan alone and Network.padded and Network.packed share among
// their batches (rnnx's engines cache networks by config, not plans by lengths). Its sizes
// come from one binding when it is made, which validates the shape (and runs the search
// where the network has no choice for its size class yet).
struct PyPlan {
  PyPlan(std::shared_ptr<rnnx::Network> n, rnnx::SequenceShape s)
      : net(std::move(n)), shape(std::move(s)), info(net->describe(shape)) {}
  std::shared_ptr<rnnx::Network> net;
  rnnx::SequenceShape shape;
  rnnx::BatchInfo info;
  const rnnx::Config& config() const { return net->config(); }
  int64_t weights_numel() const { return net->weights_numel(); }
};

struct PyNetwork {
  std::shared_ptr<rnnx::Network> net;
};

rnnx::SequenceShape padded_shape(int64_t max_seq_len, int64_t batch,
                                 std::optional<std::vector<int64_t>> lengths, bool batch_first) {
  return rnnx::SequenceShape::padded(max_seq_len, batch, lengths.value_or(std::vector<int64_t>{}),
                                     batch_first);
}
rnnx::SequenceShape packed_shape(std::vector<int64_t> batch_sizes,
                                 std::optional<std::vector<int64_t>> sorted_indices) {
  return rnnx::SequenceShape::packed(std::move(batch_sizes),
                                     sorted_indices.value_or(std::vector<int64_t>{}));
}

// The cpu backend's choices: None, their text ("isa=avx2 gemm=packed") or a dict of strings.
rnnx::CpuChoices parse_cpu_choices(const py::object& cpu) {
  if (cpu.is_none()) return {};
  if (py::isinstance<py::str>(cpu)) return rnnx::cpu_choices_from_string(cpu.cast<std::string>());
  if (!py::isinstance<py::dict>(cpu)) wrong_type("cpu", "None, a string or a dict", cpu);
  std::string text;
  for (const auto& [key, value] : cpu.cast<py::dict>()) {
    if (!py::isinstance<py::str>(key) || !py::isinstance<py::str>(value)) {
      wrong_type("cpu", "a dict of strings", cpu);
    }
    const std::string v = value.cast<std::string>();
    if (v.empty() || v.find_first_of(" =") != std::string::npos) {
      invalid("cpu choice " + key.cast<std::string>() + " (= '" + v +
              "') must be a non-empty name without spaces");
    }
    if (!text.empty()) text += ' ';
    text += key.cast<std::string>();
    text += '=';
    text += v;
  }
  return rnnx::cpu_choices_from_string(text);
}

rnnx::PlanOptions make_options(const std::string& backend, int num_threads,
                               const std::string& purpose, const py::object& cpu) {
  rnnx::PlanOptions o;
  o.backend = rnnx::backend_from_string(backend);
  o.num_threads = num_threads;
  o.purpose = rnnx::plan_purpose_from_string(purpose);
  o.cpu = parse_cpu_choices(cpu);
  return o;
}

std::string tensor_name(const char* call, const char* name) {
  return std::string(call) + ": " + name;
}

void forward(PyPlan& self, const py::object& x, const py::object& weights, const py::object& y,
             const py::object& h0, const py::object& c0, const py::object& hy, const py::object& cy,
             bool training, uint64_t dropout_counter, const py::object& workspace,
             const py::object& reserve) {
  const rnnx::BatchInfo& p = self.info;
  const rnnx::DataType dt = self.config().dtype;
  const bool lstm = self.config().cell == rnnx::CellType::lstm;
  const char* call = "forward";
  if (!lstm && !c0.is_none()) invalid("forward: c0 given but the cell is not lstm");
  if (!lstm && !cy.is_none()) invalid("forward: cy given but the cell is not lstm");
  Views v;
  rnnx::ForwardArgs a;
  a.x = v.tensor(x, tensor_name(call, "x"), false, p.x_numel, dt);
  a.weights = v.tensor(weights, tensor_name(call, "weights"), false, self.weights_numel(), dt);
  a.y = v.tensor(y, tensor_name(call, "y"), true, p.y_numel, dt);
  a.h0 = v.tensor(h0, tensor_name(call, "h0"), false, p.h_numel, dt);
  a.hy = v.tensor(hy, tensor_name(call, "hy"), true, p.h_numel, dt);
  if (lstm) {
    a.c0 = v.tensor(c0, tensor_name(call, "c0"), false, p.c_numel, dt);
    a.cy = v.tensor(cy, tensor_name(call, "cy"), true, p.c_numel, dt);
  }
  a.training = training;
  a.dropout_counter = dropout_counter;
  std::tie(a.workspace, a.workspace_size) = v.bytes(workspace, "forward: workspace", true);
  std::tie(a.reserve, a.reserve_size) = v.bytes(reserve, "forward: reserve", true);
  py::gil_scoped_release nogil;
  self.net->forward(self.shape, a);
}

void backward(PyPlan& self, const py::object& x, const py::object& weights,
              const py::object& reserve, const py::object& h0, const py::object& c0,
              const py::object& dy, const py::object& dhy, const py::object& dcy,
              const py::object& dx, const py::object& dh0, const py::object& dc0,
              const py::object& dweights, bool accumulate, const py::object& workspace) {
  const rnnx::BatchInfo& p = self.info;
  const rnnx::DataType dt = self.config().dtype;
  const bool lstm = self.config().cell == rnnx::CellType::lstm;
  const char* call = "backward";
  if (!lstm && (!c0.is_none() || !dcy.is_none() || !dc0.is_none())) {
    invalid("backward: c0/dcy/dc0 given but the cell is not lstm");
  }
  Views v;
  rnnx::BackwardArgs a;
  a.x = v.tensor(x, tensor_name(call, "x"), false, p.x_numel, dt);
  a.weights = v.tensor(weights, tensor_name(call, "weights"), false, self.weights_numel(), dt);
  a.h0 = v.tensor(h0, tensor_name(call, "h0"), false, p.h_numel, dt);
  a.dy = v.tensor(dy, tensor_name(call, "dy"), false, p.y_numel, dt);
  a.dhy = v.tensor(dhy, tensor_name(call, "dhy"), false, p.h_numel, dt);
  a.dx = v.tensor(dx, tensor_name(call, "dx"), true, p.x_numel, dt);
  a.dh0 = v.tensor(dh0, tensor_name(call, "dh0"), true, p.h_numel, dt);
  if (lstm) {
    a.c0 = v.tensor(c0, tensor_name(call, "c0"), false, p.c_numel, dt);
    a.dcy = v.tensor(dcy, tensor_name(call, "dcy"), false, p.c_numel, dt);
    a.dc0 = v.tensor(dc0, tensor_name(call, "dc0"), true, p.c_numel, dt);
  }
  a.dweights = v.tensor(dweights, tensor_name(call, "dweights"), true, self.weights_numel(), dt);
  a.weight_grad_mode = accumulate ? rnnx::GradMode::accumulate : rnnx::GradMode::overwrite;
  std::tie(a.workspace, a.workspace_size) = v.bytes(workspace, "backward: workspace", true);
  if (reserve.is_none()) invalid("backward: reserve is required (from a training forward)");
  const auto r = v.bytes(reserve, "backward: reserve", false);
  a.reserve = r.first;
  a.reserve_size = r.second;
  py::gil_scoped_release nogil;
  self.net->backward(self.shape, a);
}

// Device buffers (the cuda backend) by address: 0 is an absent tensor; sizes in bytes for
// the workspace and reserve. The plan checks what it can (required tensors, alignment, the
// reserve's header); the caller (rnnx.torch) owns the memory and the stream.
void* address(uintptr_t a) {
  return reinterpret_cast<void*>(a);
}

void forward_ptr(PyPlan& self, uintptr_t x, uintptr_t weights, uintptr_t y, uintptr_t h0,
                 uintptr_t c0, uintptr_t hy, uintptr_t cy, bool training, uint64_t dropout_counter,
                 uintptr_t workspace, size_t workspace_size, uintptr_t reserve, size_t reserve_size,
                 uintptr_t stream, uint64_t weights_version) {
  rnnx::ForwardArgs a;
  a.weights_version = weights_version;
  a.x = address(x), a.weights = address(weights), a.y = address(y);
  a.h0 = address(h0), a.c0 = address(c0), a.hy = address(hy), a.cy = address(cy);
  a.training = training;
  a.dropout_counter = dropout_counter;
  a.workspace = address(workspace), a.workspace_size = workspace_size;
  a.reserve = address(reserve), a.reserve_size = reserve_size;
  a.stream = address(stream);
  py::gil_scoped_release nogil;
  self.net->forward(self.shape, a);
}

void backward_ptr(PyPlan& self, uintptr_t x, uintptr_t weights, uintptr_t reserve,
                  size_t reserve_size, uintptr_t h0, uintptr_t c0, uintptr_t dy, uintptr_t dhy,
                  uintptr_t dcy, uintptr_t dx, uintptr_t dh0, uintptr_t dc0, uintptr_t dweights,
                  bool accumulate, uintptr_t workspace, size_t workspace_size, uintptr_t stream) {
  rnnx::BackwardArgs a;
  a.x = address(x), a.weights = address(weights), a.h0 = address(h0), a.c0 = address(c0);
  a.dy = address(dy), a.dhy = address(dhy), a.dcy = address(dcy);
  a.dx = address(dx), a.dh0 = address(dh0), a.dc0 = address(dc0), a.dweights = address(dweights);
  a.weight_grad_mode = accumulate ? rnnx::GradMode::accumulate : rnnx::GradMode::overwrite;
  a.workspace = address(workspace), a.workspace_size = workspace_size;
  a.reserve = address(reserve), a.reserve_size = reserve_size;
  a.stream = address(stream);
  py::gil_scoped_release nogil;
  self.net->backward(self.shape, a);
}

// Host buffers of one size, 64-byte aligned, kept for the next call: a lease takes one (or
// a new one) and gives it back when it ends. At most `keep` are kept (the prepared calls keep
// one): one caller at a time is the common case, and a module's workspace can be tens of MB;
// a second caller meanwhile allocates its own and lets it go.
class BufferPool {
  static constexpr size_t kAlign = 64;
  struct Free {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{kAlign}); }
  };
  using Buffer = std::unique_ptr<std::byte[], Free>;

 public:
  BufferPool(size_t bytes, size_t keep) : bytes_(std::max<size_t>(bytes, 1)), keep_(keep) {}

  class Lease {
   public:
    explicit Lease(BufferPool& pool) : pool_(pool), buffer_(pool.take()) {}
    ~Lease() { pool_.give_back(std::move(buffer_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    std::byte* get() const { return buffer_.get(); }

   private:
    BufferPool& pool_;
    Buffer buffer_;
  };

  static size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

 private:
  Buffer take() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        Buffer b = std::move(free_.back());
        free_.pop_back();
        return b;
      }
    }
    return Buffer(new (std::align_val_t{kAlign}) std::byte[bytes_]);
  }
  void give_back(Buffer b) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < keep_) free_.push_back(std::move(b));
  }

  size_t bytes_;
  size_t keep_;
  std::mutex mutex_;
  std::vector<Buffer> free_;
};

// The calling thread's thread count for one call (rnnx.torch passes torch.get_num_threads()),
// restored after it; 0 leaves it alone.
class ThreadCountScope {
 public:
  explicit ThreadCountScope(int threads)
      : threads_(threads), saved_(threads > 0 ? rnnx::max_threads() : 0) {
    if (threads_ > 0) rnnx::set_num_threads(threads_);
  }
  ~ThreadCountScope() {
    if (threads_ > 0) rnnx::set_num_threads(saved_);
  }
  ThreadCountScope(const ThreadCountScope&) = delete;
  ThreadCountScope& operator=(const ThreadCountScope&) = delete;

 private:
  int threads_;
  int saved_;
};

// rnnx.torch's cached eager call on the host (torch.py's _rnnx_fast_call, the cells' step):
// one plan at one weights address with workspaces of its own, called with positional
// addresses. Through Plan.forward_ptr and the Python engine the same call costs about 5 us at
// T=1, B=1, H=16 (keyword arguments, the Python workspace pool, two thread-count calls), a
// third of torch.nn's whole RNNCell call. y may be 0 for an inference call whose caller wants
// only the final states (a cell's step): the outputs are then written past the workspace. A
// training call (training=True at construction) writes the caller's reserve.
class PyPreparedForward {
 public:
  PyPreparedForward(const PyPlan& plan, uintptr_t weights, bool training)
      : net_(plan.net),
        shape_(plan.shape),
        weights_(weights),
        training_(training),
        workspace_size_(plan.info.forward_workspace[training ? 1 : 0]),
        buffers_(BufferPool::round_up(workspace_size_) +
                     static_cast<size_t>(plan.info.y_numel) *
                         static_cast<size_t>(rnnx::dtype_size(plan.config().dtype)),
                 1) {}

  void call(uintptr_t x, uintptr_t y, uintptr_t h0, uintptr_t c0, uintptr_t hy, uintptr_t cy,
            uint64_t weights_version, int threads, uintptr_t reserve, size_t reserve_size) {
    py::gil_scoped_release nogil;
    BufferPool::Lease buffer(buffers_);
    rnnx::ForwardArgs a;
    a.weights_version = weights_version;
    a.x = address(x), a.weights = address(weights_);
    a.y = y != 0 ? address(y) : buffer.get() + BufferPool::round_up(workspace_size_);
    a.h0 = address(h0), a.c0 = address(c0), a.hy = address(hy), a.cy = address(cy);
    a.workspace = workspace_size_ > 0 ? buffer.get() : nullptr;
    a.workspace_size = workspace_size_;
    a.training = training_;
    a.reserve = address(reserve), a.reserve_size = reserve_size;
    ThreadCountScope thread_count(threads);
    net_->forward(shape_, a);
  }

 private:
  std::shared_ptr<rnnx::Network> net_;
  rnnx::SequenceShape shape_;
  uintptr_t weights_;
  bool training_;
  size_t workspace_size_;
  BufferPool buffers_;  // the workspace, then room for a y the caller does not want
};

// The backward of a PyPreparedForward's training call (rnnx.torch's cached eager training
// call): the same plan and weights address, workspaces of its own, positional addresses.
class PyPreparedBackward {
 public:
  PyPreparedBackward(const PyPlan& plan, uintptr_t weights)
      : net_(plan.net),
        shape_(plan.shape),
        weights_(weights),
        workspace_size_(plan.info.backward_workspace),
        buffers_(workspace_size_, 1) {}

  void call(uintptr_t x, uintptr_t reserve, size_t reserve_size, uintptr_t h0, uintptr_t c0,
            uintptr_t dy, uintptr_t dhy, uintptr_t dcy, uintptr_t dx, uintptr_t dh0, uintptr_t dc0,
            uintptr_t dweights, int threads) {
    py::gil_scoped_release nogil;
    BufferPool::Lease buffer(buffers_);
    rnnx::BackwardArgs a;
    a.x = address(x), a.weights = address(weights_), a.h0 = address(h0), a.c0 = address(c0);
    a.dy = address(dy), a.dhy = address(dhy), a.dcy = address(dcy);
    a.dx = address(dx), a.dh0 = address(dh0), a.dc0 = address(dc0), a.dweights = address(dweights);
    a.workspace = workspace_size_ > 0 ? buffer.get() : nullptr;
    a.workspace_size = workspace_size_;
    a.reserve = address(reserve), a.reserve_size = reserve_size;
    ThreadCountScope thread_count(threads);
    net_->backward(shape_, a);
  }

 private:
  std::shared_ptr<rnnx::Network> net_;
  rnnx::SequenceShape shape_;
  uintptr_t weights_;
  size_t workspace_size_;
  BufferPool buffers_;
};

}  // namespace

PYBIND11_MODULE(_rnnx, m) {
  m.doc() = "rnnx: fused recurrent operators (low-level bindings; use the rnnx package)";
  register_exceptions(m);

  m.attr("__version__") = RNNX_VERSION_STRING;
  // The calling thread's thread count (rnnx::set_num_threads, rnnx::max_threads): rnnx.torch
  // sets it from torch.get_num_threads() around each call.
  m.def("set_num_threads", &rnnx::set_num_threads, "n"_a,
        "Sets the calling thread's thread count for plans without num_threads (0: the default).");
  m.def("get_num_threads", &rnnx::max_threads,
        "The calling thread's thread count for plans without num_threads.");
  m.def(
      "thread_stats",
      [](bool reset_peak) {
        const rnnx::ThreadStats s = rnnx::thread_stats(reset_peak);
        py::dict d;
        d["workers"] = s.workers;
        d["running"] = s.running;
        d["peak_running"] = s.peak_running;
        d["calls_in_flight"] = s.calls_in_flight;
        return d;
      },
      "reset_peak"_a = false,
      "rnnx's thread pool: workers started, threads running now, most at once (since the last "
      "reset_peak=True), calls in flight now.");
  // Backend plugins (rnnx/plugin.hpp): rnnx/__init__.py registers the rnnx-cuda wheel's.
  m.def(
      "load_backend_plugin",
      [](const std::string& path) {
        return std::string(rnnx::to_string(rnnx::load_backend_plugin(path)));
      },
      "path"_a,
      "Loads the backend plugin at path now (a shared library such as rnnx_cuda's "
      "librnnx_cuda.so) and returns the name of the backend it brings; raises "
      "InvalidArgumentError naming the path and the reason when it cannot.");
  m.def(
      "register_backend_plugin",
      [](const std::string& backend, const std::string& path) {
        rnnx::register_backend_plugin(rnnx::backend_from_string(backend), path);
      },
      "backend"_a, "path"_a,
      "Where the plugin of backend ('cuda') is; it is loaded when a plan or build_info() first "
      "needs it.");
  m.def("build_info", [] {
    const rnnx::BuildInfo b = rnnx::build_info();
    py::dict d;
    d["version"] = b.version;
    d["build_type"] = b.build_type;
    d["compiler"] = b.compiler;
    d["gemm_engine"] = b.gemm_engine;
    d["with_onednn"] = b.with_onednn;
    d["with_blas"] = b.with_blas;
    d["backends"] = b.backends;
    d["plugins"] = b.plugins;
    d["sanitizers"] = b.sanitizers;
    d["cpu_isa_detected"] = rnnx::cpu_isa_detected();
    d["cpu_isa_used"] = rnnx::cpu_isa_used();
    d["cpu_features"] = rnnx::cpu_features_detected();
    d["bf16_gemm"] = rnnx::cpu_bf16_gemm();
    d["int8_gemm"] = rnnx::cpu_int8_gemm();
    d["max_threads"] = rnnx::max_threads();
    return d;
  });

  py::class_<rnnx::WeightParam>(m, "WeightParam")
      .def_readonly("name", &rnnx::WeightParam::name)
      .def_property_readonly("kind", &kind_of)
      .def_readonly("layer", &rnnx::WeightParam::layer)
      .def_readonly("direction", &rnnx::WeightParam::direction)
      .def_readonly("offset", &rnnx::WeightParam::offset)
      .def_readonly("rows", &rnnx::WeightParam::rows)
      .def_readonly("cols", &rnnx::WeightParam::cols)
      .def_property_readonly("numel", &rnnx::WeightParam::numel)
      .def_property_readonly("is_bias", &rnnx::WeightParam::is_bias)
      // PyTorch's shape: biases (and peepholes) are 1-D.
      .def_property_readonly("shape",
                             [](const rnnx::WeightParam& p) -> py::tuple {
                               if (p.is_vector()) return py::make_tuple(p.rows);
                               return py::make_tuple(p.rows, p.cols);
                             })
      .def("__repr__", [](const rnnx::WeightParam& p) {
        return "rnnx.WeightParam('" + p.name + "', offset=" + std::to_string(p.offset) +
               ", rows=" + std::to_string(p.rows) + ", cols=" + std::to_string(p.cols) + ")";
      });

  py::class_<rnnx::Config> config_class(m, "Config");
  config_class
      .def(py::init(&config_from_kwargs),
           "Config(*, cell, input_size, hidden_size, **fields): a validated problem description; "
           "raises rnnx.InvalidArgumentError naming the field. The fields and their defaults are "
           "rnnx.Config.fields and Config.defaults(); Config(**c.to_dict()) == c.\n"
           "math: 'from_environment' (RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION, read when a plan is "
           "built), 'fp32', 'allow_conversion' (float32 GEMMs in bf16 with float32 "
           "accumulation where the CPU has AVX512-BF16; float64 ignores it), or 'int8' "
           "(inference in int8 dynamic quantisation on AMX-INT8, AVX512-VNNI or AVX-VNNI, "
           "refused elsewhere; "
           "docs/int8.md).\n"
           "cell_clip, proj_clip: None or (lo, hi); clip_nan: 'propagate' or 'replace'.\n"
           "ONNX's cell options (docs/math.md): reverse, peephole (LSTM), gate_clip (ONNX clip), "
           "input_forget (LSTM) and activations, a list of ONNX names or (name, alpha, beta) "
           "tuples or {'name', 'alpha', 'beta'} dicts (alpha/beta None: ONNX's defaults), per "
           "direction LSTM f, g, h; GRU f, g; RNN f, once for every direction or once per "
           "direction.")
      .def("to_dict", &config_dict, "Every field by name, as Config(**d) takes them.")
      .def_static(
          "from_string",
          [](const std::string& text) {
            rnnx::Config c = rnnx::config_from_string(text);
            rnnx::validate(c);
            return c;
          },
          "text"_a,
          "The config of a text form (str(config), rnnx::to_string): any subset of the fields "
          "as 'name=value' separated by spaces, the rest at their defaults; validated. Raises "
          "rnnx.InvalidArgumentError naming an unknown field or a bad value.")
      .def_static(
          "defaults", []() { return config_dict(rnnx::Config{}); },
          "Every field's default (cell, input_size and hidden_size have none in Python: they "
          "are required).")
      .def(
          "__eq__", [](const rnnx::Config& a, const rnnx::Config& b) { return a == b; },
          py::is_operator())
      .def("__hash__", [](const rnnx::Config& c) { return py::hash(py::str(rnnx::to_string(c))); })
      .def(
          "__str__", [](const rnnx::Config& c) { return rnnx::to_string(c); },
          "The text form, field=value for every field (rnnx::to_string(Config)).")
      .def(py::pickle([](const rnnx::Config& c) { return rnnx::to_string(c); },
                      [](const std::string& text) {
                        const rnnx::Config c = rnnx::config_from_string(text);
                        rnnx::validate(c);
                        return c;
                      }));
  {
    py::list fields;
    rnnx::for_each_config_field([&](const char* name, auto member) {
      fields.append(name);
      config_class.def_property_readonly(
          name, [member](const rnnx::Config& c) { return to_py(c.*member); });
    });
    config_class.attr("fields") = py::tuple(fields);
  }
  config_class
      .def_property_readonly(
          "resolved_math",
          [](const rnnx::Config& c) { return rnnx::to_string(rnnx::resolved_math_mode(c)); },
          "'fp32' or 'allow_conversion': the mode a plan built now runs in (the environment "
          "variable read for 'from_environment').")
      .def(
          "direction_activations",
          [](const rnnx::Config& c, int64_t d) {
            if (d < 0 || d >= c.num_directions()) {
              invalid("direction (= " + std::to_string(d) + ") must be in [0, num_directions (= " +
                      std::to_string(c.num_directions()) + "))");
            }
            return activation_list(rnnx::direction_activations(c, d));
          },
          "direction"_a, "The activations direction d runs, defaults filled in.")
      .def_property_readonly("uses_onnx_options", &rnnx::uses_onnx_options,
                             "True when an ONNX-only option is on (reverse, peephole, gate_clip, "
                             "input_forget or activations other than the cell's own).")
      .def_property_readonly("num_directions", &rnnx::Config::num_directions)
      .def_property_readonly("output_size", &rnnx::Config::output_size)
      .def_property_readonly("gates",
                             [](const rnnx::Config& c) { return rnnx::gates_per_cell(c.cell); })
      .def(
          "weight_params", [](const rnnx::Config& c) { return rnnx::WeightLayout(c).params(); },
          "The flat weight buffer's parameters in order, with PyTorch's names.")
      .def("weights_numel", [](const rnnx::Config& c) { return rnnx::WeightLayout(c).numel(); })
      .def("__repr__", &config_repr);

  m.def(
      "default_activation",
      [](const std::string& name) {
        return activation_value(rnnx::default_activation(rnnx::activation_from_string(name)));
      },
      "name"_a,
      "(name, alpha, beta) of an ONNX activation with ONNX's default alpha and beta; the name "
      "is matched case-insensitively and returned in ONNX's spelling.");
  m.def(
      "onnx_activations",
      [](const std::vector<std::string>& names, const std::vector<double>& alpha,
         const std::vector<double>& beta) {
        return activation_list(rnnx::onnx_activations(names, alpha, beta));
      },
      "names"_a, "alpha"_a, "beta"_a,
      "ONNX's activations with activation_alpha / activation_beta as [(name, alpha, beta)]: "
      "ONNX's defaults, then the lists consumed in order by the activations that take them.");
  {
    // The activations that read a value of those lists, by ONNX name.
    py::list alpha, beta;
    for (int k = 0; k <= static_cast<int>(rnnx::ActivationKind::softplus); ++k) {
      const auto kind = static_cast<rnnx::ActivationKind>(k);
      if (rnnx::onnx_takes_alpha(kind)) alpha.append(rnnx::to_string(kind));
      if (rnnx::onnx_takes_beta(kind)) beta.append(rnnx::to_string(kind));
    }
    m.attr("ONNX_TAKES_ALPHA") = py::frozenset(alpha);
    m.attr("ONNX_TAKES_BETA") = py::frozenset(beta);
  }
  m.def(
      "error_bound",
      [](const rnnx::Config& c, int64_t max_seq_len, int64_t batch, bool backward,
         bool bf16_products) {
        check_bound_sizes(max_seq_len, batch);
        return rnnx::error_bound(c, max_seq_len, batch, backward, bf16_products);
      },
      "config"_a, "max_seq_len"_a, "batch"_a, "backward"_a = false, "bf16_products"_a = false,
      "The accuracy rnnx promises (include/rnnx/error_bound.hpp): max |got - exact| <= "
      "bound * (max(1, max |exact|) + |exact|), for forward results or, with backward=True, "
      "gradients.");
  m.def(
      "norm_error_bound",
      [](const rnnx::Config& c, int64_t max_seq_len, int64_t batch, bool backward) {
        check_bound_sizes(max_seq_len, batch);
        return rnnx::norm_error_bound(c, max_seq_len, batch, backward);
      },
      "config"_a, "max_seq_len"_a, "batch"_a, "backward"_a = false,
      "The accuracy in norm of a run with bf16 products, math mode allow_conversion "
      "(include/rnnx/error_bound.hpp): ||got - exact||_2 / max(||exact||_2, tiny) <= bound "
      "over a whole tensor, for forward results or, with backward=True, gradients.");
  m.def("import_onnx_layer", &import_onnx, "config"_a, "layer"_a, "W"_a, "R"_a, "B"_a = py::none(),
        "P"_a = py::none(), "weights"_a,
        "Writes one layer's ONNX tensors W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H] and "
        "P [D, 3*H] (ONNX's gate orders) into the flat weights buffer of `config`. B or P "
        "None: zero biases or peepholes.");
  m.def("export_onnx_layer", &export_onnx, "config"_a, "layer"_a, "weights"_a,
        "(W, R, B, P) of one layer as float64 arrays in ONNX's layout; B is None without bias "
        "and P without peepholes.");

  py::class_<PyNetwork>(m, "Network")
      .def(py::init([](const rnnx::Config& c, const std::string& backend, int num_threads,
                       const std::string& purpose, const py::object& cpu) {
             return PyNetwork{std::make_shared<rnnx::Network>(
                 c, make_options(backend, num_threads, purpose, cpu))};
           }),
           "config"_a, "backend"_a = "cpu", "num_threads"_a = 0, "purpose"_a = "training",
           "cpu"_a = py::none(),
           "A network: made once for a config (options as Plan.padded's), called per batch. Its "
           "batches (padded, packed) share what the config decides and the search's choice per "
           "size class; a new set of lengths costs its schedule only.")
      .def(
          "padded",
          [](const PyNetwork& n, int64_t max_seq_len, int64_t batch,
             std::optional<std::vector<int64_t>> lengths, bool batch_first) {
            return std::make_unique<PyPlan>(
                n.net, padded_shape(max_seq_len, batch, std::move(lengths), batch_first));
          },
          "max_seq_len"_a, "batch"_a, "lengths"_a = py::none(), "batch_first"_a = false,
          "A batch of padded x on this network, used as a Plan.")
      .def(
          "packed",
          [](const PyNetwork& n, std::vector<int64_t> batch_sizes,
             std::optional<std::vector<int64_t>> sorted_indices) {
            return std::make_unique<PyPlan>(
                n.net, packed_shape(std::move(batch_sizes), std::move(sorted_indices)));
          },
          "batch_sizes"_a, "sorted_indices"_a = py::none(),
          "A batch of packed x on this network, used as a Plan.")
      .def_property_readonly("config", [](const PyNetwork& n) { return n.net->config(); })
      .def_property_readonly("weights_numel",
                             [](const PyNetwork& n) { return n.net->weights_numel(); })
      .def(
          "stats",
          [](const PyNetwork& n) {
            const rnnx::NetworkStats st = n.net->stats();
            py::dict d;
            d["batches"] = st.batches;
            d["backends_built"] = st.backends_built;
            d["slots"] = st.slots;
            d["bind_seconds"] = st.bind_seconds;
            d["kept_weights_bytes"] = st.kept_weights_bytes;
            return d;
          },
          "batches bound, backends built (not rebound), slots (calls at once), the seconds "
          "spent binding shapes and the bytes of packed weights kept by version.");

  py::class_<PyPlan>(m, "Plan")
      .def_static(
          "padded",
          [](const rnnx::Config& c, int64_t max_seq_len, int64_t batch,
             std::optional<std::vector<int64_t>> lengths, bool batch_first,
             const std::string& backend, int num_threads, const std::string& purpose,
             const py::object& cpu) {
            return std::make_unique<PyPlan>(
                std::make_shared<rnnx::Network>(c,
                                                make_options(backend, num_threads, purpose, cpu)),
                padded_shape(max_seq_len, batch, std::move(lengths), batch_first));
          },
          "config"_a, "max_seq_len"_a, "batch"_a, "lengths"_a = py::none(), "batch_first"_a = false,
          "backend"_a = "cpu", "num_threads"_a = 0, "purpose"_a = "training", "cpu"_a = py::none(),
          "A plan for padded x [T, B, I] (or [B, T, I] batch-first) with optional lengths [B]. "
          "purpose: 'training' (training steps and inference) or 'inference' (inference "
          "forwards only; its algorithm search times a forward). cpu: the cpu backend's "
          "choices for this plan, overriding their environment variables (docs/cpu.md): a dict "
          "or text of isa, gemm, time_loop, directions, input_projection, search, e.g. "
          "{'gemm': 'packed', 'time_loop': 'team'}; 'auto' is automatic whatever the "
          "environment says.")
      .def_static(
          "packed",
          [](const rnnx::Config& c, std::vector<int64_t> batch_sizes,
             std::optional<std::vector<int64_t>> sorted_indices, const std::string& backend,
             int num_threads, const std::string& purpose, const py::object& cpu) {
            return std::make_unique<PyPlan>(
                std::make_shared<rnnx::Network>(c,
                                                make_options(backend, num_threads, purpose, cpu)),
                packed_shape(std::move(batch_sizes), std::move(sorted_indices)));
          },
          "config"_a, "batch_sizes"_a, "sorted_indices"_a = py::none(), "backend"_a = "cpu",
          "num_threads"_a = 0, "purpose"_a = "training", "cpu"_a = py::none(),
          "A plan for packed x [N, I] (PyTorch's PackedSequence data, batch_sizes, "
          "sorted_indices).")
      .def_property_readonly("config", [](const PyPlan& p) { return p.config(); })
      .def_property_readonly(
          "purpose", [](const PyPlan& p) { return rnnx::to_string(p.net->options().purpose); })
      .def_property_readonly(
          "cpu_choices", [](const PyPlan& p) { return rnnx::to_string(p.net->options().cpu); },
          "The cpu choices the plan was built with, as text ('' for none); impl_name shows what "
          "runs.")
      .def_property_readonly("layout",
                             [](const PyPlan& p) { return rnnx::to_string(p.shape.layout); })
      .def_property_readonly("max_seq_len", [](const PyPlan& p) { return p.info.max_seq_len; })
      .def_property_readonly("batch", [](const PyPlan& p) { return p.info.batch; })
      .def_property_readonly("tokens", [](const PyPlan& p) { return p.info.tokens; })
      .def_property_readonly("x_numel", [](const PyPlan& p) { return p.info.x_numel; })
      .def_property_readonly("y_numel", [](const PyPlan& p) { return p.info.y_numel; })
      .def_property_readonly("h_numel", [](const PyPlan& p) { return p.info.h_numel; })
      .def_property_readonly("c_numel", [](const PyPlan& p) { return p.info.c_numel; })
      .def_property_readonly("weights_numel", [](const PyPlan& p) { return p.weights_numel(); })
      .def_property_readonly("reserve_size", [](const PyPlan& p) { return p.info.reserve; })
      .def_property_readonly(
          "buffer_alignment", [](const PyPlan& p) { return p.info.buffer_alignment; },
          "What workspace and reserve addresses must be aligned to (bytes): 8 on the host "
          "backends, 256 on cuda.")
      .def_property_readonly("backward_workspace_size",
                             [](const PyPlan& p) { return p.info.backward_workspace; })
      .def(
          "forward_workspace_size",
          [](const PyPlan& p, bool training) { return p.info.forward_workspace[training]; },
          "training"_a)
      .def_property_readonly("impl_name", [](const PyPlan& p) { return p.net->impl_name(p.shape); })
      .def_property_readonly("problem_name",
                             [](const PyPlan& p) { return p.net->problem_name(p.shape); })
      .def("forward", &forward, "x"_a, "weights"_a, "y"_a, py::kw_only(), "h0"_a = py::none(),
           "c0"_a = py::none(), "hy"_a = py::none(), "cy"_a = py::none(), "training"_a = false,
           "dropout_counter"_a = 0, "workspace"_a = py::none(), "reserve"_a = py::none(),
           "Runs the forward pass on dense buffers of the plan's dtype (outputs written in place).")
      .def("backward", &backward, "x"_a, "weights"_a, "reserve"_a, py::kw_only(),
           "h0"_a = py::none(), "c0"_a = py::none(), "dy"_a = py::none(), "dhy"_a = py::none(),
           "dcy"_a = py::none(), "dx"_a = py::none(), "dh0"_a = py::none(), "dc0"_a = py::none(),
           "dweights"_a = py::none(), "accumulate"_a = false, "workspace"_a = py::none(),
           "Back-propagates through the training forward that wrote `reserve`.")
      .def("forward_ptr", &forward_ptr, "x"_a, "weights"_a, "y"_a, py::kw_only(), "h0"_a = 0,
           "c0"_a = 0, "hy"_a = 0, "cy"_a = 0, "training"_a = false, "dropout_counter"_a = 0,
           "workspace"_a = 0, "workspace_size"_a = 0, "reserve"_a = 0, "reserve_size"_a = 0,
           "stream"_a = 0, "weights_version"_a = 0,
           "forward on device buffers given by address (0: absent), on `stream` (a "
           "cudaStream_t as an integer; 0: the default stream): what rnnx.torch uses for CUDA "
           "tensors. weights_version: ForwardArgs::weights_version (0: unknown; else a number "
           "changed whenever the weights change, so that the network keeps their packed copy).")
      .def("backward_ptr", &backward_ptr, "x"_a, "weights"_a, "reserve"_a, "reserve_size"_a,
           py::kw_only(), "h0"_a = 0, "c0"_a = 0, "dy"_a = 0, "dhy"_a = 0, "dcy"_a = 0, "dx"_a = 0,
           "dh0"_a = 0, "dc0"_a = 0, "dweights"_a = 0, "accumulate"_a = false, "workspace"_a = 0,
           "workspace_size"_a = 0, "stream"_a = 0, "backward on device buffers given by address.")
      .def("__repr__", [](const PyPlan& p) {
        return "rnnx.Plan(" + p.net->problem_name(p.shape) + ", " + p.net->impl_name(p.shape) + ")";
      });

  py::class_<PyPreparedBackward>(m, "PreparedBackward",
                                 "The backward of a PreparedForward's training call: the same "
                                 "plan and weights address, workspaces of its own.")
      .def(py::init<const PyPlan&, uintptr_t>(), "plan"_a, "weights"_a)
      .def("__call__", &PyPreparedBackward::call, "x"_a, "reserve"_a, "reserve_size"_a, "h0"_a,
           "c0"_a, "dy"_a, "dhy"_a, "dcy"_a, "dx"_a, "dh0"_a, "dc0"_a, "dweights"_a, "threads"_a,
           "The backward on host buffers by address (0: absent; gradients of absent outputs "
           "zero), whose sizes the caller has checked against the plan's; dweights overwritten.");
  py::class_<PyPreparedForward>(m, "PreparedForward",
                                "A plan's forward at one weights address, with workspaces "
                                "of its own: rnnx.torch's cached eager call on the host.")
      .def(py::init<const PyPlan&, uintptr_t, bool>(), "plan"_a, "weights"_a, "training"_a)
      .def("__call__", &PyPreparedForward::call, "x"_a, "y"_a, "h0"_a, "c0"_a, "hy"_a, "cy"_a,
           "weights_version"_a, "threads"_a, "reserve"_a = 0, "reserve_size"_a = 0,
           "The forward on host buffers by address (0: absent; y 0: not wanted), whose sizes "
           "the caller has checked against the plan's; a training call's reserve. threads: the "
           "calling thread's count for this call (0: as it is).");
}
