// An ES module's source as a script the runner can evaluate. StarlingMonkey evaluates modules only
// through its own loader, which reads files with wasi-libc's table of preopened folders: that
// table is the build's (snapshotted), so at run time it names folders the instance does not have,
// and the loader cannot map `./lib/loadhost.js` to the SDK the runner carries. So the runner reads
// a module's source itself and turns it into an async function, with its `import` and `export`
// statements rewritten by the syntax tree acorn parses:
//
//   (async function ($loadhost) {"use strict"; $loadhost.exports({ doTask: () => doTask });
//   const get = $loadhost.module(0)["get"]; <the source, its import/export keywords blanked>
//   })
//   //# sourceURL=journey.js
//
// Everything added goes on the first line and every removed statement leaves its line breaks, so
// a line of the result is the same line of the source; `sourceURL` makes SpiderMonkey name the
// file so in stacks and errors (`doTask@journey.js:12:5`).
//
// Supported: every form of `import` (default, named, `* as`, bare `import './x.js'`, `with {
// type: 'json' }`) and `export` (declarations, lists, `default`, `export … from`, `export *`), plus
// `import(…)` and `import.meta` anywhere. Different from an engine's modules, and documented:
// an imported binding is the exporter's value when the importer starts (not a live binding; a
// namespace, `import * as m`, is live), and import cycles are refused (see loader.js).

/** Why a module cannot be loaded, in one line that starts with the place (`journey.js:3: …`). */
export class ScriptError extends Error {
  /** An error with the whole `message`. */
  constructor(message) {
    super(message);
    this.name = 'ScriptError';
  }

  /** `file:line: what`, or `file: what` when the line is unknown. */
  static at(file, line, what) {
    return new ScriptError(line === undefined ? `${file}: ${what}` : `${file}:${line}: ${what}`);
  }
}

/** The parameter through which a transformed module reaches the loader. */
const API = '$loadhost';
/** The local name of an anonymous `export default` value. */
const DEFAULT_LOCAL = '$loadhost$default';

// The name an import or export specifier gives: an identifier, or a string (`export { x as "a b" }`).
function specifierName(node) {
  return node.type === 'Identifier' ? node.name : String(node.value);
}

// The names a declaration binds: `const { a, b: [c] } = …` binds a and c.
function boundNames(node, into = []) {
  switch (node?.type) {
    case 'Identifier':
      into.push(node.name);
      break;
    case 'VariableDeclaration':
      for (const d of node.declarations) boundNames(d.id, into);
      break;
    case 'FunctionDeclaration':
    case 'ClassDeclaration':
      if (node.id) into.push(node.id.name);
      break;
    case 'ObjectPattern':
      for (const p of node.properties) boundNames(p.type === 'RestElement' ? p.argument : p.value, into);
      break;
    case 'ArrayPattern':
      for (const e of node.elements) if (e !== null) boundNames(e, into);
      break;
    case 'RestElement':
      boundNames(node.argument, into);
      break;
    case 'AssignmentPattern':
      boundNames(node.left, into);
      break;
    default:
      break;
  }
  return into;
}

// The line breaks of `text`, and nothing else (JavaScript counts \r\n, \n, \r, U+2028 and U+2029).
function lineBreaks(text) {
  return text.replace(/[^\n\r\u2028\u2029]/g, '');
}

// `with { type: 'json' }` → 'json'; none → 'js'; anything else is refused.
function moduleType(node, file, line) {
  const attributes = node.attributes ?? [];
  let type = 'js';
  for (const a of attributes) {
    const key = specifierName(a.key);
    if (key !== 'type' || a.value.value !== 'json') {
      throw ScriptError.at(file, line,
        `unsupported import attribute ${key}: '${a.value.value}' (the runner knows \`with { type: 'json' }\`)`);
    }
    type = 'json';
  }
  return type;
}

// A function giving the line (from 1) of an offset in `text`. Offsets are asked for in increasing
// order, so it counts on from the last one. (acorn's `locations` would give every node its line,
// at the cost of two objects more per node, in each instance.)
function lineCounter(text) {
  const breaks = /\r\n?|[\n\u2028\u2029]/g;
  let at = 0;
  let line = 1;
  return (offset) => {
    if (offset < at) {
      at = 0;
      line = 1;
    }
    breaks.lastIndex = at;
    for (let m = breaks.exec(text); m !== null && m.index < offset; m = breaks.exec(text)) line += 1;
    at = offset;
    return line;
  };
}

// Every node of the tree under `node` for which `visit` is called (the import expressions and
// `import.meta`s of a module), in source order.
function walk(node, visit) {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const child of node) walk(child, visit);
    return;
  }
  if (typeof node.type !== 'string') return;
  visit(node);
  for (const key in node) {
    walk(node[key], visit);
  }
}

/**
 * The module `source` of `file` (its path in the script's folder) as `{ code, requests, imports,
 * reexports, stars }`: `code` evaluates to the async function above; `requests` are the modules it
 * needs before it runs, in order, as `{ specifier, line, type }`; `imports` the names it takes
 * from them (`{ request, name, line }`, name '*' for a namespace) for the loader to check;
 * `reexports` (`{ request, name, as }`) and `stars` (request indexes of `export *`) what it passes
 * on from them. `parse` is acorn's. A syntax error throws a ScriptError naming the line.
 */
