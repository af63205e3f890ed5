// The script's folder, as the host grants it: preopened read-only at /script (and nothing else), read
// through wasi:filesystem. (StarlingMonkey's own file access goes through wasi-libc, whose table of
// preopened folders is the build's, snapshotted with the engine: it does not see /script.)

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

/** Where the host mounts the script's folder. */
export const SCRIPT_FOLDER = '/script';

const DISPOSE = Symbol.dispose ?? Symbol.for('dispose');
const decoder = new TextDecoder('utf-8', { fatal: true });
// Read in blocks of this many bytes (a file's size is a hint: it may change while it is read).
const BLOCK = 64n * 1024n;

// What a wasi:filesystem error code means for a file a script imports.
const WHY = {
  'no-entry': "there is no such file in the script's folder",
  'not-permitted': 'the sandbox refused it',
  access: 'the sandbox refused it',
  'is-directory': 'it is a folder',
  'name-too-long': 'the name is too long',
  loop: 'it is a loop of symbolic links',
};

let folder;

// The descriptor of the granted folder, looked up once per instance.
function scriptFolder() {
  if (folder === undefined) {
    folder = getDirectories().find(([, path]) => path === SCRIPT_FOLDER)?.[0] ?? null;
  }
  if (folder === null) {
    throw new Error(`the host granted no folder at ${SCRIPT_FOLDER} (loadhost run FILE.js grants the script's own folder)`);
  }
  return folder;
}

function why(e) {
  const code = e !== null && typeof e === 'object' ? e.payload : undefined;
  if (typeof code === 'string') return WHY[code] ?? code;
  return String(e?.message ?? e);
}

/** The text of the file at `path` in the script's folder; throws an Error saying why it cannot. */
export function readScriptFile(path) {
  const all = readScriptBytes(path);
  try {
    return decoder.decode(all);
  } catch {
    throw new Error('it is not UTF-8 text');
  }
}

/** The bytes of the file at `path` in the script's folder; throws an Error saying why it cannot. */
export function readScriptBytes(path) {
  let file;
  try {
    file = scriptFolder().openAt({ symlinkFollow: true }, path, {}, { read: true });
  } catch (e) {
    throw new Error(why(e));
  }
  try {
    const chunks = [];
    let size = 0;
    for (;;) {
      const [bytes, end] = file.read(BLOCK, BigInt(size));
      if (bytes.length > 0) {
        chunks.push(bytes);
        size += bytes.length;
      }
      if (end || bytes.length === 0) break;
    }
    const all = new Uint8Array(size);
    let at = 0;
    for (const chunk of chunks) {
      all.set(chunk, at);
      at += chunk.length;
    }
    return all;
  } catch (e) {
    if (e !== null && typeof e === 'object' && typeof e.payload === 'string') throw new Error(why(e));
    throw e;
  } finally {
    if (typeof file[DISPOSE] === 'function') file[DISPOSE]();
  }
}
