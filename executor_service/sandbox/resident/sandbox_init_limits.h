// What one command message to a resident sandbox's init (rein-sandbox-init) may carry; shared by
// the executor's side (ResidentSandbox) and init, which has no other dependency.
#ifndef REIN_EXECUTOR_SERVICE_SANDBOX_INIT_LIMITS_H_
#define REIN_EXECUTOR_SERVICE_SANDBOX_INIT_LIMITS_H_

#include <cstddef>

namespace rein {

// argv and environment strings together. Init refuses a message with more (and exits); the
// executor sends such a command the cold path instead.
inline constexpr size_t kSandboxInitMaxStrings = 1 << 15;

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_SANDBOX_INIT_LIMITS_H_
