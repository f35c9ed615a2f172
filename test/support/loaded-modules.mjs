// Preloaded with `node --import` (NODE_OPTIONS) in a service under test: appends the path of every
// module file loaded through the ESM loader to the file LOADED_MODULES_FILE names, one a line.
import { register } from 'node:module';

register(new URL('./loaded-modules-hooks.mjs', import.meta.url), {
  data: { file: process.env.LOADED_MODULES_FILE },
});
