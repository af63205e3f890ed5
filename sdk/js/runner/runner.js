// The JavaScript script runner: one component, built once by build-runner.sh, that runs any script
// `loadhost run plugin.js` names, with no toolchain on the machine. It is lib/entry.js's adapter
// (lib/adapter.js) with the plugin loaded at run time instead of at build time: on the first call
// in an instance (setup, init or doTask), it loads the script the host names in LOADHOST_SCRIPT
// (a path in the folder the host grants read-only at /script) and the modules that imports, and from
// then on behaves as a plugin build.sh built from that script.
//
// build-runner.sh stages this folder as lib/runner/ beside the SDK (lib/), so `../loadhost.js` is
// the SDK, and SpiderMonkey's frames of the runner and the SDK start with `lib/`, which
// pluginFrame leaves out: a script's own frames are named by their path in its folder.

import * as http from 'loadhost:plugin/http@0.1.0';
import * as grpcHost from 'loadhost:plugin/grpc@0.1.0';
import * as metrics from 'loadhost:plugin/metrics@0.1.0';
import * as pause from 'loadhost:plugin/pause@0.1.0';
import * as websocket from 'loadhost:plugin/websocket@0.1.0';
import * as environment from 'wasi:cli/environment@0.2.6';
import * as preopens from 'wasi:filesystem/preopens@0.2.12';
import * as filesystem from 'wasi:filesystem/types@0.2.12';
import * as loadhost from '../loadhost.js';
import * as grpc from '../grpc.js';
import * as values from '../values.js';
import * as ws from '../ws.js';
import { describeAt, lifecycleError, missingDoTask, witExports } from '../adapter.js';
import { parse } from './acorn.mjs';
import { readScriptFile } from './files.js';
import * as k6 from './k6.js';
import { k6crypto } from './k6crypto.js';
import { JSLIB, jslibName } from './jslib.js';
import { ScriptLoader } from './loader.js';
import { ScriptError, transform } from './transform.js';

/** The environment variable in which the host names the script, relative to /script. */
const SCRIPT_VARIABLE = 'LOADHOST_SCRIPT';

// What a script may import by name: the SDK's files (as `./lib/NAME`), and the interfaces of the
// runner's world, which a plugin built by build.sh may import too (plus wasi:filesystem, whose
// folder is the script's, read-only).
const SDK = { 'loadhost.js': loadhost, 'ws.js': ws, 'grpc.js': grpc, 'values.js': values };
const BUILTINS = {
  'loadhost:plugin/metrics@0.1.0': metrics,
  'loadhost:plugin/pause@0.1.0': pause,
  'loadhost:plugin/http@0.1.0': http,
  'loadhost:plugin/websocket@0.1.0': websocket,
  'loadhost:plugin/grpc@0.1.0': grpcHost,
  'wasi:cli/environment@0.2.6': environment,
  'wasi:filesystem/preopens@0.2.12': preopens,
  'wasi:filesystem/types@0.2.12': filesystem,
  // k6's modules, for a script written for k6 (k6.js).
  k6: Object.freeze({ ...k6.k6, default: k6.k6 }),
  'k6/http': k6.k6http,
  'k6/metrics': k6.k6metrics,
  'k6/execution': k6.k6execution,
  'k6/data': k6.k6data,
  'k6/encoding': k6.k6encoding,
  'k6/timers': k6.k6timers,
  'k6/crypto': k6crypto,
};

