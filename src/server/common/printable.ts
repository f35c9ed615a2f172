/** Text PostgreSQL accepts: no NUL, no other control characters but tab. */
// eslint-disable-next-line no-control-regex -- removing control characters is the point
export const printable = (text: string): string => text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');