export function transform(source, file, parse) {
  // A hashbang is only allowed at the very start of a source: blank it, keeping its line.
  const text = source.startsWith('#!') ? source.replace(/^#![^\n\r\u2028\u2029]*/, '') : source;
  let ast;
  try {
    ast = parse(text, { ecmaVersion: 'latest', sourceType: 'module' });
  } catch (e) {
    if (e instanceof SyntaxError && e.loc) {
      // acorn says `Unexpected token (6:24)`: the place goes first, with the token itself.
      let message = e.message.replace(/ \(\d+:\d+\)$/, '');
      const token = /^(?:[\w$]+|\S)/.exec(text.slice(e.pos))?.[0];
      if (message === 'Unexpected token' && token !== undefined) message += ` '${token}'`;
      throw ScriptError.at(file, `${e.loc.line}:${e.loc.column + 1}`, `SyntaxError: ${message}`);
    }
    throw e;
  }

  const lineOf = lineCounter(text);
  const edits = []; // [start, end, replacement]
  const requests = [];
  const imports = [];
  const reexports = [];
  const stars = [];
  const prefix = []; // statements for the first line
  const exported = []; // [name, local]

  const blank = (node) => edits.push([node.start, node.end, lineBreaks(text.slice(node.start, node.end))]);
  const request = (node) => {
    const line = lineOf(node.start);
    requests.push({ specifier: String(node.source.value), line, type: moduleType(node, file, line) });
    return requests.length - 1;
  };
  // Removes `export` (or `export default`) before a declaration, keeping its line breaks.
  const dropKeyword = (node, replacement = '') =>
    edits.push([node.start, node.declaration.start, replacement + lineBreaks(text.slice(node.start, node.declaration.start))]);

  for (const node of ast.body) {
    switch (node.type) {
      case 'ImportDeclaration': {
        const r = request(node);
        const line = lineOf(node.start);
        for (const s of node.specifiers) {
          const name = s.type === 'ImportDefaultSpecifier' ? 'default'
            : s.type === 'ImportNamespaceSpecifier' ? '*' : specifierName(s.imported);
          imports.push({ request: r, name, line });
          const value = name === '*' ? `${API}.module(${r})` : `${API}.module(${r})[${JSON.stringify(name)}]`;
          prefix.push(`const ${s.local.name} = ${value};`);
        }
        blank(node);
        break;
      }
      case 'ExportNamedDeclaration':
        if (node.declaration) {
          for (const name of boundNames(node.declaration)) exported.push([name, name]);
          dropKeyword(node);
        } else if (node.source) {
          const r = request(node);
          for (const s of node.specifiers) {
            const name = specifierName(s.local);
            imports.push({ request: r, name, line: lineOf(node.start) });
            reexports.push({ request: r, name, as: specifierName(s.exported) });
          }
          blank(node);
        } else {
          for (const s of node.specifiers) exported.push([specifierName(s.exported), s.local.name]);
          blank(node);
        }
        break;
      case 'ExportDefaultDeclaration': {
        const d = node.declaration;
        if ((d.type === 'FunctionDeclaration' || d.type === 'ClassDeclaration') && d.id) {
          exported.push(['default', d.id.name]);
          dropKeyword(node);
        } else {
          exported.push(['default', DEFAULT_LOCAL]);
          dropKeyword(node, `const ${DEFAULT_LOCAL} = `);
          // A declaration has no `;` of its own, and an expression may rely on one being inserted.
          if (text[node.end - 1] !== ';') edits.push([node.end, node.end, ';']);
        }
        break;
      }
      case 'ExportAllDeclaration': {
        const r = request(node);
        if (node.exported) {
          imports.push({ request: r, name: '*', line: lineOf(node.start) });
          reexports.push({ request: r, name: '*', as: specifierName(node.exported) });
        } else {
          stars.push(r);
        }
        blank(node);
        break;
      }
      default:
        break;
    }
  }

  // `import(…)` and `import.meta` may be anywhere. Most modules have neither: walk the tree only
  // when the word `import` occurs more often than the import declarations (a comment will do).
  const declarations = ast.body.filter((node) => node.type === 'ImportDeclaration').length;
  if ((text.match(/\bimport\b/g)?.length ?? 0) > declarations) {
    walk(ast, (node) => {
      if (node.type === 'ImportExpression') {
        edits.push([node.start, node.start + 'import'.length, `${API}.import`]);
      } else if (node.type === 'MetaProperty' && node.meta.name === 'import') {
        edits.push([node.start, node.end, `${API}.meta`]);
      }
    });
  }

  edits.sort((a, b) => a[0] - b[0]);
  let body = '';
  let at = 0;
  for (const [start, end, replacement] of edits) {
    body += text.slice(at, start) + replacement;
    at = end;
  }
  body += text.slice(at);

  // The exports as getters over the module's own bindings, so an importer sees their current
  // values (a binding read before its declaration ran throws, as in a module).
  const getters = exported.map(([name, local]) => `${JSON.stringify(name)}: () => ${local}`).join(', ');
  const head = `(async function (${API}) {"use strict"; ${API}.exports({${getters}}); ${prefix.join(' ')} `;
  // sourceURL is a comment, so a newline in the path would end it: the loader's paths have none.
  const code = `${head}${body}\n})\n//# sourceURL=${file}`;
  return { code, requests, imports, reexports, stars };
}
