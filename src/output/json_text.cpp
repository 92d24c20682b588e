// json_text(): nlohmann's pretty printer (serializer::dump with pretty_print, indent_step 2) walked
// the same way, object members in the tree's (sorted) order.
#include "output/json_text.h"

#include <cmath>

namespace gpuleak::output {

nlohmann::json report_number(double v, int decimals) {
  if (!std::isfinite(v)) return nullptr;
  double r = std::round(v);
  if (std::fabs(v - r) < 1e-6 && std::fabs(r) < 9e15) return static_cast<int64_t>(r);
  double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

using json = nlohmann::json;

void JsonTextWriter::value(const json &v, size_t indent) {
  switch (v.type()) {
    case json::value_t::object:
      return object(v, indent);
    case json::value_t::array:
      return array(v, indent);
    case json::value_t::string:
      return string(v.get_ref<const json::string_t &>(), &v);
    case json::value_t::boolean:
      return boolean(v.get<bool>());
    case json::value_t::null:
      return put("null", 4);
    case json::value_t::number_integer:
      return integer(v.get<json::number_integer_t>());
    case json::value_t::number_unsigned:
      return integer(v.get<json::number_unsigned_t>());
    default:  // floating point (nlohmann's shortest round trip), binary, discarded
      return put(v.dump(2, ' ', false, json::error_handler_t::replace));
  }
}

void JsonTextWriter::object(const json &v, size_t indent, const Splice *splice) {
  const auto &members = v.get_ref<const json::object_t &>();
  size_t left = members.size() + (splice ? 1 : 0);
  if (left == 0) return put("{}", 2);
  put("{\n", 2);
  auto write_member = [&](const std::string &key, auto &&write_value) {
    spaces(indent + 2);
    string(key, nullptr);
    put(": ", 2);
    write_value();
    --left ? put(",\n", 2) : put("\n", 1);
  };
  auto write_splice = [&] { write_member(splice->key, [&] { splice->write(*this, indent + 2); }); };
  for (const auto &[key, member] : members) {
    if (splice && splice->key < key) write_splice(), splice = nullptr;  // std::map's order: std::less
    write_member(key, [&] { value(member, indent + 2); });
  }
  if (splice) write_splice();
  spaces(indent);
  put("}", 1);
}

void JsonTextWriter::array(const json &v, size_t indent) {
  const auto &items = v.get_ref<const json::array_t &>();
  if (items.empty()) return put("[]", 2);
  put("[\n", 2);
  size_t left = items.size();
  for (const json &item : items) {
    spaces(indent + 2);
    value(item, indent + 2);
    --left ? put(",\n", 2) : put("\n", 1);
  }
  spaces(indent);
  put("]", 1);
}

void JsonTextWriter::string(const std::string &s) { string(s, nullptr); }

// Printable ASCII other than '"' and '\\' is written as it is by nlohmann too; any other byte
// (control characters, UTF-8, invalid UTF-8) sends the whole string through nlohmann. `v` is the
// string's own value when it has one (a key has none).
void JsonTextWriter::string(const std::string &s, const json *v) {
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b > 0x7e || c == '"' || c == '\\') {
      return put(v ? v->dump(-1, ' ', false, json::error_handler_t::replace)
                   : json(s).dump(-1, ' ', false, json::error_handler_t::replace));
    }
  }
  put("\"", 1);
  put(s);
  put("\"", 1);
}

void JsonTextWriter::spaces(size_t n) {
  static constexpr char kSpaces[] = "                                ";  // 32
  for (; n > 32; n -= 32) put(kSpaces, 32);
  put(kSpaces, n);
}

std::string json_text(const json &value) {
  std::string out;
  out.reserve(1 << 16);
  JsonTextWriter w(&out);
  w.value(value, 0);
  w.flush();
  return out;
}

std::string json_text(const json &value, const JsonTextWriter::Splice &splice) {
  std::string out;
  out.reserve(1 << 16);
  JsonTextWriter w(&out);
  w.object(value, 0, &splice);
  w.flush();
  return out;
}

}  // namespace gpuleak::output
