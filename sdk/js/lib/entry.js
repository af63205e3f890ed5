// The module build.sh componentizes: it adapts the plugin's plain functions to the WIT exports of
// `loadhost:plugin/doer` and `loadhost:plugin/lifecycle`. build.sh stages the plugin's folder so
// that its `plugin.js` sits one level above this file.
//
// Like the Rust SDK, every JS plugin exports the lifecycle interface; a plugin without `setup`,
// `init` or `teardown` gets no-op ones (the host then calls them at a negligible cost).

import * as plugin from '../plugin.js';
import { TaskError } from './loadhost.js';

if (typeof plugin.doTask !== 'function') {
  throw new Error('plugin.js must export a function doTask(task), e.g. `export function doTask(task) {}`');
}

const KINDS = new Set(['retryable', 'failed', 'abort']);
const OK = Object.freeze({ tag: 'ok', val: undefined });

// A thrown or returned value as the WIT `task-error`. An exception that is not a TaskError (a bug,
// a failed JSON.parse, …) becomes `failed` with its message: the instance is still sound, so unlike
// a trap there is no need to replace it.
function taskError(e) {
  if (e instanceof TaskError) return { tag: e.kind, val: e.message };
  if (e !== null && typeof e === 'object' && KINDS.has(e.tag)) return { tag: e.tag, val: String(e.val) };
  return { tag: 'failed', val: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
}

// doTask's outcome as the WIT result: undefined passes, a returned TaskError fails the task.
function taskResult(value) {
  return value instanceof TaskError ? { tag: 'err', val: taskError(value) } : OK;
}

// A lifecycle function's exception as the WIT `result<_, string>` error.
function lifecycleError(e) {
  return { tag: 'err', val: e instanceof Error ? e.message : String(e) };
}

/** The `loadhost:plugin/doer` export. */
export const doer = {
  /** Runs one task; a returned promise (an async doTask) is awaited. */
  doTask(task) {
    try {
      const value = plugin.doTask(task);
      if (value !== null && typeof value === 'object' && typeof value.then === 'function') {
        return value.then(taskResult, (e) => ({ tag: 'err', val: taskError(e) }));
      }
      return taskResult(value);
    } catch (e) {
      return { tag: 'err', val: taskError(e) };
    }
  },
};

/** The `loadhost:plugin/lifecycle` export, with no-op defaults. */
export const lifecycle = {
  /** Once per run before any load; the returned string goes to every init and to teardown. */
  async setup(options) {
    if (typeof plugin.setup !== 'function') return '';
    try {
      const data = await plugin.setup(options);
      return data === undefined || data === null ? '' : String(data);
    } catch (e) {
      return lifecycleError(e);
    }
  },
  /** Once per worker (instance), before its first task. */
  async init(workerId, setupData) {
    if (typeof plugin.init !== 'function') return undefined;
    try {
      await plugin.init(workerId, setupData);
      return undefined;
    } catch (e) {
      return lifecycleError(e);
    }
  },
  /** Once per run, after the load. */
  async teardown(setupData) {
    if (typeof plugin.teardown !== 'function') return undefined;
    try {
      await plugin.teardown(setupData);
      return undefined;
    } catch (e) {
      return lifecycleError(e);
    }
  },
};
