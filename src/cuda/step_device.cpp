// The own path's device side on the GPU (step_device.hpp). GEMMs are row-major in the programs
// and column-major in cuBLAS: C = A' B' is computed as C^T = B'^T A'^T, which is the same
// memory. float32 multiplies in float32 (cuBLAS's default math never uses TF32) unless the
// plan allows conversion, which runs the products on bf16 tensor cores with float32
// accumulation, as the cpu backend's allow_conversion does.
#include "cuda/step_device.hpp"

#include <string>

#include "cuda/cell_launcher.hpp"
#include "cuda/cublas_loader.hpp"
#include "cuda/cuda_api.hpp"
#include "cuda/device_rows.hpp"
#include "cuda/kernels.hpp"
#include "cuda/map_uploads.hpp"

namespace rnnx::cuda {
namespace {

void destroy_cublas(cublasHandle_t h) {
  const cublasStatus_t status = cublas().destroy(h);
  if (status != CUBLAS_STATUS_SUCCESS) {
    report_release_failure("cublasDestroy", cublas().status_name(status));
  }
}
using CublasHandle = Owned<cublasHandle_t, &destroy_cublas>;

CublasHandle make_cublas() {
  return create<CublasHandle>(cublas().create, "cublasCreate");
}
void attach_cublas(cublasHandle_t h, cudaStream_t stream) {
  check(cublas().set_stream(h, stream), "cublasSetStream");
}

class CudaStepDevice final : public core::StepDevice {
 public:
  explicit CudaStepDevice(const PlanContext& ctx)
      : ctx_(ctx), device_(current_device()), rows_(ctx.config.dtype, device_), cells_(ctx.config) {
    const DataType dt = ctx.config.dtype;
    if (dt == DataType::f64) {
      math_ = "fp64";
    } else if (ctx.math == MathMode::allow_conversion) {
      math_ = "bf16-tensor-op";
      fast_bf16_ = true;
    } else {
      math_ = "fp32";
    }
  }

  std::string name() const override { return "cuda:own/" + math_; }
  const core::Memory& memory() const override { return device_memory(); }
  bool takes_stream() const override { return true; }
  // The cuda backend's one rule for a caller's buffers, whichever path runs the plan.
  size_t buffer_alignment() const override { return kBufferAlignment; }

  const int64_t* upload(const std::vector<int64_t>& map) override {
    DeviceScope scope(device_);
    return maps_.stage(map);
  }
  void flush_maps(void* stream) override {
    DeviceScope scope(device_);
    maps_.flush(static_cast<cudaStream_t>(stream));
  }
  const core::RowCopier& rows() const override { return rows_; }

  void run(const core::StepProgram& program, const Buffers& b, const Dropout& drop,
           void* stream_ptr) override {
    DeviceScope scope(device_);
    const auto stream = static_cast<cudaStream_t>(stream_ptr);
    void* bases[6] = {};
    bases[static_cast<int>(core::Buf::input)] = const_cast<void*>(b.input);
    bases[static_cast<int>(core::Buf::weights)] = const_cast<void*>(b.weights);
    bases[static_cast<int>(core::Buf::dweights)] = b.dweights;
    bases[static_cast<int>(core::Buf::workspace)] = b.workspace;
    bases[static_cast<int>(core::Buf::reserve)] = b.reserve;
    const int64_t elem = dtype_size(ctx_.config.dtype);
    auto ptr = [&](core::Ref r) {
      return static_cast<char*>(bases[static_cast<int>(r.buf)]) + r.at * elem;
    };
    HandlePool<CublasHandle>::Lease blas = blas_.acquire(stream);
    for (const core::StepOp& op : program.ops) {
      if (const auto* g = std::get_if<core::GemmOp>(&op)) {
        if (g->c.buf == core::Buf::dweights && b.dweights == nullptr) continue;
        gemm(blas.get(), *g, ptr(g->a), ptr(g->b), ptr(g->c));
      } else if (const auto* s = std::get_if<core::ColumnSumsOp>(&op)) {
        if (s->dst.buf == core::Buf::dweights && b.dweights == nullptr) continue;
        cuda::add_column_sums(ctx_.config.dtype, ptr(s->src), s->rows, s->width, ptr(s->dst),
                              s->also ? ptr(s->also) : nullptr, stream);
      } else if (const auto* c = std::get_if<core::CopyOp>(&op)) {
        check(
            calls().cudaMemcpyAsync(ptr(c->dst), ptr(c->src), static_cast<size_t>(c->count * elem),
                                    cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync (own path)");
      } else if (const auto* d = std::get_if<core::DropoutOp>(&op)) {
        apply_dropout(ctx_.config.dtype, ptr(d->data), ctx_.schedule.tokens, d->width,
                      drop.element_base, drop.seed, drop.counter, d->layer, drop.p, stream);
      } else {
        cells_.launch(std::get<core::CellOp>(op), bases, stream);
      }
    }
    check(calls().cudaGetLastError(), "own path kernels");
  }

 private:
  void gemm(cublasHandle_t h, const core::GemmOp& g, const void* A, const void* B, void* C) {
    const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
    const auto lda = static_cast<int>(g.lda), ldb = static_cast<int>(g.ldb),
               ldc = static_cast<int>(g.ldc);
    if (ctx_.config.dtype == DataType::f64) {
      const double one = 1.0, beta = g.beta;
      check(cublas().dgemm(h, op_b, op_a, n, m, k, &one, static_cast<const double*>(B), ldb,
                           static_cast<const double*>(A), lda, &beta, static_cast<double*>(C), ldc),
            "cublasDgemm");
      return;
    }
    const float one = 1.0f, beta = static_cast<float>(g.beta);
    if (fast_bf16_) {
      check(cublas().gemm_ex(h, op_b, op_a, n, m, k, &one, B, CUDA_R_32F, ldb, A, CUDA_R_32F, lda,
                             &beta, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F_FAST_16BF,
                             CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
      return;
    }
    check(cublas().sgemm(h, op_b, op_a, n, m, k, &one, static_cast<const float*>(B), ldb,
                         static_cast<const float*>(A), lda, &beta, static_cast<float*>(C), ldc),
          "cublasSgemm");
  }

  const PlanContext& ctx_;
  int device_;
  DeviceRows rows_;
  CellLauncher cells_;
  HandlePool<CublasHandle> blas_{&make_cublas, &attach_cublas};
  std::string math_;
  bool fast_bf16_ = false;
  MapUploads maps_;  // the batches' maps, flushed onto each call's stream
};

}  // namespace

std::unique_ptr<core::StepDevice> make_step_device(const PlanContext& ctx) {
  return std::make_unique<CudaStepDevice>(ctx);
}

}  // namespace rnnx::cuda
