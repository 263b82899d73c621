// A model request's content on its `chat` span, in the GenAI conventions' attributes, when the
// operator opts in (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; personal data).
#ifndef REIN_PLANNER_SERVICE_CHAT_CONTENT_H_
#define REIN_PLANNER_SERVICE_CHAT_CONTENT_H_

#include <cstddef>

#include "nlohmann/json.hpp"
#include "trace/tracer.h"

namespace rein {

// An attribute's most bytes: a longer one is cut there (and is then no longer whole JSON).
inline constexpr size_t kMaxContentBytes = 256 * 1024;

// Records a Messages API request `body` and its reply `message` on `span`:
// `gen_ai.system_instructions` (the system blocks), `gen_ai.input.messages` and
// `gen_ai.output.messages` as the conventions' JSON (role, parts of type text / tool_call /
// tool_call_response, the output's finish_reason). Only the body's text is recorded, never a
// header (the API key travels in one).
void RecordChatContent(trace::Span& span, const nlohmann::json& body,
                       const nlohmann::json& message);

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_CHAT_CONTENT_H_
