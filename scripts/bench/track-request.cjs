// autocannon's setupRequest for POST /videos/track (CommonJS: autocannon's worker thread
// requires it by path). Every request tracks a link no request made before: an X/Twitter
// status id from a random start and a counter. The id ends in 1, which no simulator rule
// (ids ending in 404, 410, 500, 503) picks, so every link is a public video.
'use strict';
const { randomInt } = require('node:crypto');

const start = randomInt(100_000_000, 999_999_999);
let counter = 0;

module.exports = function setupRequest(request) {
  counter++;
  const id = `${start}${String(counter).padStart(9, '0')}1`;
  return { ...request, body: JSON.stringify({ video_link: `https://x.com/bench/status/${id}`, duration_days: 1 }) };
};
