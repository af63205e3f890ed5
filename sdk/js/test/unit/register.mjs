// Loaded with `node --import` before the unit tests: resolves the component imports of the SDK's
// modules (`loadhost:plugin/…`, `wasi:…`) to the fakes in fakes.mjs.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
