import { ValidateIf, type ValidationOptions } from 'class-validator';

/**
 * A field a request may leave out. class-validator's `IsOptional` also lets `null` through, with no
 * other check run on it, so `{"log_level": null}` reached the service as a value (and was stored).
 * Here only an absent field (undefined) skips the checks; `null` fails them like any other wrong type.
 */
export const Optional = (options?: ValidationOptions): PropertyDecorator =>
  ValidateIf((_object, value) => value !== undefined, options);
