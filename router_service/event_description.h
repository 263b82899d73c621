// One-line descriptions of run events, for replay's divergences and the tools that print logs.
#ifndef REIN_ROUTER_SERVICE_EVENT_DESCRIPTION_H_
#define REIN_ROUTER_SERVICE_EVENT_DESCRIPTION_H_

#include <string>

#include "rein/v1/types.pb.h"

namespace rein {

// A one-line summary of an event's body, e.g. `decision: write_file {"path":"a"}`.
std::string DescribeEvent(const rein::v1::RunEvent& event);

// `text` cut to 400 bytes, with "..." when it was longer.
std::string ShortenDescription(std::string text);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_EVENT_DESCRIPTION_H_
