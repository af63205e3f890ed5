// A module resolution hook: every `loadhost:` or `wasi:` specifier is fakes.mjs, which exports
// what each of those interfaces does (the names do not clash).
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('loadhost:') || specifier.startsWith('wasi:')) {
    return { url: new URL('./fakes.mjs', import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
