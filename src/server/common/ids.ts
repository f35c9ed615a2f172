const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a path or message id can be a row id at all; anything else is "not found" without a query. */
export const isUuid = (value: string): boolean => UUID.test(value);
