// reinctl's one line per run event (`reinctl watch`, `reinctl events`).
#ifndef REIN_CLI_EVENT_LINE_H_
#define REIN_CLI_EVENT_LINE_H_

#include <string>

#include "rein/v1/router.pb.h"

namespace rein::cli {

// One readable line for an event, without a trailing newline, e.g. "#12 PLANNING -> DECIDING".
// Free text in the event is cut to one line (OneLine).
std::string EventLine(const v1::RunEvent& event);

}  // namespace rein::cli

#endif  // REIN_CLI_EVENT_LINE_H_
