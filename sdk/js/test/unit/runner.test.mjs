// Unit tests of the script runner's module loading (runner/transform.js, runner/loader.js) on
// Node.js, with the script's folder in memory; the component path is proved by
// tests/e2e/runner_js.rs. acorn is the toolchain's, which test.sh names in ACORN:
//
//   ACORN=…/node_modules/acorn/dist/acorn.mjs node runner.test.mjs

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { ScriptLoader } from '../../runner/loader.js';
import { transform } from '../../runner/transform.js';

const { parse } = await import(pathToFileURL(process.env.ACORN ?? 'acorn.mjs').href);

const SDK = { 'loadhost.js': Object.freeze({ check: () => true, counter() {} }) };
const BUILTINS = { 'wasi:cli/environment@0.2.6': Object.freeze({ getEnvironment: () => [] }) };

// The entry `files[entry]` loaded with the other `files` as its folder.
function load(files, entry = 'journey.js') {
  const read = (path) => {
    if (!Object.hasOwn(files, path)) throw new Error("there is no such file in the script's folder");
    return files[path];
  };
  return new ScriptLoader({ entry, read, parse, sdk: SDK, builtins: BUILTINS }).load();
}

async function refused(files, message) {
  await assert.rejects(load(files), (e) => {
    if (message instanceof RegExp) assert.match(e.message, message);
    else assert.equal(e.message, message);
    return true;
  });
}

