// rnnx's own recurrent algorithm as a backend on any device that can run its step programs
// (step_program.hpp): the device brings a StepDevice (its memory, its row copier for the batch
// mover, and the program's operations: GEMMs, fused cell steps, dropout); this file does the
// rest once, device-neutral: the caller's rows and states in and out of the programs' sorted
// order and padding (core/batch_mover.hpp), weight-gradient overwrite or accumulation. The cuda
// backend runs it for the configs cuDNN cannot express (src/cuda/step_device.cpp); the tests run it
// with a host device against the reference (tests/test_step_program.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/batch_mover.hpp"
#include "core/memory.hpp"
#include "core/step_program.hpp"

namespace rnnx::core {

class StepDevice {
 public:
  virtual ~StepDevice() = default;
  // What runs the programs, for impl_name(): "cuda:own/fp32".
  virtual std::string name() const = 0;
  virtual const Memory& memory() const = 0;
  virtual bool takes_stream() const = 0;
  // What a caller's workspace and reserve must be aligned to (BackendImpl::buffer_alignment).
  virtual size_t buffer_alignment() const { return alignof(double); }
  // A batch's maps (at bind time): where in the device's memory the calls will read them
  // (a buffer the device keeps across batches), there by the time flush_maps(stream) has
  // ordered them before a call's work on `stream`, which every call does first.
  virtual const int64_t* upload(const std::vector<int64_t>& map) = 0;
  virtual void flush_maps(void* stream) = 0;
  // Its copies of rows in its memory, for the batch mover (core/batch_mover.hpp) and fills.
  virtual const RowCopier& rows() const = 0;

  struct Buffers {
    const void* input = nullptr;
    const void* weights = nullptr;
    void* dweights = nullptr;  // null: the program's weight-gradient operations are skipped
    void* workspace = nullptr;
    void* reserve = nullptr;
  };
  struct Dropout {
    const int64_t* element_base = nullptr;  // per packed row: its first element's index
    uint64_t seed = 0, counter = 0;
    double p = 0;
  };
  virtual void run(const StepProgram& program, const Buffers& buffers, const Dropout& dropout,
                   void* stream) = 0;
};

// The backend over `device` for the plan of ctx.
std::unique_ptr<BackendImpl> make_step_backend(const PlanContext& ctx,
                                               std::unique_ptr<StepDevice> device);

}  // namespace rnnx::core