// Parse a module of common syntax while the component is built, so the snapshot holds acorn's
// functions compiled to bytecode and no instance compiles them again on its first load.
transform(`import { get, check } from './lib/loadhost.js';
import * as ws from './lib/ws.js';
export const BASE = \`http://\${'127.0.0.1'}:8080\`, re = /a+[/]b/gu;
export default class Journey extends Object { #n = 0; static of(x) { return new Journey(x?.y ?? 1); } get n() { return this.#n; } }
export async function doTask({ iteration, input }, ...rest) {
  for (const [k, v] of Object.entries({ a: 1, ...rest })) { if (k in v || !v) continue; }
  try { const r = await get(\`\${BASE}/x?i=\${iteration}\`).send(); check('ok', r.status === 200 && r.json().ok); }
  catch (e) { throw e instanceof Error ? e : new Error(String(e)); } finally { void 0; }
  label: while (false) { switch (iteration % 2n) { case 0n: break label; default: ws.connect(\`\${1 / 2}\`); } }
  return import.meta.url + (await import('./x.js')).x;
}
export { BASE as base };
export * from './y.js';
`, 'warm.js', parse);

let plugin;
let failure;
let loading;

// The entry script's module, or a promise of it while it loads; a script that cannot be loaded
// throws (or rejects with) a TaskError of kind abort, the same one on every call.
function script() {
  if (plugin !== undefined) return plugin;
  if (failure !== undefined) throw failure;
  loading ??= load().then(
    (ns) => {
      plugin = ns;
      return ns;
    },
    (e) => {
      // Whatever the script threw while loading, the run stops: setup or init fails with it.
      let message;
      if (e instanceof ScriptError || e instanceof loadhost.TaskError) message = e.message;
      else message = describeAt(e, entryName());
      failure = loadhost.abort(message);
      throw failure;
    },
  );
  return loading;
}

function entryName() {
  return loadhost.env(SCRIPT_VARIABLE) ?? SCRIPT_VARIABLE;
}

async function load() {
  const entry = loadhost.env(SCRIPT_VARIABLE);
  if (entry === undefined || entry === '') {
    throw loadhost.abort(`${SCRIPT_VARIABLE} is not set: the runner runs the script it names (loadhost run FILE.js sets it)`);
  }
  const remote = (url) => {
    const name = jslibName(url);
    return name !== undefined && Object.hasOwn(JSLIB, name) ? JSLIB[name] : undefined;
  };
  const loader = new ScriptLoader({ entry, read: readScriptFile, parse, sdk: SDK, builtins: BUILTINS, remote });
  // k6's globals (__ENV, __VU, __ITER, open) exist before the script's init code runs.
  k6.prepare();
  const ns = await loader.load();
  if (k6.isK6Script(ns)) return k6.adapt(ns);
  if (typeof ns.doTask !== 'function') throw loadhost.abort(missingDoTask(loader.entry));
  return ns;
}

const wit = witExports(script);

/** The `loadhost:plugin/doer` export. */
export const doer = wit.doer;

/**
 * The `loadhost:plugin/lifecycle` export: the script's setup, init and teardown, or no-ops. The
 * worker's id is known before the script loads (at its first call), so a k6 script's init code
 * sees its `__VU`.
 */
export const lifecycle = {
  ...wit.lifecycle,
  init(workerId, setupData) {
    k6.enterVu(workerId);
    return wit.lifecycle.init(workerId, setupData);
  },
};

/**
 * The `loadhost:plugin/summary` export: a k6 script's handleSummary, called once after the run on
 * an instance of its own; nothing (none) for any other script.
 */
export const summary = {
  async handleSummary(summaryJson) {
    let files;
    try {
      const p = await script();
      if (typeof p.handleSummary !== 'function') return { tag: 'ok', val: undefined };
      files = await p.handleSummary(summaryJson);
    } catch (e) {
      return lifecycleError(e);
    }
    return lifecycleError(undefined) ?? { tag: 'ok', val: files };
  },
};

/**
 * The `loadhost:plugin/plan` export: a k6 script's options as its init code computes them, read
 * by the host before the run when it cannot read them from the text; nothing (none) for any other
 * script.
 */
export const plan = {
  async options() {
    let options;
    try {
      const p = await script();
      options = typeof p.k6Options === 'function' ? p.k6Options() : undefined;
    } catch (e) {
      return lifecycleError(e);
    }
    return lifecycleError(undefined) ?? { tag: 'ok', val: options };
  },
};
