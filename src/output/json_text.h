// A JSON value as the report's text: what nlohmann's dump(2, ' ', false, error_handler_t::replace)
// writes, byte for byte (2-space indentation, UTF-8 kept, invalid UTF-8 as U+FFFD). nlohmann's
// serializer hands its output adapter every token through a virtual call; here plain ASCII
// strings and integers are appended to one string, about a quarter fewer instructions on the 4 MB
// report of 10,000 listed iterations. Anything else (a string that needs escaping or holds
// non-ASCII bytes, a floating point number) is still written by nlohmann: no rule of its own is
// re-implemented.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gpuleak::output {

std::string json_text(const nlohmann::json &value);

}  // namespace gpuleak::output
