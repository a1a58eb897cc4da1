// DailyWindow (util/daily_window.h): the grammar, windows inside a day and
// across midnight, and how long until one opens — at local times built with
// mktime, so the test holds in any time zone.
#include "outpost/util/daily_window.h"

#include <gtest/gtest.h>

namespace outpost::util {
namespace {

std::time_t At(int h, int m, int s = 0) {
  std::tm tm{};
  tm.tm_year = 126;  // 2026
  tm.tm_mon = 5;
  tm.tm_mday = 15;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = s;
  tm.tm_isdst = -1;
  return std::mktime(&tm);
}

TEST(DailyWindow, EmptyIsAlwaysOpen) {
  auto w = DailyWindow::Parse("", "window");
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->always_open());
  EXPECT_TRUE(w->Contains(At(3, 0)));
  EXPECT_EQ(w->SecondsUntilOpen(At(3, 0)), 0);
}

TEST(DailyWindow, InsideADayAndAcrossMidnight) {
  auto day = DailyWindow::Parse("09:30-17:00", "window");
  ASSERT_TRUE(day.ok());
  EXPECT_FALSE(day->Contains(At(9, 29, 59)));
  EXPECT_TRUE(day->Contains(At(9, 30)));
  EXPECT_TRUE(day->Contains(At(16, 59, 59)));
  EXPECT_FALSE(day->Contains(At(17, 0)));  // the end is not inside
  EXPECT_EQ(day->SecondsUntilOpen(At(9, 0)), 30 * 60);
  EXPECT_EQ(day->SecondsUntilOpen(At(18, 0)), (24 - 18) * 3600 + 9 * 3600 + 30 * 60);
  auto night = DailyWindow::Parse("22:00-06:00:30", "window");
  ASSERT_TRUE(night.ok());
  EXPECT_TRUE(night->Contains(At(23, 0)));
  EXPECT_TRUE(night->Contains(At(0, 0)));
  EXPECT_TRUE(night->Contains(At(6, 0, 29)));
  EXPECT_FALSE(night->Contains(At(6, 0, 30)));
  EXPECT_FALSE(night->Contains(At(12, 0)));
  EXPECT_EQ(night->SecondsUntilOpen(At(21, 59, 50)), 10);
  EXPECT_EQ(night->text(), "22:00-06:00:30");
}

TEST(DailyWindow, BadWindowsNameTheParam) {
  for (const char* bad : {"22:00", "22-06", "25:00-06:00", "22:60-06:00", "10:00-10:00",
                          "22:00-6:00", "22:00-06:00:61", "22:00:00:00-06:00", "night"}) {
    auto w = DailyWindow::Parse(bad, "pull_window");
    ASSERT_FALSE(w.ok()) << bad;
    EXPECT_EQ(w.status().param(), "pull_window") << bad;
    EXPECT_NE(w.status().message().find("HH:MM-HH:MM"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace outpost::util
