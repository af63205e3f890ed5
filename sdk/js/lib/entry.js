// The module build.sh componentizes: the WIT exports (lib/adapter.js) of the plugin built into the
// component. build.sh stages the plugin's folder so that its `plugin.js` sits one level above this
// file. (The script runner, runner/runner.js, is the same adapter with the plugin loaded at run
// time instead.)

import * as plugin from '../plugin.js';
import { missingDoTask, witExports } from './adapter.js';

// At build time: the build fails with this message.
if (typeof plugin.doTask !== 'function') throw new Error(missingDoTask('plugin.js'));

const wit = witExports(() => plugin);

/** The `loadhost:plugin/doer` export. */
export const doer = wit.doer;

/** The `loadhost:plugin/lifecycle` export, with no-op defaults. */
export const lifecycle = wit.lifecycle;
