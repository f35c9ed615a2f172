import { ValidationFailedError } from '../common/app-error.js';

export const noSettingsGiven = (): ValidationFailedError =>
  new ValidationFailedError([{ path: 'log_level', message: 'give at least one setting to change' }]);
