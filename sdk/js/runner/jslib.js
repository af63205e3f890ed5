// k6's popular remote modules ("jslib": `https://jslib.k6.io/NAME/VERSION/index.js`), written for
// loadhost from their documented behaviour (no jslib code is copied), so that a k6 script importing
// them runs with no network at run time. One copy of each serves every VERSION a script names;
// docs/migrating.md lists what each has.
//
// The loader maps `https://jslib.k6.io/NAME/…` to `jslib/NAME` (see `jslibName`); any other remote
// module is still refused.

import { k6 } from './k6.js';
import { htmlReport, jUnit, textSummary } from './k6summary.js';

const LOWER_ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A whole number from `min` to `max`, both included (k6-utils' randomIntBetween). */
function randomIntBetween(min, max) {
  const low = Math.ceil(Number(min));
  const high = Math.floor(Number(max));
  return Math.floor(Math.random() * (high - low + 1) + low);
}

/** One element of `array`, each as likely. */
function randomItem(array) {
  return array[Math.floor(Math.random() * array.length)];
}

/** `length` characters drawn from `charset` (lower-case letters and digits by default). */
function randomString(length, charset = LOWER_ALNUM) {
  let out = '';
  for (let i = 0; i < length; i += 1) out += charset[Math.floor(Math.random() * charset.length)];
  return out;
}

/**
 * A version 4 (random) UUID, `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx` (RFC 9562). The argument k6-utils
 * takes to ask for a secure source is accepted: `crypto.getRandomValues` is used either way when the
 * runner has it.
 */
function uuidv4(_secure = false) {
  const bytes = new Uint8Array(16);
  if (globalThis.crypto?.getRandomValues) {
    globalThis.crypto.getRandomValues(bytes);
  } else {
    for (let i = 0; i < 16; i += 1) bytes[i] = Math.floor(Math.random() * 256);
  }
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The text of `content` between `left` and `right`: the first such span, or with `repeat` every one
 * of them (an array); `null` (or an empty array) when there is none.
 */
function findBetween(content, left, right, repeat = false) {
  const found = [];
  let from = 0;
  for (;;) {
    const start = content.indexOf(left, from);
    if (start === -1) break;
    const after = start + left.length;
    const end = content.indexOf(right, after);
    if (end === -1) break;
    if (!repeat) return content.slice(after, end);
    found.push(content.slice(after, end));
    from = end + right.length;
  }
  return repeat ? found : null;
}

const utils = { randomIntBetween, randomItem, randomString, uuidv4, findBetween, check: k6.check };

/** The modules, by the name after `https://jslib.k6.io/`. */
export const JSLIB = {
  'k6-utils': Object.freeze({ ...utils, default: utils }),
  'k6-summary': Object.freeze({ textSummary, jUnit, default: { textSummary, jUnit } }),
  // Not a jslib module: k6-reporter, by its repository's raw URL (see `jslibName`).
  'k6-reporter': Object.freeze({ htmlReport, default: { htmlReport } }),
  // The runner has the WHATWG URL and URLSearchParams the jslib module provides.
  url: Object.freeze({
    URL: globalThis.URL,
    URLSearchParams: globalThis.URLSearchParams,
    default: { URL: globalThis.URL, URLSearchParams: globalThis.URLSearchParams },
  }),
};

/** The jslib module `specifier` names (`https://jslib.k6.io/k6-utils/1.4.0/index.js` → `k6-utils`). */
export function jslibName(specifier) {
  const match = /^https:\/\/jslib\.k6\.io\/([a-z0-9-]+)\/[0-9][0-9A-Za-z.-]*\/(index\.js)?$/.exec(specifier);
  if (match !== null) return match[1];
  // k6-reporter, at any branch or tag of its repository.
  return /^https:\/\/raw\.githubusercontent\.com\/benc-uk\/k6-reporter\/[0-9A-Za-z.-]+\/dist\/bundle\.js$/.test(specifier)
    ? 'k6-reporter'
    : undefined;
}
