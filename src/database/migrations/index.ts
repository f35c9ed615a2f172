import { Settings1764000000000 } from './1764000000000-settings.js';

/** Every migration, oldest first. ESM has no directory globbing, so each is listed here. */
export const MIGRATIONS = [Settings1764000000000];
