import { ConflictError, ValidationFailedError } from '../common/app-error.js';

export const nothingToResolve = (stackId: string) =>
  new ConflictError(`Stack ${stackId} has no drift that is not ignored; there is nothing to resolve.`);
export const unknownResources = (names: { index: number; name: string }[]) =>
  new ValidationFailedError(
    names.map(({ index, name }) => ({
      path: `resources.${index}`,
      category: 'invalid_value',
      message: `${name} is neither a service of the stack nor a drifted resource`,
    })),
    'Some resources are not known in this stack.',
  );
