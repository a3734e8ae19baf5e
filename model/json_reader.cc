#include "model/json_reader.h"

#include <cmath>
#include <sstream>
#include <unordered_set>
#include <utility>
#include <vector>

#include "model/bytes.h"
#include "model/error.h"

namespace optpipe::json_reader {

json parse_text(std::string_view text) {
  // Track where the parser is (the current key of each open object, the current index of each
  // open array) to reject duplicate keys naming their field path; nlohmann would otherwise
  // resolve them silently by keeping the last one.
  struct Frame {
    bool is_object = false;
    std::size_t index = 0;  // arrays: index of the element being read
    std::string key;        // objects: the key being read
    std::unordered_set<std::string> keys;
  };
  std::vector<Frame> open;
  // The field path of the value being read: the current key of each open object, the current
  // index of each open array.
  auto open_path = [&](std::size_t frames) {
    std::string path;
    for (std::size_t i = 0; i < frames; ++i) path = open[i].is_object ? join(path, open[i].key) : index(path, open[i].index);
    return path;
  };
  std::string duplicate;  // field path of the first duplicate key
  auto element_done = [&] {
    if (!open.empty() && !open.back().is_object) ++open.back().index;
  };
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        // Deeper documents are refused while they are read: the library's writer and copies
        // recurse once per level, and 100000 nested arrays overflowed the stack of the error
        // message that dumps the value (issue 20).
        if (open.size() >= kMaxNesting) {
          const std::string path = open_path(open.size());
          fail(path.empty() ? "top level" : path, "nested deeper than " + std::to_string(kMaxNesting) +
                                                      " arrays and objects (no field of these formats nests deeper than 5)");
        }
        open.push_back(Frame{event == json::parse_event_t::object_start, 0, {}, {}});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!open.empty()) open.pop_back();
        element_done();
        break;
      case json::parse_event_t::value: element_done(); break;
      case json::parse_event_t::key:
        if (!open.empty()) {
          Frame& top = open.back();
          top.key = parsed.get<std::string>();
          if (!top.keys.insert(top.key).second && duplicate.empty()) duplicate = open_path(open.size());
        }
        break;
    }
    return true;
  };
  json result;
  try {
    result = json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ..."
    const auto pos = what.find("parse error");
    throw InputError("not valid JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  } catch (const json::out_of_range& e) {
    // A number beyond the largest double ("1e400"): "[json.exception.out_of_range.406] number
    // overflow parsing '1e400'". The open frames say whose value it is.
    std::string what = e.what();
    const auto quote = what.find('\'');
    std::string literal = quote == std::string::npos ? std::string() : what.substr(quote);
    if (literal.size() > 40) literal = literal.substr(0, 36) + "...'";
    const std::string path = open_path(open.size());
    fail(path.empty() ? "top level" : path,
         "the number " + literal + " is out of range (beyond the largest double, about 1.8e308)");
  } catch (const json::exception& e) {  // nothing else is documented for parse(); never a crash
    throw InputError(std::string("not valid JSON: ") + e.what());
  }
  if (!duplicate.empty()) {
    fail(duplicate, "duplicate key (each field may appear only once per object)");
  }
  return result;
}

void fail(const std::string& path, const std::string& reason) {
  throw InputError(path.empty() ? reason : path + ": " + reason);
}

void expect_format(const json& doc, std::string_view expected, std::string_view kind) {
  // The document kinds a user may pass where another belongs (the two arguments swapped).
  static constexpr std::pair<std::string_view, std::string_view> kKinds[] = {
      {"optpipe-instance/1", "instance"}, {"optpipe-schedule/1", "schedule"}};
  const std::string format = string(require(doc, "", "format"), "format");
  if (format == expected) return;
  for (const auto& [other, other_kind] : kKinds) {
    if (format == other) {
      fail("format", "\"" + format + "\" is " + (other_kind == "instance" ? "an " : "a ") + std::string(other_kind) +
                         ", not " + (kind == "instance" ? "an " : "a ") + std::string(kind) + " (which must be \"" +
                         std::string(expected) + "\"): are INSTANCE and SCHEDULE swapped?");
    }
  }
  fail("format", "must be \"" + std::string(expected) + "\", got \"" + format + "\"");
}

std::string describe(const json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  switch (value.type()) {
    case json::value_t::string: return "the string " + text;
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::null: return "null";
    case json::value_t::boolean: return text;
    default: return text;
  }
}

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

void expect_object(const json& value, const std::string& path) {
  if (!value.is_object()) fail(path.empty() ? "top level" : path, "must be an object, got " + describe(value));
}

void expect_array(const json& value, const std::string& path) {
  if (!value.is_array()) fail(path, "must be an array, got " + describe(value));
}

void expect_only_keys(const json& object, const std::string& path,
                      std::initializer_list<std::string_view> allowed) {
  for (const auto& item : object.items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || item.key() == a;
    if (known) continue;
    std::ostringstream list;
    bool first = true;
    for (std::string_view a : allowed) {
      list << (first ? "" : ", ") << a;
      first = false;
    }
    fail(join(path, item.key()), "unknown field (allowed here: " + list.str() + ")");
  }
}

const json& require(const json& object, const std::string& path, std::string_view key) {
  auto it = object.find(std::string(key));
  if (it == object.end()) fail(join(path, key), "missing required field");
  return *it;
}

const json* optional(const json& object, std::string_view key) {
  auto it = object.find(std::string(key));
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

double number(const json& value, const std::string& path) {
  if (!value.is_number()) fail(path, "must be a number, got " + describe(value));
  const double v = value.get<double>();
  if (!std::isfinite(v)) fail(path, "must be a finite number");
  return v;
}

double non_negative(const json& value, const std::string& path) {
  const double v = number(value, path);
  if (v < 0) fail(path, "must be >= 0, got " + value.dump());
  return v;
}

double bytes(const json& value, const std::string& path) {
  double v = 0;
  if (value.is_string()) {
    std::string why;
    auto parsed = parse_bytes(value.get<std::string>(), &why);
    if (!parsed) fail(path, why);
    v = *parsed;
  } else if (value.is_number()) {
    v = number(value, path);
  } else {
    fail(path, "must be a byte size (a number or a string like \"80GiB\"), got " + describe(value));
  }
  if (v < 0) fail(path, "must be >= 0 bytes, got " + value.dump());
  if (v > kMaxBytes) fail(path, "must be at most 1e21 bytes (1 ZB), got " + value.dump());
  return v;
}

double duration(const json& value, const std::string& path) {
  const double v = non_negative(value, path);
  if (v > kMaxMilliseconds) fail(path, "must be at most 1e9 ms (11.6 days), got " + value.dump());
  return v;
}

long long integer(const json& value, const std::string& path) {
  if (!value.is_number()) fail(path, "must be an integer, got " + describe(value));
  if (value.is_number_integer()) return value.get<long long>();
  const double v = value.get<double>();
  if (!std::isfinite(v) || std::floor(v) != v || std::fabs(v) > 1e15) {
    fail(path, "must be an integer, got " + value.dump());
  }
  return static_cast<long long>(v);
}

bool boolean(const json& value, const std::string& path) {
  if (!value.is_boolean()) fail(path, "must be true or false, got " + describe(value));
  return value.get<bool>();
}

std::string string(const json& value, const std::string& path) {
  if (!value.is_string()) fail(path, "must be a string, got " + describe(value));
  return value.get<std::string>();
}

}  // namespace optpipe::json_reader
