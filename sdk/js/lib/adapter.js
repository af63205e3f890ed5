// The WIT exports of every JS plugin, `loadhost:plugin/doer` and `loadhost:plugin/lifecycle`,
// adapting a plugin module's plain functions (doTask, setup, init, teardown) to them. Two modules
// use it: lib/entry.js, for a plugin built into its component by build.sh, and the script runner
// (runner/runner.js), which loads the plugin from the script's folder at run time.
//
// Like the Rust SDK, every JS plugin exports the lifecycle interface; a plugin without `setup`,
// `init` or `teardown` gets no-op ones (the host then calls them at a negligible cost).

import { TaskError, takeBadSetting } from './loadhost.js';

// The engine's own fetch() needs wasi:http, which no plugin is given: a script that called it
// trapped its instance with an opaque "unreachable … [constructor]fields". A JS error instead,
// thrown where the script called it, that says what to use.
globalThis.fetch = function fetch() {
  throw new TypeError(
    "fetch() is not available to a loadhost plugin: send requests with the SDK's get(url).send() " +
      '(or post, put, del, request) from loadhost.js, which the host paces, measures and grants',
  );
};

const KINDS = new Set(['retryable', 'failed', 'abort']);
const OK = Object.freeze({ tag: 'ok', val: undefined });

/** What a plugin module lacking doTask is told; `file` is its entry file (`plugin.js`). */
export function missingDoTask(file) {
  return `${file} must export a function doTask(task), e.g. \`export function doTask(task) {}\``;
}

/**
 * The innermost frame of an error's stack that is the plugin's own code, as `plugin.js:12`.
 * SpiderMonkey names a plugin's files relative to its folder (`doTask@plugin.js:12:5`): build.sh
 * stages that folder with the SDK in lib/, and the runner names each script module so. The SDK
 * (lib/…) and componentize-js's glue (an absolute path) are not the plugin's.
 */
export function pluginFrame(stack) {
  for (const line of String(stack ?? '').split('\n')) {
    const match = /@(.*):(\d+):\d+$/.exec(line);
    if (match === null) continue;
    const file = match[1];
    if (file.startsWith('lib/') || file.startsWith('/') || file.includes('://') || file === '') continue;
    return `${file}:${match[2]}`;
  }
  return undefined;
}

// Whether `e` is an Error, or looks like one: the bindings of a WIT import throw theirs from
// componentize-js's own code (its `ComponentError`, whose message is the WIT error), which is not
// always an `instanceof Error` here.
function isError(e) {
  if (e instanceof Error) return true;
  return e !== null && typeof e === 'object' && typeof e.message === 'string' && typeof e.stack === 'string';
}

// What an exception is, without its place: `TypeError: message`.
function summary(e) {
  if (!isError(e)) {
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
  const name = typeof e.name === 'string' && e.name !== '' ? e.name : 'Error';
  return message === '' ? name : `${name}: ${message}`;
}

/** One line for an exception that is no TaskError: `TypeError: message (plugin.js:12)`. */
export function describe(e) {
  const text = summary(e);
  const at = isError(e) ? pluginFrame(e.stack) : undefined;
  return at === undefined ? text : `${text} (${at})`;
}

/** The same, place first, as a load error says it: `plugin.js:12: TypeError: message`. */
export function describeAt(e, fallbackFile) {
  const at = isError(e) ? pluginFrame(e.stack) : undefined;
  return `${at ?? fallbackFile}: ${summary(e)}`;
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
export function lifecycleError(e) {
  const message = takeBadSetting();
  if (message !== null) return { tag: 'err', val: message };
  if (e === undefined) return undefined;
  return { tag: 'err', val: e instanceof TaskError ? e.message : describe(e) };
}

function isThenable(value) {
  return value !== null && typeof value === 'object' && typeof value.then === 'function';
}

function runTask(plugin, task) {
  try {
    const value = plugin.doTask(task);
    if (isThenable(value)) return value.then(taskResult, thrown);
    return taskResult(value);
  } catch (e) {
    return thrown(e);
  }
}

/**
 * The `doer` and `lifecycle` exports for the plugin module `plugin()` gives: the module itself,
 * or a promise of it while it is being loaded. A plugin that cannot be loaded throws (or rejects
 * with) a TaskError of kind `abort`, whose message every call then returns: setup and init fail
 * with it, and a task aborts the run.
 */
export function witExports(plugin) {
  const doer = {
    /** Runs one task; a returned promise (an async doTask) is awaited. */
    doTask(task) {
      let loaded;
      try {
        loaded = plugin();
      } catch (e) {
        return thrown(e);
      }
      if (isThenable(loaded)) return loaded.then((p) => runTask(p, task), thrown);
      return runTask(loaded, task);
    },
  };

  const lifecycle = {
    /** Once per run before any load; the returned string goes to every init and to teardown. */
    async setup(options) {
      let data;
      try {
        const p = await plugin();
        if (typeof p.setup !== 'function') return '';
        data = await p.setup(options);
      } catch (e) {
        return lifecycleError(e);
      }
      return lifecycleError(undefined) ?? (data === undefined || data === null ? '' : String(data));
    },
    /** Once per worker (instance), before its first task. */
    async init(workerId, setupData) {
      try {
        const p = await plugin();
        if (typeof p.init !== 'function') return undefined;
        await p.init(workerId, setupData);
      } catch (e) {
        return lifecycleError(e);
      }
      return lifecycleError(undefined);
    },
    /** Once per run, after the load. */
    async teardown(setupData) {
      try {
        const p = await plugin();
        if (typeof p.teardown !== 'function') return undefined;
        await p.teardown(setupData);
      } catch (e) {
        return lifecycleError(e);
      }
      return lifecycleError(undefined);
    },
  };

  return { doer, lifecycle };
}
