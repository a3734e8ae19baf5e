// SVG markup for the Gantt chart's parts (viz/gantt_svg_*.cc): numbers and text as SVG wants
// them (fixed decimals, XML escaping, width estimates, ellipsis), the colour palette, and the
// writers of <rect>, <line> and <text> elements. Nothing here knows about schedules.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace optpipe::svg {

// ---- Numbers and text ----------------------------------------------------------------------

std::string fixed(double v, int decimals);  // "%.*f", never "-0.0"
std::string px(double v);                   // one decimal, for coordinates
std::string percent(double fraction);       // 0.5 -> "50%", 0.125 -> "12.5%"
std::string escape(std::string_view s);     // XML text and attribute values

// Estimated advance of one glyph of sans-serif text, in em: generous for the digits and
// lower-case letters of DejaVu Sans and Liberation Sans (0.55 to 0.64 em), so that text
// measured with it stays in the room it was given.
inline constexpr double kGlyphEm = 0.62;

// Estimated width of `chars` glyphs at `font_size` px.
double text_width(std::size_t chars, double font_size);

// Number of UTF-8 code points (for width estimates).
std::size_t glyphs(std::string_view s);

// `s` cut to at most `max_glyphs` code points, the last one an ellipsis, when it is longer.
std::string ellipsize(std::string_view s, std::size_t max_glyphs);

// ---- Colours (Paul Tol's colour-blind-safe palettes) ----------------------------------------

struct Rgb {
  int r = 0, g = 0, b = 0;
};

inline constexpr Rgb kForward{0x44, 0x77, 0xAA};   // blue
inline constexpr Rgb kBackward{0xEE, 0x77, 0x33};  // orange
inline constexpr Rgb kWeight{0x22, 0x88, 0x33};    // green
inline constexpr Rgb kOffload{0x88, 0x55, 0xBB};   // purple
inline constexpr Rgb kReload{0x00, 0x99, 0x88};    // teal
inline constexpr const char* kLimitColour = "#CC3311";
inline constexpr const char* kMemoryFill = "#C9CFDA";
inline constexpr const char* kMemoryStroke = "#5B6677";
inline constexpr const char* kGrid = "#E4E4E4";
inline constexpr const char* kMuted = "#666666";

std::string hex(Rgb c);                 // "#4477AA"
Rgb lighten(Rgb c, double f);           // a fraction f of the way to white
Rgb darken(Rgb c, double f);            // a fraction f of the way to black
const char* text_colour_on(Rgb c);      // white on dark fills, near-black on light ones

// ---- Elements ----------------------------------------------------------------------------------
// `attrs` is raw attribute markup; a non-empty `tooltip` becomes a <title> child.

void rect(std::string& out, double x, double y, double w, double h, std::string_view attrs,
          std::string_view tooltip = {});
void line(std::string& out, double x1, double y1, double x2, double y2, std::string_view attrs,
          std::string_view tooltip = {});
// `content` is raw markup (escaped text or tspans).
void text(std::string& out, double x, double y, std::string_view content, std::string_view attrs);
// One line of text that fits `max_width` px: ellipsized, with the full text as tooltip when cut.
void fitted_text(std::string& out, double x, double y, const std::string& s, double font_size, double max_width,
                 std::string_view attrs);

}  // namespace optpipe::svg
