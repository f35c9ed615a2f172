// Values of rows read with plain statements (DataSource#query), as TypeORM's entities would hold
// them: the pg driver and the embedded database may give a jsonb or a timestamptz as text.

/** A jsonb value, parsed when it arrives as text. */
export const jsonValue = <T>(v: T | string): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);

/** A timestamptz value as a Date. */
export const dateValue = (v: Date | string): Date => (v instanceof Date ? v : new Date(v));

/** A nullable timestamptz value as a Date or null. */
export const dateOrNull = (v: Date | string | null): Date | null => (v === null ? null : dateValue(v));
