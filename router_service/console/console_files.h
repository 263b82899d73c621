// The console's files (index.html, app.js, app.css), built into the router so that it serves
// them from any image, even one with nothing else in it.
#ifndef REIN_ROUTER_SERVICE_CONSOLE_CONSOLE_FILES_H_
#define REIN_ROUTER_SERVICE_CONSOLE_CONSOLE_FILES_H_

#include <cstddef>
#include <vector>

namespace rein::console {

struct ConsoleFile {
  const char* path;          // "/index.html"
  const char* content_type;  // "text/html; charset=utf-8"
  const unsigned char* data;
  size_t size;
};

// Empty when the bundle was not built (./dev setup builds it with npm and esbuild).
const std::vector<ConsoleFile>& ConsoleFiles();

}  // namespace rein::console

#endif  // REIN_ROUTER_SERVICE_CONSOLE_CONSOLE_FILES_H_
