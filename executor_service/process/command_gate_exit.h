/* What rein-sandbox-gate's exit status says (command_gate.h). C as well as C++: the gate
   (gate_main.c) is C without a C library. */
#ifndef REIN_EXECUTOR_SERVICE_PROCESS_COMMAND_GATE_EXIT_H_
#define REIN_EXECUTOR_SERVICE_PROCESS_COMMAND_GATE_EXIT_H_

/* rein-sandbox-gate's exit status when its gate was shut: the command never ran. */
#define REIN_GATE_SHUT_EXIT_CODE 125
/* Its exit status when the command could not be executed (as a shell's). */
#define REIN_GATE_EXEC_FAILED_EXIT_CODE 127

#ifdef __cplusplus
namespace rein {
inline constexpr int kGateShutExitCode = REIN_GATE_SHUT_EXIT_CODE;
inline constexpr int kGateExecFailedExitCode = REIN_GATE_EXEC_FAILED_EXIT_CODE;
}  // namespace rein
#endif

#endif  // REIN_EXECUTOR_SERVICE_PROCESS_COMMAND_GATE_EXIT_H_
