#include "runtime/cpu_backend.h"

#include <cstring>
#include <limits>
#include <vector>

#include "runtime/mlp_model.h"

namespace optpipe::runtime {
namespace {

class CpuBackend final : public DeviceBackend {
 public:
  const char* name() const override { return "cpu"; }
  void* device_buffer(std::size_t bytes) override { return keep(bytes); }
  void* host_buffer(std::size_t bytes) override { return keep(bytes); }
  void compute_issued() override {}
  void copy_to_host(void* host, const void* device, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(host, device, bytes);
  }
  void copy_to_device(void* device, const void* host, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(device, host, bytes);
  }
  void poison(void* device, std::size_t bytes, DType dtype) override {
    char* p = static_cast<char*>(device);
    if (dtype == DType::kFloat64) {
      const double nan = std::numeric_limits<double>::quiet_NaN();
      for (std::size_t k = 0; k + sizeof nan <= bytes; k += sizeof nan) std::memcpy(p + k, &nan, sizeof nan);
    } else {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      for (std::size_t k = 0; k + sizeof nan <= bytes; k += sizeof nan) std::memcpy(p + k, &nan, sizeof nan);
    }
  }
  void synchronize() override {}
  std::unique_ptr<StageModel> make_model(const MlpConfig& config, int stage) override {
    return make_mlp_stage(config, stage);
  }

 private:
  void* keep(std::size_t bytes) {
    // Doubles, so that every buffer is aligned for the model's dtype.
    buffers_.emplace_back((bytes + sizeof(double) - 1) / sizeof(double) + 1);
    return buffers_.back().data();
  }
  std::vector<std::vector<double>> buffers_;
};

}  // namespace

std::unique_ptr<DeviceBackend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace optpipe::runtime
