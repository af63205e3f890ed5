// Loads a script and the modules it imports, as ES modules, from the script's folder (the one folder
// the host grants, read-only). Each module is read, rewritten by transform.js and evaluated once per
// instance, after the modules it imports, in the order it imports them.
//
// What a specifier names:
// - `./x.js`, `../x.js`: a file of the script's folder (never above it); `.json` with
//   `with { type: 'json' }` is a JSON module (its `default` is the parsed value);
// - `lib/NAME.js` next to the entry script (`./lib/loadhost.js`): the SDK the runner carries, as in
//   a plugin built by build.sh, whatever that folder holds;
// - an interface of the runner's world (`wasi:cli/environment@0.2.6`, `loadhost:plugin/http@0.1.0`,
//   …): its bindings, as a built plugin imports them.
// Anything else (a package name, an absolute path) is refused with a message saying what to do.
//
// The loader has no WASI of its own: `read` (files.js at run time, a fake in the unit tests)
// gives a file's text, and `parse` is acorn's.

import { ScriptError, transform } from './transform.js';

// `a/./b/../c.js` → `a/c.js`; undefined when the path climbs above the folder.
function normalize(path) {
  const parts = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part !== '..') parts.push(part);
    else if (parts.pop() === undefined) return undefined;
  }
  return parts.join('/');
}

// The folder part of a path, with its slash: `sub/app.js` → `sub/`, `app.js` → ``.
function folderOf(path) {
  return path.slice(0, path.lastIndexOf('/') + 1);
}

// A module namespace for a script module or a JSON module, filled by `define`.
function namespace() {
  return Object.create(null, { [Symbol.toStringTag]: { value: 'Module' } });
}

function define(ns, name, get) {
  Object.defineProperty(ns, name, { get, enumerable: true, configurable: true });
}

/** The modules of one script, loaded on first use (see the top of this file). */
export class ScriptLoader {
  #entry;
  #sdkFolder;
  #read;
  #parse;
  #sdk;
  #builtins;
  #remote;
  // path → { promise }: every module once, a failed one failing every importer the same way.
  #records = new Map();

  /**
   * A loader of the script `entry` (its path in the folder), reading files with `read(path)` (which
   * throws an Error saying why it cannot), parsing with `parse`; `sdk` maps the SDK's file names
   * (`loadhost.js`) to their namespaces, `builtins` the world's interfaces to their bindings;
   * `remote(url)` is the namespace of a remote module the runner ships a copy of, or undefined.
   */
  constructor({ entry, read, parse, sdk, builtins, remote = () => undefined }) {
    const path = normalize(String(entry));
    if (path === undefined || path === '') {
      throw ScriptError.at(String(entry), undefined, "the script must be a file of the script's folder");
    }
    this.#entry = path;
    this.#sdkFolder = `${folderOf(path)}lib/`;
    this.#read = read;
    this.#parse = parse;
    this.#sdk = sdk;
    this.#builtins = builtins;
    this.#remote = remote;
  }

  /** The entry script's path in its folder, as messages name it. */
  get entry() {
    return this.#entry;
  }

  /** The entry script's namespace, once it and everything it imports has run. */
  async load() {
    return this.#module(this.#entry, [], 'js', () => `${this.#entry}: cannot read it`);
  }

