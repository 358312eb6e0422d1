// The fake GPU of fake_device.hpp.
#include "fake_device.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>

#include "cuda/call_table.hpp"
#include "cuda/rules/cudnn_layout.hpp"

namespace rnnx_test {
namespace {

using rnnx::CellType;
using rnnx::Config;
using rnnx::DataType;

// What a cuDNN RNN descriptor was set to: enough for its weight space and sizes.
struct FakeRnn {
  Config config;
};
struct FakeData {
  int max_seq_len = 0, batch = 0, vector_size = 0;
  int64_t tokens = 0;
};
struct FakeTensor {
  int nb = 0;
  int dims[8] = {};
  int strides[8] = {};
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
};

struct State {
  std::mutex mutex;
  std::vector<std::string> log;
  int64_t fail_index = -1;
  bool events_pending = false;  // cudaEventQuery answers cudaErrorNotReady
  bool capturing = false;       // cudaStreamIsCapturing answers Active
  std::map<void*, size_t> allocations;
  std::set<void*> pinned;                // the allocations cudaMallocHost made
  std::map<void*, std::string> objects;  // handles, streams, events, descriptors
  std::vector<std::string> misuse;
  std::vector<const void*> weight_spaces;  // cudnnRNNForward's, in order
  rnnx::cuda::Cublas cublas{};
};
State* g_state = nullptr;

unsigned long long next_stream_id() {
  static std::atomic<unsigned long long> next{1};
  return next++;
}

// Records the call; true when it is the one told to fail.
bool enter(const char* name) {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  const bool fail = static_cast<int64_t>(g_state->log.size()) == g_state->fail_index;
  g_state->log.emplace_back(name);
  return fail && returns_checked_status(name);
}

template <typename T>
T* make_object(const char* kind) {
  T* p = new T();
  std::lock_guard<std::mutex> lock(g_state->mutex);
  g_state->objects[p] = kind;
  return p;
}
template <typename T>
void drop_object(T* p) {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  if (g_state->objects.erase(p) == 0) g_state->misuse.push_back("destroyed an unknown object");
  delete p;
}

bool inside_allocation(const void* p, size_t n) {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  const auto at = static_cast<const char*>(p);
  for (const auto& [base, size] : g_state->allocations) {
    const auto b = static_cast<const char*>(base);
    if (at >= b && at + n <= b + size) return true;
  }
  return false;
}
void misuse(const std::string& what) {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  g_state->misuse.push_back(what);
}

// ---- CUDA runtime ----------------------------------------------------------------------

cudaError_t get_device_count(int* n) {
  if (enter("cudaGetDeviceCount")) return cudaErrorUnknown;
  *n = 1;
  return cudaSuccess;
}
cudaError_t get_device(int* d) {
  if (enter("cudaGetDevice")) return cudaErrorUnknown;
  *d = 0;
  return cudaSuccess;
}
cudaError_t set_device(int d) {
  if (enter("cudaSetDevice")) return cudaErrorUnknown;
  return d == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}
cudaError_t get_properties(cudaDeviceProp* p, int) {
  if (enter("cudaGetDeviceProperties")) return cudaErrorUnknown;
  *p = cudaDeviceProp{};
  std::strcpy(p->name, "rnnx fake device");
  p->major = 9;
  p->multiProcessorCount = 132;
  return cudaSuccess;
}
cudaError_t malloc_(void** p, size_t n) {
  if (enter("cudaMalloc")) return cudaErrorMemoryAllocation;
  const size_t bytes = (n + 255) / 256 * 256;
  *p = std::aligned_alloc(256, bytes == 0 ? 256 : bytes);
  std::lock_guard<std::mutex> lock(g_state->mutex);
  g_state->allocations[*p] = n;
  return cudaSuccess;
}
// A release told to fail still releases (the leak checks then see the backend's own leaks
// only) and returns the library's error status.
cudaError_t free_(void* p) {
  const bool fail = enter("cudaFree");
  if (p == nullptr) return fail ? cudaErrorUnknown : cudaSuccess;
  std::lock_guard<std::mutex> lock(g_state->mutex);
  if (g_state->allocations.erase(p) == 0) {
    g_state->misuse.push_back("cudaFree of memory the device never gave");
    return cudaErrorInvalidValue;
  }
  std::free(p);
  return fail ? cudaErrorUnknown : cudaSuccess;
}
// Pinned host memory: counted with the device's allocations (a leak of either is one).
cudaError_t malloc_host(void** p, size_t n) {
  if (enter("cudaMallocHost")) return cudaErrorMemoryAllocation;
  *p = std::malloc(n == 0 ? 1 : n);
  std::lock_guard<std::mutex> lock(g_state->mutex);
  g_state->allocations[*p] = n;
  g_state->pinned.insert(*p);
  return cudaSuccess;
}
cudaError_t free_host(void* p) {
  const bool fail = enter("cudaFreeHost");
  if (p == nullptr) return fail ? cudaErrorUnknown : cudaSuccess;
  std::lock_guard<std::mutex> lock(g_state->mutex);
  if (g_state->pinned.erase(p) == 0 || g_state->allocations.erase(p) == 0) {
    g_state->misuse.push_back("cudaFreeHost of memory cudaMallocHost never gave");
    return cudaErrorInvalidValue;
  }
  std::free(p);
  return fail ? cudaErrorUnknown : cudaSuccess;
}
cudaError_t memcpy_async(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t) {
  if (enter("cudaMemcpyAsync")) return cudaErrorUnknown;
  if (n == 0) return cudaSuccess;
  const bool to_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool from_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if ((to_device && !inside_allocation(dst, n)) || (from_device && !inside_allocation(src, n))) {
    misuse("cudaMemcpyAsync outside device memory");
    return cudaErrorInvalidValue;
  }
  std::memmove(dst, src, n);
  return cudaSuccess;
}
cudaError_t memset_async(void* dst, int v, size_t n, cudaStream_t) {
  if (enter("cudaMemsetAsync")) return cudaErrorUnknown;
  if (n == 0) return cudaSuccess;
  if (!inside_allocation(dst, n)) {
    misuse("cudaMemsetAsync outside device memory");
    return cudaErrorInvalidValue;
  }
  std::memset(dst, v, n);
  return cudaSuccess;
}
struct FakeStream {
  unsigned long long id = 0;
};
struct FakeEvent {};
cudaError_t stream_create(cudaStream_t* s, unsigned) {
  if (enter("cudaStreamCreateWithFlags")) return cudaErrorUnknown;
  FakeStream* fs = make_object<FakeStream>("stream");
  fs->id = next_stream_id();
  *s = reinterpret_cast<cudaStream_t>(fs);
  return cudaSuccess;
}
cudaError_t stream_destroy(cudaStream_t s) {
  const bool fail = enter("cudaStreamDestroy");
  drop_object(reinterpret_cast<FakeStream*>(s));
  return fail ? cudaErrorUnknown : cudaSuccess;
}
cudaError_t stream_sync(cudaStream_t) {
  return enter("cudaStreamSynchronize") ? cudaErrorUnknown : cudaSuccess;
}
cudaError_t event_create(cudaEvent_t* e) {
  if (enter("cudaEventCreate")) return cudaErrorUnknown;
  *e = reinterpret_cast<cudaEvent_t>(make_object<FakeEvent>("event"));
  return cudaSuccess;
}
cudaError_t event_destroy(cudaEvent_t e) {
  const bool fail = enter("cudaEventDestroy");
  drop_object(reinterpret_cast<FakeEvent*>(e));
  return fail ? cudaErrorUnknown : cudaSuccess;
}
cudaError_t event_create_with_flags(cudaEvent_t* e, unsigned int) {
  if (enter("cudaEventCreateWithFlags")) return cudaErrorUnknown;
  *e = reinterpret_cast<cudaEvent_t>(make_object<FakeEvent>("event"));
  return cudaSuccess;
}
// Nothing runs: every event has happened, unless the test says the device is behind.
cudaError_t event_query(cudaEvent_t) {
  if (enter("cudaEventQuery")) return cudaErrorUnknown;
  std::lock_guard<std::mutex> lock(g_state->mutex);
  return g_state->events_pending ? cudaErrorNotReady : cudaSuccess;
}
cudaError_t stream_wait_event(cudaStream_t, cudaEvent_t, unsigned int) {
  return enter("cudaStreamWaitEvent") ? cudaErrorUnknown : cudaSuccess;
}
// Streams' identities as the runtime gives them: the legacy default stream 0, the per-thread
// default stream (one handle) a number per thread, every created stream its own.
cudaError_t stream_get_id(cudaStream_t s, unsigned long long* id) {
  if (enter("cudaStreamGetId")) return cudaErrorUnknown;
  if (s == nullptr || s == cudaStreamLegacy) {
    *id = 0;
  } else if (s == cudaStreamPerThread) {
    thread_local const unsigned long long mine = next_stream_id();
    *id = mine;
  } else {
    *id = reinterpret_cast<FakeStream*>(s)->id;
  }
  return cudaSuccess;
}
cudaError_t stream_is_capturing(cudaStream_t, cudaStreamCaptureStatus* status) {
  if (enter("cudaStreamIsCapturing")) return cudaErrorUnknown;
  std::lock_guard<std::mutex> lock(g_state->mutex);
  *status = g_state->capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
cudaError_t event_record(cudaEvent_t, cudaStream_t) {
  return enter("cudaEventRecord") ? cudaErrorUnknown : cudaSuccess;
}
cudaError_t event_sync(cudaEvent_t) {
  return enter("cudaEventSynchronize") ? cudaErrorUnknown : cudaSuccess;
}
cudaError_t event_elapsed(float* ms, cudaEvent_t, cudaEvent_t) {
  if (enter("cudaEventElapsedTime")) return cudaErrorUnknown;
  *ms = 1.0f;
  return cudaSuccess;
}
cudaError_t get_last_error() {
  enter("cudaGetLastError");
  return cudaSuccess;
}
const char* error_name(cudaError_t) {
  return "cudaErrorFake";
}
const char* error_string(cudaError_t) {
  return "a failure the fake device was told to make";
}
cudaError_t runtime_version(int* v) {
  if (enter("cudaRuntimeGetVersion")) return cudaErrorUnknown;
  *v = 13000;
  return cudaSuccess;
}

// ---- cuDNN -------------------------------------------------------------------------------

struct FakeHandle {};
struct FakeDropout {};
size_t version() {
  return 91900;
}
cudnnStatus_t create(cudnnHandle_t* h) {
  if (enter("cudnnCreate")) return CUDNN_STATUS_INTERNAL_ERROR;
  *h = reinterpret_cast<cudnnHandle_t>(make_object<FakeHandle>("cudnn handle"));
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t destroy(cudnnHandle_t h) {
  const bool fail = enter("cudnnDestroy");
  drop_object(reinterpret_cast<FakeHandle*>(h));
  return fail ? CUDNN_STATUS_INTERNAL_ERROR : CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t set_stream(cudnnHandle_t, cudaStream_t) {
  return enter("cudnnSetStream") ? CUDNN_STATUS_INTERNAL_ERROR : CUDNN_STATUS_SUCCESS;
}
const char* cudnn_error(cudnnStatus_t) {
  return "CUDNN_STATUS_FAKE";
}
void last_error(char* text, size_t n) {
  if (n > 0) text[0] = '\0';
}
template <typename D, typename Fake>
cudnnStatus_t create_descriptor(D* d, const char* name) {
  if (enter(name)) return CUDNN_STATUS_INTERNAL_ERROR;
  *d = reinterpret_cast<D>(make_object<Fake>(name));
  return CUDNN_STATUS_SUCCESS;
}
template <typename D, typename Fake>
cudnnStatus_t destroy_descriptor(D d, const char* name) {
  const bool fail = enter(name);
  drop_object(reinterpret_cast<Fake*>(d));
  return fail ? CUDNN_STATUS_INTERNAL_ERROR : CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t create_rnn(cudnnRNNDescriptor_t* d) {
  return create_descriptor<cudnnRNNDescriptor_t, FakeRnn>(d, "cudnnCreateRNNDescriptor");
}
cudnnStatus_t destroy_rnn(cudnnRNNDescriptor_t d) {
  return destroy_descriptor<cudnnRNNDescriptor_t, FakeRnn>(d, "cudnnDestroyRNNDescriptor");
}
cudnnStatus_t create_data(cudnnRNNDataDescriptor_t* d) {
  return create_descriptor<cudnnRNNDataDescriptor_t, FakeData>(d, "cudnnCreateRNNDataDescriptor");
}
cudnnStatus_t destroy_data(cudnnRNNDataDescriptor_t d) {
  return destroy_descriptor<cudnnRNNDataDescriptor_t, FakeData>(d, "cudnnDestroyRNNDataDescriptor");
}
cudnnStatus_t create_tensor(cudnnTensorDescriptor_t* d) {
  return create_descriptor<cudnnTensorDescriptor_t, FakeTensor>(d, "cudnnCreateTensorDescriptor");
}
cudnnStatus_t destroy_tensor(cudnnTensorDescriptor_t d) {
  return destroy_descriptor<cudnnTensorDescriptor_t, FakeTensor>(d, "cudnnDestroyTensorDescriptor");
}
cudnnStatus_t create_dropout(cudnnDropoutDescriptor_t* d) {
  return create_descriptor<cudnnDropoutDescriptor_t, FakeDropout>(d,
                                                                  "cudnnCreateDropoutDescriptor");
}
cudnnStatus_t destroy_dropout(cudnnDropoutDescriptor_t d) {
  return destroy_descriptor<cudnnDropoutDescriptor_t, FakeDropout>(d,
                                                                   "cudnnDestroyDropoutDescriptor");
}
cudnnStatus_t set_dropout(cudnnDropoutDescriptor_t, cudnnHandle_t, float, void*, size_t,
                          unsigned long long) {
  return enter("cudnnSetDropoutDescriptor") ? CUDNN_STATUS_INTERNAL_ERROR : CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t set_rnn(cudnnRNNDescriptor_t d, cudnnRNNAlgo_t, cudnnRNNMode_t mode,
                      cudnnRNNBiasMode_t bias, cudnnDirectionMode_t dir, cudnnRNNInputMode_t,
                      cudnnDataType_t type, cudnnDataType_t, cudnnMathType_t, int32_t input,
                      int32_t hidden, int32_t proj, int32_t layers, cudnnDropoutDescriptor_t,
                      uint32_t) {
  if (enter("cudnnSetRNNDescriptor_v8")) return CUDNN_STATUS_INTERNAL_ERROR;
  Config& c = reinterpret_cast<FakeRnn*>(d)->config;
  c.cell = mode == CUDNN_LSTM       ? CellType::lstm
           : mode == CUDNN_GRU      ? CellType::gru
           : mode == CUDNN_RNN_TANH ? CellType::rnn_tanh
                                    : CellType::rnn_relu;
  c.bias = bias != CUDNN_RNN_NO_BIAS;
  c.bidirectional = dir == CUDNN_BIDIRECTIONAL;
  c.input_size = input;
  c.hidden_size = hidden;
  c.proj_size = proj == hidden ? 0 : proj;
  c.num_layers = layers;
  c.dtype = type == CUDNN_DATA_DOUBLE     ? DataType::f64
            : type == CUDNN_DATA_HALF     ? DataType::f16
            : type == CUDNN_DATA_BFLOAT16 ? DataType::bf16
                                          : DataType::f32;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t set_clip(cudnnRNNDescriptor_t, cudnnRNNClipMode_t, cudnnNanPropagation_t, double,
                       double) {
  return enter("cudnnRNNSetClip_v8") ? CUDNN_STATUS_INTERNAL_ERROR : CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t set_data(cudnnRNNDataDescriptor_t d, cudnnDataType_t, cudnnRNNDataLayout_t,
                       int max_seq_len, int batch, int vector_size, const int lengths[], void*) {
  if (enter("cudnnSetRNNDataDescriptor")) return CUDNN_STATUS_INTERNAL_ERROR;
  FakeData& f = *reinterpret_cast<FakeData*>(d);
  f.max_seq_len = max_seq_len, f.batch = batch, f.vector_size = vector_size;
  f.tokens = 0;
  for (int b = 0; b < batch; ++b) f.tokens += lengths[b];
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t type, int nb, const int dims[],
                         const int strides[]) {
  if (enter("cudnnSetTensorNdDescriptor")) return CUDNN_STATUS_INTERNAL_ERROR;
  FakeTensor& t = *reinterpret_cast<FakeTensor*>(d);
  t.nb = nb, t.type = type;
  for (int k = 0; k < nb && k < 8; ++k) t.dims[k] = dims[k], t.strides[k] = strides[k];
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t get_tensor(const cudnnTensorDescriptor_t d, int want, cudnnDataType_t* type, int* nb,
                         int dims[], int strides[]) {
  if (enter("cudnnGetTensorNdDescriptor")) return CUDNN_STATUS_INTERNAL_ERROR;
  const FakeTensor& t = *reinterpret_cast<const FakeTensor*>(d);
  *type = t.type, *nb = t.nb;
  for (int k = 0; k < want && k < t.nb; ++k) dims[k] = t.dims[k], strides[k] = t.strides[k];
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t temp_sizes(cudnnHandle_t, cudnnRNNDescriptor_t d, cudnnForwardMode_t mode,
                         cudnnRNNDataDescriptor_t x, size_t* workspace, size_t* reserve) {
  if (enter("cudnnGetRNNTempSpaceSizes")) return CUDNN_STATUS_INTERNAL_ERROR;
  const Config& c = reinterpret_cast<FakeRnn*>(d)->config;
  const auto& data = *reinterpret_cast<FakeData*>(x);
  const size_t per_token = static_cast<size_t>(c.num_layers * c.num_directions() *
                                               rnnx::gates_per_cell(c.cell) * c.hidden_size) *
                           rnnx::dtype_size(c.dtype);
  *workspace = 4096 + static_cast<size_t>(data.tokens) * per_token;
  *reserve =
      mode == CUDNN_FWD_MODE_TRAINING ? 1024 + static_cast<size_t>(data.tokens) * per_token : 0;
  return CUDNN_STATUS_SUCCESS;
}
// The documented layout of the descriptor's weight space (rules/cudnn_layout.hpp).
std::vector<rnnx::cuda::CudnnParam> layout_of(cudnnRNNDescriptor_t d) {
  return rnnx::cuda::cudnn_documented_layout(reinterpret_cast<FakeRnn*>(d)->config);
}
cudnnStatus_t weight_space_size(cudnnHandle_t, cudnnRNNDescriptor_t d, size_t* bytes) {
  if (enter("cudnnGetRNNWeightSpaceSize")) return CUDNN_STATUS_INTERNAL_ERROR;
  int64_t end = 0;
  for (const auto& p : layout_of(d)) end = std::max(end, p.offset + p.numel());
  *bytes = static_cast<size_t>(end) * rnnx::dtype_size(reinterpret_cast<FakeRnn*>(d)->config.dtype);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t weight_params(cudnnHandle_t, cudnnRNNDescriptor_t d, int32_t pseudo_layer, size_t,
                            const void* space, int32_t id, cudnnTensorDescriptor_t m_desc,
                            void** m_addr, cudnnTensorDescriptor_t b_desc, void** b_addr) {
  if (enter("cudnnGetRNNWeightParams")) return CUDNN_STATUS_INTERNAL_ERROR;
  const size_t elem = rnnx::dtype_size(reinterpret_cast<FakeRnn*>(d)->config.dtype);
  *m_addr = *b_addr = nullptr;
  for (const auto& p : layout_of(d)) {
    if (p.pseudo_layer != pseudo_layer || p.id != id) continue;
    auto* addr = const_cast<char*>(static_cast<const char*>(space)) + p.offset * elem;
    FakeTensor& t = *reinterpret_cast<FakeTensor*>(p.bias ? b_desc : m_desc);
    t.nb = 3;
    t.dims[0] = 1, t.dims[1] = static_cast<int>(p.rows), t.dims[2] = static_cast<int>(p.cols);
    (p.bias ? *b_addr : *m_addr) = addr;
  }
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t rnn_forward(cudnnHandle_t, cudnnRNNDescriptor_t, cudnnForwardMode_t, const int32_t[],
                          cudnnRNNDataDescriptor_t, const void*, cudnnRNNDataDescriptor_t, void*,
                          cudnnTensorDescriptor_t, const void*, void*, cudnnTensorDescriptor_t,
                          const void*, void*, size_t weight_bytes, const void* weights, size_t,
                          void*, size_t, void*) {
  if (enter("cudnnRNNForward")) return CUDNN_STATUS_INTERNAL_ERROR;
  if (!inside_allocation(weights, weight_bytes)) misuse("cudnnRNNForward's weight space");
  std::lock_guard<std::mutex> lock(g_state->mutex);
  g_state->weight_spaces.push_back(weights);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t rnn_backward_data(cudnnHandle_t, cudnnRNNDescriptor_t, const int32_t[],
                                cudnnRNNDataDescriptor_t, const void*, const void*,
                                cudnnRNNDataDescriptor_t, void*, cudnnTensorDescriptor_t,
                                const void*, const void*, void*, cudnnTensorDescriptor_t,
                                const void*, const void*, void*, size_t, const void*, size_t, void*,
                                size_t, void*) {
  return enter("cudnnRNNBackwardData_v8") ? CUDNN_STATUS_INTERNAL_ERROR : CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t rnn_backward_weights(cudnnHandle_t, cudnnRNNDescriptor_t, cudnnWgradMode_t,
                                   const int32_t[], cudnnRNNDataDescriptor_t, const void*,
                                   cudnnTensorDescriptor_t, const void*, cudnnRNNDataDescriptor_t,
                                   const void*, size_t, void*, size_t, void*, size_t, void*) {
  return enter("cudnnRNNBackwardWeights_v8") ? CUDNN_STATUS_INTERNAL_ERROR : CUDNN_STATUS_SUCCESS;
}

// ---- cuBLAS and kernels --------------------------------------------------------------------

struct FakeBlas {};
cublasStatus_t blas_create(cublasHandle_t* h) {
  if (enter("cublasCreate")) return CUBLAS_STATUS_INTERNAL_ERROR;
  *h = reinterpret_cast<cublasHandle_t>(make_object<FakeBlas>("cublas handle"));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t blas_destroy(cublasHandle_t h) {
  const bool fail = enter("cublasDestroy");
  drop_object(reinterpret_cast<FakeBlas*>(h));
  return fail ? CUBLAS_STATUS_INTERNAL_ERROR : CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t blas_stream(cublasHandle_t, cudaStream_t) {
  return enter("cublasSetStream") ? CUBLAS_STATUS_INTERNAL_ERROR : CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t blas_sgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                          const float*, const float*, int, const float*, int, const float*, float*,
                          int) {
  return enter("cublasSgemm") ? CUBLAS_STATUS_INTERNAL_ERROR : CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t blas_dgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                          const double*, const double*, int, const double*, int, const double*,
                          double*, int) {
  return enter("cublasDgemm") ? CUBLAS_STATUS_INTERNAL_ERROR : CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t blas_gemm_ex(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) {
  return enter("cublasGemmEx") ? CUBLAS_STATUS_INTERNAL_ERROR : CUBLAS_STATUS_SUCCESS;
}
const char* blas_status(cublasStatus_t) {
  return "CUBLAS_STATUS_FAKE";
}
const rnnx::cuda::Cublas& blas() {
  return g_state->cublas;
}
bool skip_kernel(const char* name) {
  enter((std::string("kernel:") + name).c_str());
  return true;
}

const rnnx::cuda::CallTable kFake = {
    &get_device_count,
    &get_device,
    &set_device,
    &get_properties,
    &malloc_,
    &free_,
    &malloc_host,
    &free_host,
    &memcpy_async,
    &memset_async,
    &stream_create,
    &stream_destroy,
    &stream_sync,
    &event_create,
    &event_create_with_flags,
    &event_destroy,
    &event_record,
    &event_sync,
    &event_query,
    &stream_wait_event,
    &stream_get_id,
    &stream_is_capturing,
    &event_elapsed,
    &get_last_error,
    &error_name,
    &error_string,
    &runtime_version,
    &version,
    &create,
    &destroy,
    &set_stream,
    &cudnn_error,
    &last_error,
    &create_rnn,
    &destroy_rnn,
    &create_data,
    &destroy_data,
    &create_tensor,
    &destroy_tensor,
    &create_dropout,
    &destroy_dropout,
    &set_dropout,
    &set_rnn,
    &set_clip,
    &set_data,
    &set_tensor,
    &get_tensor,
    &temp_sizes,
    &weight_space_size,
    &weight_params,
    &rnn_forward,
    &rnn_backward_data,
    &rnn_backward_weights,
    &blas,
    &skip_kernel,
};

}  // namespace

bool returns_checked_status(const std::string& name) {
  if (name.rfind("kernel:", 0) == 0) return false;  // a launch's status: cudaGetLastError's
  return name != "cudaGetLastError";
}

bool is_release(const std::string& name) {
  return name == "cudaFree" || name == "cudaFreeHost" || name.find("Destroy") != std::string::npos;
}

FakeDevice::FakeDevice() {
  if (g_state != nullptr) throw std::logic_error("one FakeDevice at a time");
  g_state = new State();
  g_state->cublas = {&blas_create, &blas_destroy, &blas_stream, &blas_sgemm,
                     &blas_dgemm,  &blas_gemm_ex, &blas_status, &blas_status};
  rnnx::cuda::install_calls(&kFake);
}

FakeDevice::~FakeDevice() {
  rnnx::cuda::install_calls(nullptr);
  for (auto& [p, n] : g_state->allocations) std::free(p);
  delete g_state;
  g_state = nullptr;
}

const std::vector<std::string>& FakeDevice::log() const {
  return g_state->log;
}
void FakeDevice::clear_log() {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  g_state->log.clear();
  g_state->weight_spaces.clear();
}
std::vector<const void*> FakeDevice::weight_spaces() const {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  return g_state->weight_spaces;
}
std::map<std::string, int64_t> FakeDevice::counts() const {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  std::map<std::string, int64_t> out;
  for (const auto& n : g_state->log) ++out[n];
  return out;
}
int64_t FakeDevice::live_allocations() const {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  return static_cast<int64_t>(g_state->allocations.size());
}
int64_t FakeDevice::live_objects() const {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  return static_cast<int64_t>(g_state->objects.size());
}
void FakeDevice::capturing(bool on) {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  g_state->capturing = on;
}
void FakeDevice::events_pending(bool pending) {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  g_state->events_pending = pending;
}
void FakeDevice::fail_at(int64_t index) {
  std::lock_guard<std::mutex> lock(g_state->mutex);
  g_state->fail_index = index < 0 ? -1 : static_cast<int64_t>(g_state->log.size()) + index;
}
const std::vector<std::string>& FakeDevice::misuse() const {
  return g_state->misuse;
}

}  // namespace rnnx_test
