// SVG markup helpers (svg_markup.h): number formats, escaping, width estimates, colours, elements.
#include "viz/svg_markup.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace optpipe::svg {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);  // no "-0.0"
  return s;
}

std::string px(double v) { return fixed(v, 1); }

std::string percent(double fraction) {
  const double p = fraction * 100.0;
  return fixed(p, std::fabs(p - std::round(p)) < 1e-9 ? 0 : 1) + "%";
}

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // XML 1.0 forbids most control characters, even escaped.
        out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
    }
  }
  return out;
}

double text_width(std::size_t chars, double font_size) {
  return static_cast<double>(chars) * font_size * kGlyphEm;
}

std::size_t glyphs(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string ellipsize(std::string_view s, std::size_t max_glyphs) {
  if (glyphs(s) <= max_glyphs) return std::string(s);
  std::size_t keep = max_glyphs > 0 ? max_glyphs - 1 : 0, i = 0;
  for (std::size_t n = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n++ == keep) break;
  }
  return std::string(s.substr(0, i)) + "\u2026";
}

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02X%02X%02X", c.r, c.g, c.b);
  return buf;
}

Rgb lighten(Rgb c, double f) {
  auto mix = [f](int v) { return static_cast<int>(std::lround(v + (255 - v) * f)); };
  return {mix(c.r), mix(c.g), mix(c.b)};
}

Rgb darken(Rgb c, double f) {
  auto mix = [f](int v) { return static_cast<int>(std::lround(v * (1 - f))); };
  return {mix(c.r), mix(c.g), mix(c.b)};
}

const char* text_colour_on(Rgb c) {
  return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b < 150 ? "#FFFFFF" : "#1A1A1A";
}

void rect(std::string& out, double x, double y, double w, double h, std::string_view attrs,
          std::string_view tooltip) {
  out += "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(w, 0.0)) + "\" height=\"" +
         px(std::max(h, 0.0)) + "\" ";
  out += attrs;
  if (tooltip.empty()) {
    out += "/>\n";
  } else {
    out += "><title>" + escape(tooltip) + "</title></rect>\n";
  }
}

void line(std::string& out, double x1, double y1, double x2, double y2, std::string_view attrs,
          std::string_view tooltip) {
  out += "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\" ";
  out += attrs;
  if (tooltip.empty()) {
    out += "/>\n";
  } else {
    out += "><title>" + escape(tooltip) + "</title></line>\n";
  }
}

void text(std::string& out, double x, double y, std::string_view content, std::string_view attrs) {
  out += "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" ";
  out += attrs;
  out += ">";
  out += content;
  out += "</text>\n";
}

void fitted_text(std::string& out, double x, double y, const std::string& s, double font_size, double max_width,
                 std::string_view attrs) {
  const auto max_glyphs = static_cast<std::size_t>(std::max(4.0, max_width / (font_size * kGlyphEm)));
  const std::string shown = ellipsize(s, max_glyphs);
  std::string content = escape(shown);
  if (shown != s) content = "<title>" + escape(s) + "</title>" + content;
  text(out, x, y, content, attrs);
}

}  // namespace optpipe::svg
