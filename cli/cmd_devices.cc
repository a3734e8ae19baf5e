#include "cli/cmd_devices.h"

#include <iostream>
#include <thread>

#include "cli/exit_codes.h"
#include "model/bytes.h"
#include "kernels/cuda_devices.h"

namespace optpipe::cli {

CLI::App* add_devices_command(CLI::App& app) {
  return app.add_subcommand("devices", "Show the CUDA devices this build can use");
}

int run_devices() {
  const CudaDevices info = query_cuda_devices();
  // The CUDA plugin (plugins/cuda_plugin.h) is loaded here; without it the status says why.
  if (info.plugin_loaded) std::cout << "CUDA plugin: " << info.plugin << "\n";
  std::cout << "CUDA: " << info.status << "\n";
  for (const CudaDevice& d : info.devices) {
    std::cout << "  GPU " << d.index << ": " << d.name << ", compute capability " << d.major << "." << d.minor << ", "
              << format_bytes(d.memory_bytes) << ", " << d.multiprocessors << " SMs\n";
  }
  std::cout << "CPU threads available: " << std::thread::hardware_concurrency() << "\n";
  return kOk;
}

}  // namespace optpipe::cli
