// Placeholder: the C API over the C++ API lands here (issue 4).
namespace rnnx {}
