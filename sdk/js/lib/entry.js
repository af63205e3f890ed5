// The module build.sh componentizes: it adapts the plugin's plain functions to the WIT exports of
// `loadhost:plugin/doer` and `loadhost:plugin/lifecycle`. build.sh stages the plugin's folder so
// that its `plugin.js` sits one level above this file.
//
// Like the Rust SDK, every JS plugin exports the lifecycle interface; a plugin without `setup`,
// `init` or `teardown` gets no-op ones (the host then calls them at a negligible cost).

import * as plugin from '../plugin.js';
import { TaskError, takeBadSetting } from './loadhost.js';

if (typeof plugin.doTask !== 'function') {
  throw new Error('plugin.js must export a function doTask(task), e.g. `export function doTask(task) {}`');
}

const KINDS = new Set(['retryable', 'failed', 'abort']);
const OK = Object.freeze({ tag: 'ok', val: undefined });

// The innermost frame of an error's stack that is the plugin's own code, as `plugin.js:12`. The
// staging folder build.sh makes holds the plugin's files at its top and the SDK in lib/, and
// SpiderMonkey names them relative to it (`doTask@plugin.js:12:5`); componentize-js's own glue
// has an absolute path.
function pluginFrame(stack) {
  for (const line of String(stack ?? '').split('\n')) {
    const match = /@(.*):(\d+):\d+$/.exec(line);
    if (match === null) continue;
    const file = match[1];
    if (file.startsWith('lib/') || file.startsWith('/') || file.includes('://') || file === '') continue;
    return `${file}:${match[2]}`;
  }
  return undefined;
}

// One line for an exception that is no TaskError: `TypeError: message (plugin.js:12)`.
function describe(e) {
  if (!(e instanceof Error)) {
    let text = String(e);
    try {
      if (e !== null && typeof e === 'object') text = JSON.stringify(e) ?? text;
    } catch {
      // a cycle or a BigInt: String(e) it is
    }
    return `uncaught ${e === null ? 'null' : typeof e}: ${text}`;
  }
  let message = e.message;
  if (e instanceof ReferenceError && /^process is not defined/.test(message)) {
    message += ' (a plugin has no process.env: read settings with env() or envOr() from lib/loadhost.js)';
  }
  const text = message === '' ? e.name : `${e.name}: ${message}`;
  const at = pluginFrame(e.stack);
  return at === undefined ? text : `${text} (${at})`;
}

// A thrown or returned value as the WIT `task-error`. An exception that is not a TaskError (a bug,
// a failed JSON.parse, …) becomes `failed` with its description: the instance is still sound, so
// unlike a trap there is no need to replace it.
function taskError(e) {
  if (e instanceof TaskError) return { tag: e.kind, val: e.message };
  if (e !== null && typeof e === 'object' && KINDS.has(e.tag)) return { tag: e.tag, val: String(e.val) };
  return { tag: 'failed', val: describe(e) };
}

// The call's WIT result, unless a setting did not parse during it: then the run is aborted, even
// when the plugin caught the ConfigError.
function withBadSetting(result) {
  const message = takeBadSetting();
  return message === null ? result : { tag: 'err', val: { tag: 'abort', val: message } };
}

// doTask's outcome as the WIT result: undefined passes, a returned TaskError fails the task.
function taskResult(value) {
  return withBadSetting(value instanceof TaskError ? { tag: 'err', val: taskError(value) } : OK);
}

function thrown(e) {
  return withBadSetting({ tag: 'err', val: taskError(e) });
}

// A lifecycle function's outcome as the WIT `result<_, string>` error (undefined: it succeeded).
function lifecycleError(e) {
  const message = takeBadSetting();
  if (message !== null) return { tag: 'err', val: message };
  if (e === undefined) return undefined;
  return { tag: 'err', val: e instanceof TaskError ? e.message : describe(e) };
}

/** The `loadhost:plugin/doer` export. */
export const doer = {
  /** Runs one task; a returned promise (an async doTask) is awaited. */
  doTask(task) {
    try {
      const value = plugin.doTask(task);
      if (value !== null && typeof value === 'object' && typeof value.then === 'function') {
        return value.then(taskResult, thrown);
      }
      return taskResult(value);
    } catch (e) {
      return thrown(e);
    }
  },
};

/** The `loadhost:plugin/lifecycle` export, with no-op defaults. */
export const lifecycle = {
  /** Once per run before any load; the returned string goes to every init and to teardown. */
  async setup(options) {
    if (typeof plugin.setup !== 'function') return '';
    let data;
    try {
      data = await plugin.setup(options);
    } catch (e) {
      return lifecycleError(e);
    }
    return lifecycleError(undefined) ?? (data === undefined || data === null ? '' : String(data));
  },
  /** Once per worker (instance), before its first task. */
  async init(workerId, setupData) {
    if (typeof plugin.init !== 'function') return undefined;
    try {
      await plugin.init(workerId, setupData);
    } catch (e) {
      return lifecycleError(e);
    }
    return lifecycleError(undefined);
  },
  /** Once per run, after the load. */
  async teardown(setupData) {
    if (typeof plugin.teardown !== 'function') return undefined;
    try {
      await plugin.teardown(setupData);
    } catch (e) {
      return lifecycleError(e);
    }
    return lifecycleError(undefined);
  },
};
