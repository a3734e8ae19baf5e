// The CPU backend's device side (device_backend.h): "device" buffers are host memory, copies
// are memcpy on the copy streams' threads (copy_stream.h), compute is synchronous, so there is
// nothing to order. With the threads or MPI transport this is the executor the tests run.
#pragma once

#include <memory>

#include "runtime/device_backend.h"

namespace optpipe::runtime {

std::unique_ptr<DeviceBackend> make_cpu_backend();

}  // namespace optpipe::runtime
