// The OpenTelemetry GenAI semantic conventions' names rein records (v1.36, and the newest where
// OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental asks for them), and rein's own.
#ifndef REIN_TRACE_GENAI_H_
#define REIN_TRACE_GENAI_H_

namespace rein::trace::genai {

inline constexpr char kOperationName[] = "gen_ai.operation.name";
// The model provider: gen_ai.system up to v1.36, gen_ai.provider.name since (ProviderKey).
inline constexpr char kSystem[] = "gen_ai.system";
inline constexpr char kProviderName[] = "gen_ai.provider.name";
inline constexpr char kAgentName[] = "gen_ai.agent.name";
inline constexpr char kAgentId[] = "gen_ai.agent.id";
inline constexpr char kConversationId[] = "gen_ai.conversation.id";
inline constexpr char kRequestModel[] = "gen_ai.request.model";
inline constexpr char kResponseModel[] = "gen_ai.response.model";
inline constexpr char kResponseId[] = "gen_ai.response.id";
inline constexpr char kFinishReasons[] = "gen_ai.response.finish_reasons";
inline constexpr char kInputTokens[] = "gen_ai.usage.input_tokens";
inline constexpr char kOutputTokens[] = "gen_ai.usage.output_tokens";
inline constexpr char kCacheReadTokens[] = "gen_ai.usage.cache_read.input_tokens";
inline constexpr char kCacheCreationTokens[] = "gen_ai.usage.cache_creation.input_tokens";
inline constexpr char kToolName[] = "gen_ai.tool.name";
inline constexpr char kToolCallId[] = "gen_ai.tool.call.id";
inline constexpr char kToolType[] = "gen_ai.tool.type";
// Content (only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).
inline constexpr char kToolCallArguments[] = "gen_ai.tool.call.arguments";
inline constexpr char kToolCallResult[] = "gen_ai.tool.call.result";
inline constexpr char kSystemInstructions[] = "gen_ai.system_instructions";
inline constexpr char kInputMessages[] = "gen_ai.input.messages";
inline constexpr char kOutputMessages[] = "gen_ai.output.messages";
inline constexpr char kErrorType[] = "error.type";
inline constexpr char kTokenType[] = "gen_ai.token.type";  // a metric's: input or output

// Operation names (gen_ai.operation.name) and the span names built from them.
inline constexpr char kInvokeAgent[] = "invoke_agent";
inline constexpr char kChat[] = "chat";
inline constexpr char kExecuteTool[] = "execute_tool";
inline constexpr char kAnthropic[] = "anthropic";
inline constexpr char kAgent[] = "rein";

inline const char* ProviderKey(bool latest) { return latest ? kProviderName : kSystem; }

}  // namespace rein::trace::genai

namespace rein::trace::attr {

inline constexpr char kRunId[] = "rein.run.id";
inline constexpr char kStage[] = "rein.stage";
inline constexpr char kStretch[] = "rein.run.stretch";         // 1, 2, ... per run
inline constexpr char kStretchEnd[] = "rein.run.stretch_end";  // paused, ended, interrupted, ...
inline constexpr char kOutcome[] = "rein.run.outcome";         // TerminationReason when ended
inline constexpr char kPauseReason[] = "rein.run.pause_reason";
inline constexpr char kCommits[] = "rein.router.commits";
inline constexpr char kCommitSeconds[] = "rein.router.commit_seconds";
inline constexpr char kQueueSeconds[] = "rein.router.queue_seconds";
inline constexpr char kMutating[] = "rein.tool.mutating";
inline constexpr char kReplayed[] = "rein.tool.replayed";
inline constexpr char kToolOk[] = "rein.tool.ok";
inline constexpr char kToolDurationMs[] = "rein.tool.duration_ms";
inline constexpr char kExecutorId[] = "rein.executor.id";
inline constexpr char kBackend[] = "rein.planner.backend";

}  // namespace rein::trace::attr

#endif  // REIN_TRACE_GENAI_H_
