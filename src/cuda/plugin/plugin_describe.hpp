// What the plugin's run-time libraries say about themselves, for build_info(): cuDNN's
// version (cudnnGetVersion, which needs no GPU) and the file it was loaded from, and the CUDA
// runtime linked in.
#pragma once

#include <string>

namespace rnnx::cuda {

// "cuDNN 9.19.0 run time (libcudnn.so.9 from /.../nvidia/cudnn/lib/libcudnn.so.9), CUDA
// runtime 13.0 (static)"
std::string describe_libraries();

}  // namespace rnnx::cuda
