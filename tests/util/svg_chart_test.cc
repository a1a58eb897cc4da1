#include "outpost/util/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace outpost::util {
namespace {

TEST(NiceTicks, RoundStepsCoveringTheRange) {
  EXPECT_EQ(NiceTicks(0, 1880, 5), (std::vector<double>{0, 500, 1000, 1500, 2000}));
  EXPECT_EQ(NiceTicks(0, 16, 8), (std::vector<double>{0, 2, 4, 6, 8, 10, 12, 14, 16}));
  EXPECT_EQ(NiceTicks(0, 0.9, 4), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(NiceTicks(-3, 7, 5), (std::vector<double>{-4, -2, 0, 2, 4, 6, 8}));
  // A flat series still gets an axis.
  EXPECT_GE(NiceTicks(5, 5, 5).size(), 2u);
  const auto flat_zero = NiceTicks(0, 0, 5);
  EXPECT_EQ(flat_zero.front(), 0);
  EXPECT_NEAR(flat_zero.back(), 1, 1e-12);
}

TEST(LogTicks, PowersOfTen) {
  EXPECT_EQ(LogTicks(12, 3.4e6),
            (std::vector<double>{10, 100, 1000, 10000, 100000, 1000000, 10000000}));
  EXPECT_EQ(LogTicks(100, 100), (std::vector<double>{100, 1000}));
}

TEST(TickLabel, NoExponentsAndSiSuffixes) {
  EXPECT_EQ(TickLabel(0, 500), "0");
  EXPECT_EQ(TickLabel(500, 500), "500");
  EXPECT_EQ(TickLabel(1000, 500), "1k");
  EXPECT_EQ(TickLabel(1500, 500), "1.5k");
  EXPECT_EQ(TickLabel(1880, 10), "1.88k");
  EXPECT_EQ(TickLabel(2e6, 1e6), "2M");
  EXPECT_EQ(TickLabel(0.25, 0.25), "0.25");
  EXPECT_EQ(TickLabel(-1500, 500), "-1.5k");
  EXPECT_EQ(TickLabel(10, 10), "10");
  for (double v : {1e3, 1.88e3, 751.0, 1e7}) {
    EXPECT_EQ(TickLabel(v, v).find('e'), std::string::npos) << v;
  }
}

TEST(SvgLineChart, LegendAbovePlotLinesClippedTicksRound) {
  LineChart c;
  c.title = "Tokens/s <as> sessions grow";
  c.x = {"sessions", false};
  c.y = {"tokens/s", false};
  c.xs = {1, 2, 4, 8, 16};
  c.series = {{"aggregate", {50, 90, 160, 300, 1880}, false},
              {"per user", {50, 45, 40, std::nan(""), 17}, true}};
  c.markers = {{6, "crossover"}};
  const std::string svg = SvgLineChart(c);
  EXPECT_NE(svg.find("viewBox=\"0 0 720 400\""), std::string::npos);
  EXPECT_NE(svg.find("&lt;as&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">1.5k<"), std::string::npos);
  EXPECT_NE(svg.find(">2k<"), std::string::npos);
  EXPECT_EQ(svg.find("e+"), std::string::npos);
  EXPECT_NE(svg.find("clip-path=\"url(#plot"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray=\"6 4\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"marker\""), std::string::npos);
  // The NaN breaks "per user" into two polylines: three in all.
  size_t polylines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1))
    ++polylines;
  EXPECT_EQ(polylines, 3u);
  // The legend comes after the lines in the document but sits above the plot:
  // its text baseline (y=44) is above the plot's top edge.
  const size_t legend = svg.find("class=\"legend\"");
  ASSERT_NE(legend, std::string::npos);
  EXPECT_NE(svg.find("y=\"44.0\"", legend), std::string::npos);
}

TEST(SvgLineChart, WholeNumberXGetsWholeNumberTicks) {
  LineChart c;
  c.title = "t";
  c.xs = {1, 2, 4};
  c.series = {{"s", {1, 2, 3}, false}};
  const std::string svg = SvgLineChart(c);
  EXPECT_EQ(svg.find(">1.5<"), std::string::npos);
  EXPECT_NE(svg.find(">3<"), std::string::npos);
}

TEST(SvgLineChart, LogAxisDropsNonPositive) {
  LineChart c;
  c.title = "cost";
  c.x = {"requests per day", true};
  c.y = {"USD per month", false};
  c.xs = {0, 10, 1000, 100000};
  c.series = {{"cloud", {0, 1, 100, 10000}, false}};
  const std::string svg = SvgLineChart(c);
  EXPECT_NE(svg.find(">100k<"), std::string::npos);
  EXPECT_NE(svg.find(">10<"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(HtmlEscape, Entities) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">&</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;");
}

}  // namespace
}  // namespace outpost::util

namespace outpost::util {
namespace {

TEST(SiNumber, ThreeSignificantDigits) {
  EXPECT_EQ(SiNumber(1929.06), "1.93k");
  EXPECT_EQ(SiNumber(9932812), "9.93M");
  EXPECT_EQ(SiNumber(12.5), "12.5");
  EXPECT_EQ(SiNumber(1e6), "1M");
  EXPECT_EQ(SiNumber(999.6), "1k");
  EXPECT_EQ(SiNumber(0), "0");
}

}  // namespace
}  // namespace outpost::util
