// Every task passes at once, so a run measures the host's own cost per task plus the JS engine's
// cost of a call. The JavaScript twin of plugins/noop.

export function doTask(_task) {}
