// The live dashboard at GET /: one self-contained HTML page (inline CSS and
// JavaScript, no CDN, no external fonts: sites are often offline) that polls
// /ready and /dashboard/history every two seconds and shows health, capacity,
// the queue, tokens/s and time to first token over the last hour, the route
// split, upstreams, models and sensors. Pure; thread-safe.
#pragma once

#include <string>

namespace outpost::api {

const std::string& DashboardHtml();

}  // namespace outpost::api