  // What `specifier` in module `from` names: { ns } for the SDK or a builtin, { path } for a file.
  #resolve(specifier, from, line) {
    if (Object.hasOwn(this.#builtins, specifier)) return { ns: this.#builtins[specifier] };
    const cannot = (why) => ScriptError.at(from, line, `cannot import '${specifier}': ${why}`);
    if (specifier.startsWith('./') || specifier.startsWith('../')) {
      const path = normalize(folderOf(from) + specifier);
      if (path === undefined) throw cannot("it is outside the script's folder, the only one a script may read");
      if (path.startsWith(this.#sdkFolder) && !path.slice(this.#sdkFolder.length).includes('/')) {
        const name = path.slice(this.#sdkFolder.length);
        if (Object.hasOwn(this.#sdk, name)) return { ns: this.#sdk[name] };
        throw cannot(`${this.#sdkFolder} is the SDK's, which has ${Object.keys(this.#sdk).join(', ')}`);
      }
      return { path };
    }
    if (specifier.startsWith('/')) throw cannot("import a file of the script's folder by a relative path ('./name.js')");
    if (specifier === 'k6' || specifier.startsWith('k6/')) {
      const k6 = Object.keys(this.#builtins).filter((name) => name === 'k6' || name.startsWith('k6/'));
      throw cannot(`loadhost runs k6 scripts with its own k6 modules, ${k6.join(', ')}; `
        + `${specifier.startsWith('k6/x/') ? 'k6 extensions (Go code) cannot run in its sandbox' : 'this one is not among them'}`
        + ' (docs/migrating.md)');
    }
    if (/^https?:\/\//.test(specifier)) {
      // A remote module the runner ships a copy of (k6's jslib: jslib.js).
      const shipped = this.#remote(specifier);
      if (shipped !== undefined) return { ns: shipped };
      throw cannot('a remote module: a script fetches nothing at run time; save the module in the script\'s '
        + "folder and import it by a relative path ('./name.js')");
    }
    if (/^[a-z][a-z0-9-]*:/.test(specifier)) {
      throw cannot(`the runner's interfaces are ${Object.keys(this.#builtins).join(', ')}`);
    }
    throw cannot("a script has no packages: copy an ES-module build into the script's folder and import it "
      + `by a relative path ('./${specifier.split('/').pop()}.js')`);
  }

  // The namespace of the file at `path`, loading it unless it is loaded or loading; `stack` is the
  // chain of modules whose imports led here (a cycle is refused), `cannot()` the message's start
  // should the file be unreadable.
  #module(path, stack, type, cannot) {
    if (stack.includes(path)) {
      const cycle = [...stack.slice(stack.indexOf(path)), path].join(' → ');
      throw new ScriptError(`${cannot()}: an import cycle (${cycle}), which the runner does not load`);
    }
    let record = this.#records.get(path);
    if (record === undefined) {
      let text;
      try {
        text = this.#read(path);
      } catch (e) {
        throw new ScriptError(`${cannot()}: ${e.message}`);
      }
      record = { promise: type === 'json' ? this.#json(path, text) : this.#evaluate(path, text, [...stack, path]) };
      this.#records.set(path, record);
    }
    return record.promise;
  }

  async #json(path, text) {
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw ScriptError.at(path, undefined, `SyntaxError: ${e.message}`);
    }
    const ns = namespace();
    define(ns, 'default', () => value);
    return Object.freeze(ns);
  }

  async #evaluate(path, text, stack) {
    const t = transform(text, path, this.#parse);
    const modules = [];
    for (const { specifier, line, type } of t.requests) {
      const target = this.#resolve(specifier, path, line);
      if (type === 'js' && specifier.endsWith('.json')) {
        throw ScriptError.at(path, line, `cannot import '${specifier}': a JSON module is imported with { type: 'json' }`);
      }
      if (type === 'json' && target.path === undefined) {
        throw ScriptError.at(path, line, `cannot import '${specifier}' as JSON: it is not a file`);
      }
      const cannot = () => `${path}:${line}: cannot import '${specifier}' (${target.path})`;
      modules.push(target.ns ?? await this.#module(target.path, stack, type, cannot));
    }
    for (const { request, name, line } of t.imports) {
      if (name !== '*' && !(name in modules[request])) {
        const has = Object.keys(modules[request]);
        throw ScriptError.at(path, line, `'${t.requests[request].specifier}' has no export named '${name}'`
          + ` (it has ${has.length === 0 ? 'none' : has.join(', ')})`);
      }
    }

    const ns = namespace();
    for (const request of t.stars) {
      for (const name of Object.keys(modules[request])) {
        if (name !== 'default' && !(name in ns)) define(ns, name, () => modules[request][name]);
      }
    }
    for (const { request, name, as } of t.reexports) {
      define(ns, as, name === '*' ? () => modules[request] : () => modules[request][name]);
    }
    const api = Object.freeze({
      // The module's own exports, defined as it starts: they win over `export *`.
      exports(getters) {
        for (const [name, get] of Object.entries(getters)) define(ns, name, get);
        Object.freeze(ns);
      },
      module: (request) => modules[request],
      import: (specifier, options) => this.#dynamicImport(specifier, options, path),
      meta: Object.freeze({ url: `file:///script/${path}` }),
    });

    let run;
    try {
      run = (0, eval)(t.code);
    } catch (e) {
      // acorn accepted what SpiderMonkey did not: its error names the line.
      throw ScriptError.at(path, e.lineNumber, `${e.name}: ${e.message}`);
    }
    await run.call(undefined, api);
    return ns;
  }

  // `import(specifier, options)` in module `from`: a promise of the namespace.
  async #dynamicImport(specifier, options, from) {
    const type = options?.with?.type === 'json' ? 'json' : 'js';
    const target = this.#resolve(String(specifier), from, undefined);
    if (target.ns !== undefined) return target.ns;
    return this.#module(target.path, [], type, () => `${from}: cannot import '${specifier}' (${target.path})`);
  }
}