describe('transform', () => {
  test('every line of the source stays on its line', () => {
    const source = [
      "import { check } from './lib/loadhost.js';",
      'import {',
      '  step,',
      "} from './helpers.js';",
      'export const a = 1,',
      '  b = 2;',
      'export default function () {',
      '  return a;',
      '}',
      'export { a as c };',
      'const marker = "line 11";',
      '',
    ].join('\n');
    const { code } = transform(source, 'journey.js', parse);
    const lines = code.split('\n');
    assert.equal(lines.length, source.split('\n').length + 2);
    assert.match(lines[4], /^const a = 1,$/);
    assert.equal(lines[5], '  b = 2;');
    assert.match(lines[6], /= function \(\) \{$/);
    assert.equal(lines[10], 'const marker = "line 11";');
    assert.equal(lines.at(-1), '//# sourceURL=journey.js');
  });

  test('a syntax error names the line, the column and the token', () => {
    assert.throws(() => transform('export function doTask() {\n  f(1));\n}\n', 'journey.js', parse),
      { name: 'ScriptError', message: "journey.js:2:7: SyntaxError: Unexpected token ')'" });
  });

  test('a hashbang line is dropped, not its line break', () => {
    const { code } = transform('#!/usr/bin/env loadhost\nexport const x = 1;\n', 'j.js', parse);
    assert.equal(code.split('\n')[1], 'const x = 1;');
  });
});

describe('loader', () => {
  test('every import and export form', async () => {
    const ns = await load({
      'journey.js': `import def, { a as b, "c d" as cd } from './h.js';
import * as h from './h.js';
import { check } from './lib/loadhost.js';
import * as environment from 'wasi:cli/environment@0.2.6';
import data from './sub/data.json' with { type: 'json' };
import './side.js';
export const { x, y: [z] } = { x: 1, y: [2] };
export let count = 0;
export function doTask() { count += 1; return [def, b, cd, h.a, data.k, check(), typeof environment.getEnvironment]; }
export class Journey {}
export default 42
export { b as bee, doTask as "do task" };
export * from './h.js';
export * as helpers from './h.js';
export { a as aa } from './h.js';
export const url = import.meta.url;
export const later = (await import('./sub/late.js')).late;
`,
      'h.js': "export default 'D'; export const a = 'A'; const cd = 'CD'; export { cd as 'c d' };",
      'side.js': 'globalThis.sideEffect = (globalThis.sideEffect ?? 0) + 1;',
      'sub/data.json': '{ "k": 3 }',
      'sub/late.js': "import { a } from '../h.js'; export const late = a + '!';",
    });
    assert.deepEqual(ns.doTask(), ['D', 'A', 'CD', 'A', 3, true, 'function']);
    assert.equal(ns.count, 1, 'an export is live');
    assert.deepEqual([ns.x, ns.z, ns.default, ns.bee, ns['do task'], ns.aa], [1, 2, 42, 'A', ns.doTask, 'A']);
    assert.equal(typeof ns.Journey, 'function');
    assert.equal(ns.a, 'A', 'export * passes names on');
    assert.equal(ns.helpers.a, 'A');
    assert.equal(ns.url, 'file:///script/journey.js');
    assert.equal(ns.later, 'A!');
    assert.equal(globalThis.sideEffect, 1);
    assert.equal(Object.prototype.toString.call(ns), '[object Module]');
  });

  test('each module runs once, after the modules it imports', async () => {
    const order = [];
    globalThis.order = order;
    await load({
      'journey.js': "import './a.js'; import './b.js'; order.push('journey'); export function doTask() {}",
      'a.js': "import './c.js'; order.push('a');",
      'b.js': "import './c.js'; order.push('b');",
      'c.js': "order.push('c');",
    });
    assert.deepEqual(order, ['c', 'a', 'b', 'journey']);
  });

  test('an imported binding is the value when the importer runs; a namespace is live', async () => {
    const ns = await load({
      'journey.js': "import { n, bump } from './n.js'; import * as m from './n.js';\n"
        + 'export function doTask() { bump(); return [n, m.n]; }',
      'n.js': 'export let n = 0; export function bump() { n += 1; }',
    });
    assert.deepEqual(ns.doTask(), [0, 1]);
  });

  test('what cannot be loaded says where and why', async () => {
    await refused({}, "journey.js: cannot read it: there is no such file in the script's folder");
    await refused({ 'journey.js': "\nimport { step } from './helper.js';" },
      "journey.js:2: cannot import './helper.js' (helper.js): there is no such file in the script's folder");
    await refused({ 'journey.js': "import { q } from './h.js';", 'h.js': 'export const a = 1;' },
      "journey.js:1: './h.js' has no export named 'q' (it has a)");
    await refused({ 'journey.js': "import '../outside.js';" },
      "journey.js:1: cannot import '../outside.js': it is outside the script's folder, the only one a script may read");
    await refused({ 'journey.js': "import 'lodash';" },
      "journey.js:1: cannot import 'lodash': a script has no packages: copy an ES-module build into the script's folder and import it by a relative path ('./lodash.js')");
    await refused({ 'journey.js': "import 'k6/browser';" },
      /^journey\.js:1: cannot import 'k6\/browser': loadhost runs k6 scripts with its own k6 modules, .*this one is not among them/);
    await refused({ 'journey.js': "import 'k6/x/kafka';" },
      /cannot import 'k6\/x\/kafka': .*k6 extensions \(Go code\) cannot run in its sandbox/);
    await refused({ 'journey.js': "import { randomItem } from 'https://example.invalid/k6-utils.js';" },
      "journey.js:1: cannot import 'https://example.invalid/k6-utils.js': a remote module: a script fetches nothing at run time; save the module in the script's folder and import it by a relative path ('./name.js')");
    await refused({ 'journey.js': "import '/etc/x.js';" },
      "journey.js:1: cannot import '/etc/x.js': import a file of the script's folder by a relative path ('./name.js')");
    await refused({ 'journey.js': "import 'wasi:filesystem/preopens@0.2.6';" },
      "journey.js:1: cannot import 'wasi:filesystem/preopens@0.2.6': the runner's interfaces are wasi:cli/environment@0.2.6");
    await refused({ 'journey.js': "import './lib/mine.js';" },
      "journey.js:1: cannot import './lib/mine.js': lib/ is the SDK's, which has loadhost.js");
    await refused({ 'journey.js': "import d from './d.json';", 'd.json': '{}' },
      "journey.js:1: cannot import './d.json': a JSON module is imported with { type: 'json' }");
    await refused({ 'journey.js': "import d from './d.json' with { type: 'json' };", 'd.json': '{' },
      /^d\.json: SyntaxError: ./);
    await refused({ 'journey.js': "import './a.js';", 'a.js': "import './journey.js';" },
      "a.js:1: cannot import './journey.js' (journey.js): an import cycle (journey.js → a.js → journey.js), which the runner does not load");
    await refused({ 'journey.js': "import './a.js';", 'a.js': '\nconst x = ;' }, "a.js:2:11: SyntaxError: Unexpected token ';'");
  });

  test('the SDK is lib/ next to the entry script, whatever its folder holds', async () => {
    const ns = await load({
      'sub/app.js': "import { check } from './lib/loadhost.js'; import { x } from './util/x.js'; export const ok = [check(), x];",
      'sub/util/x.js': "import { check } from '../lib/loadhost.js'; export const x = check();",
      'sub/lib/loadhost.js': 'export const check = () => false;',
    }, 'sub/app.js');
    assert.deepEqual(ns.ok, [true, true]);
  });
});
